#!/usr/bin/env bash
# Issue 48's closing measurement on a GPU machine: the time of one 1024x1024 image at CFG 1 on the
# full-size random-weight model for euler 50 steps, dpmpp_2m 20, euler_ancestral 30 and lcm 8
# (docs/samplers.md), with the denoise time and DiT calls of each. Random weights: the images
# say nothing about quality; the times are what a user pays for each choice.
# Usage: bench/h200_samplers.sh BIN_DIR OUT_DIR [MODEL_DIR]
# (SIZE=WxH and EXTRA="flags" change the size and add flags: a quick try on the tiny model.)
# The lead runs it (with carry [".carry"] from bench/make_carry.sh, as bench/h200_batch.sh).
source "$(dirname "$0")/h200_setup.sh" samplers.txt "$@"
random_model
now() { date +%s.%N; }
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
common=(--model "$MODEL" --prompt "$prompt" --size "${SIZE:-1024x1024}" --cfg 1 --seed 42 ${EXTRA:-})

# A first run loads the files into the page cache and warms the device, so the timed runs compare
# the samplers and not a cold disk.
"$BIN/moss-infer-hip" "${common[@]}" --steps 2 -o "$OUT/warm.png" 2>"$OUT/warm.log" ||
  { log "FAIL warm-up: $(tail -1 "$OUT/warm.log")"; exit 1; }
log "device: $(grep -m1 -iE 'backend|device' "$OUT/warm.log")"
log "sampler          steps  calls  wall s  denoise s  s/call  (CFG 1, ${SIZE:-1024x1024})"
for run in "euler 50 1" "dpmpp_2m 20 1" "euler_ancestral 30 1" "lcm 8 1"; do
  read -r sampler steps calls_per_step <<<"$run"
  t0=$(now)
  "$BIN/moss-infer-hip" "${common[@]}" --sampler "$sampler" --steps "$steps" -o "$OUT/$sampler-$steps.png" \
    2>"$OUT/$sampler-$steps.log" || { log "FAIL $sampler: $(tail -1 "$OUT/$sampler-$steps.log")"; exit 1; }
  t1=$(now)
  # "done: ... denoise X s (N steps) ..." from the run's last line; the steps that ran (the MOSS-Image
  # schedule snaps, so a step count may merge) times the sampler's DiT calls a step.
  python3 - "$sampler" "$steps" "$calls_per_step" "$t0" "$t1" "$OUT/$sampler-$steps.log" <<'PY' | tee -a "$OUT/samplers.txt"
import re, sys
name, steps, per, t0, t1, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
done = [l for l in open(log) if l.startswith("done:")][-1]
m = re.search(r"denoise ([0-9.]+) s \((\d+) steps\)", done)
denoise, ran = float(m.group(1)), int(m.group(2))
calls = ran * per
print(f"{name:16s} {steps:5d} {calls:6d} {t1 - t0:7.2f} {denoise:10.3f} {denoise / calls:7.4f}")
PY
done
log "$(grep '^memory plan' "$OUT/euler-50.log" | head -1)"
