#!/usr/bin/env bash
# SIGINT / SIGTERM during a host-backend run (issue 9): the run stops at the next check
# between stages or steps, exits 130 (SIGINT) or 143 (SIGTERM) with a message saying so, and
# leaves no output and no temporary file. Each run is sized so that the signal lands inside
# the stage named by the progress line it waits for.
# Usage: interrupt_tests.sh BINARY MODEL_DIR
BIN=$1
MODEL=$2
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

STAGE_TIMEOUT=${STAGE_TIMEOUT:-120}  # seconds to wait for the progress line
STOP_TIMEOUT=${STOP_TIMEOUT:-60}     # seconds the run may take to stop after the signal

# interrupt NAME SIGNAL... -- STATUS WHEN -- ARGS...: starts the binary with ARGS in the
# background, waits for a progress line matching the regex WHEN (or, for WHEN "@N", N
# seconds), sends each SIGNAL (in order), and checks the exit status, the message and what
# is left on disk.
interrupt() {
  local name=$1 signals=() status line_regex
  shift
  while [[ $1 != -- ]]; do signals+=("$1"); shift; done
  status=$2 line_regex=$3
  shift 4
  new_case "$name"
  start_bin "$BIN" "$@"
  if [[ $line_regex == @* ]]; then
    sleep "${line_regex#@}"
  else
    wait_for_line "$line_regex" "/$line_regex/" "$STAGE_TIMEOUT"
  fi
  local sig
  if [[ -z $WHY ]]; then
    # One after the other with a pause: two standard signals pending at once are delivered in
    # signal-number order (SIGINT before SIGTERM), whatever order they were sent in.
    for sig in "${signals[@]}"; do kill -s "$sig" "$PID"; sleep 0.2; done
  fi
  reap_bin "$STOP_TIMEOUT" "the signal"
  local expected_message="interrupted by SIG${signals[0]}"
  # Exit 128+N also comes from a process the signal killed: the message proves it unwound by
  # itself.
  judge_bin "$name" "$status" "moss-infer-hip: $expected_message" \
    "no 'moss-infer-hip: $expected_message' message (killed by the signal instead of stopping?)" "$@"
}

denoise=(--model "$MODEL" --prompt "a red apple" --size 256x256 --steps 200 --skip-layers 2)
interrupt sigint-denoise INT -- 130 '^denoise 2/' -- "${denoise[@]}" -o out.png
interrupt sigterm-denoise TERM -- 143 '^denoise 2/' -- "${denoise[@]}" -o out.png
interrupt sigint-denoise-both-outputs INT -- 130 '^denoise 1/' -- "${denoise[@]}" -o out.png --latent-out out.npy
interrupt sigint-twice INT INT -- 130 '^denoise 1/' -- "${denoise[@]}" -o out.png
interrupt sigterm-then-sigint TERM INT -- 143 '^denoise 1/' -- "${denoise[@]}" -o out.png
# The text encoder of a 1024-token prompt and negative takes seconds on the host backend.
long=$(printf 'a photo of a fridge full of fresh vegetables, %.0s' {1..150})
interrupt sigint-text-encoder INT -- 130 '^text encoder$' \
  -- --model "$MODEL" --prompt "$long" --negative "$long" --max-seq 1024 --size 32x32 --steps 1 --skip-layers 2 -o out.png
# The decode checks for a signal before each resnet (issue 16): the run stops within one
# resnet of the signal, not at the end of the decode (which takes about 2 s here and a
# minute in the sanitized build on a loaded machine), and writes nothing.
interrupt sigterm-vae TERM -- 143 '^vae$' \
  -- --model "$MODEL" --prompt "a red apple" --size 256x256 --steps 1 --skip-layers 2 -o out.png
interrupt sigterm-quiet TERM -- 143 @2 \
  -- --model "$MODEL" --prompt "a red apple" --size 384x384 --steps 100 --skip-layers 2 --quiet -o out.png

finish
