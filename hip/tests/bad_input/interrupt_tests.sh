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
  : >"$CASE/log"
  (
    cd "$CASE" || exit 1
    ((CASE_VMEM_KB > 0)) && ulimit -v "$CASE_VMEM_KB"
    exec env MOSSINFER_BACKEND=host "$BIN" "$@"
  ) >>"$CASE/log" 2>&1 &
  local pid=$! waited=0 why=""
  [[ $line_regex == @* ]] && { sleep "${line_regex#@}"; line_regex=''; }
  until [[ -z $line_regex ]] || grep -qE -- "$line_regex" "$CASE/log"; do
    if ! kill -0 "$pid" 2>/dev/null; then why="the run ended before /$line_regex/"; break; fi
    if ((waited >= STAGE_TIMEOUT * 10)); then why="no /$line_regex/ after $STAGE_TIMEOUT s"; break; fi
    sleep 0.1
    waited=$((waited + 1))
  done
  local sig
  if [[ -z $why ]]; then
    # One after the other with a pause: two standard signals pending at once are delivered in
    # signal-number order (SIGINT before SIGTERM), whatever order they were sent in.
    for sig in "${signals[@]}"; do kill -s "$sig" "$pid"; sleep 0.2; done
  fi
  local start=$SECONDS
  while kill -0 "$pid" 2>/dev/null && ((SECONDS - start < STOP_TIMEOUT)); do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid"
    [[ -z $why ]] && why="still running $STOP_TIMEOUT s after the signal"
  fi
  wait "$pid"
  RC=$?
  OUT=$(cat "$CASE/log")
  local expected_message="interrupted by ${signals[0]}"
  [[ $expected_message == "interrupted by INT" ]] && expected_message="interrupted by SIGINT"
  [[ $expected_message == "interrupted by TERM" ]] && expected_message="interrupted by SIGTERM"
  if [[ -z $why ]]; then
    if ((RC != status)); then
      why="exit $RC, expected $status"
    elif ! grep -q "moss-infer-hip: $expected_message" <<<"$OUT"; then
      # Exit 128+N also comes from a process the signal killed: the message proves it
      # unwound by itself.
      why="no 'moss-infer-hip: $expected_message' message (killed by the signal instead of stopping?)"
    else
      why=$(run_problems "$status" "$@")
    fi
  fi
  if [[ -z $why ]]; then pass "$name"; else fail "$name" "$why" "$(tail -5 <<<"$OUT")"; fi
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
