#!/usr/bin/env bash
# Issue 49, LoRAs beside an INT8 ConvRot DiT (docs/loras.md, "LoRAs on an INT8 ConvRot DiT"), on a
# GPU machine, on the full-size random-weight model (tools/random_model.sh):
# - the DiT quantized (`moss-infer-hip quantize`, group 256) and a rank-RANK PEFT LoRA over every
#   DiT linear (bench/random_lora.py): its 168 block projections run beside the INT8 layers, the
#   rest merge;
# - a throwaway run (small, one step, with the LoRA): the self-test gate and the page cache;
# - one kept engine (a jobs file): KEPT images without LoRA, KEPT with it, KEPT without again, at
#   SIZE, STEPS steps, CFG 3, `--diffusion-model` the INT8 file; per set the median denoise step of
#   its 2nd and later images (the first pays the load and the merge), and the LoRA's step over
#   the LoRA-free one (the cost of the corrections beside the layers);
# - the restore: the third set's images have the first set's pixels, bit for bit.
# Usage: bench/h200_int8_lora.sh BIN_DIR OUT_DIR [MODEL_DIR]   (SIZE=WxH (1024x1024), STEPS (8),
# RANK (64), KEPT (3); EXTRA="flags" adds flags to every run: on the tiny model with the host build
# EXTRA="--skip-layers 1" GROUP=64 SIZE=32x32 MOSSINFER_BACKEND=host)
source "$(dirname "$0")/h200_setup.sh" int8_lora.txt "$@"
RANK=${RANK:-64}
SIZE=${SIZE:-1024x1024}
STEPS=${STEPS:-8}
KEPT=${KEPT:-3}
random_model
INT8=$OUT/dit_int8.safetensors
"$BIN/moss-infer-hip" quantize --model "$MODEL" --out "$INT8" --group-size "${GROUP:-256}" >"$OUT/quantize.log" 2>&1 ||
  { log "FAIL quantize: $(tail -1 "$OUT/quantize.log")"; exit 1; }
log "quantized: $(tail -1 "$OUT/quantize.log")"
LORA=$OUT/rank$RANK.safetensors
python3 bench/random_lora.py "$MODEL/transformer" "$LORA" "$RANK" >"$OUT/lora.log" || { log "FAIL writing the LoRA"; exit 1; }
log "LoRA: $(cat "$OUT/lora.log")"
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
common=(--model "$MODEL" --diffusion-model "$INT8" --seed 1 ${EXTRA:-})
"$BIN/moss-infer-hip" "${common[@]}" --prompt "$prompt" --size 256x256 --lora "$LORA" --steps 1 -o "$OUT/warmup.png" \
  2>"$OUT/warmup.log" || { log "FAIL the warm-up run: $(tail -1 "$OUT/warmup.log")"; exit 1; }
log "warm-up (not timed): $(grep '^done:' "$OUT/warmup.log")"
jobs=$OUT/jobs.jsonl
: >"$jobs"
for set in none lora none2; do
  for ((i = 1; i <= KEPT; i++)); do
    lora=""
    [[ $set == lora ]] && lora=", \"lora\": [\"$LORA:1\"]"
    echo "{\"prompt\": \"$prompt\", \"output\": \"$OUT/$set-$i.png\"$lora}" >>"$jobs"
  done
done
w=${SIZE%x*}
h=${SIZE#*x}
"$BIN/moss-infer-hip" "${common[@]}" --jobs "$jobs" --width "$w" --height "$h" --steps "$STEPS" --cfg 3 \
  --progress json 2>"$OUT/jobs.log" || { log "FAIL the jobs file: $(tail -1 "$OUT/jobs.log")"; exit 1; }
grep -h '"loras: ' "$OUT/jobs.log" | sed 's/.*"message":"\([^"]*\)".*/\1/' | while read -r line; do log "$line"; done
python3 - "$OUT/jobs.log" "$KEPT" <<'PY' | while read -r line; do log "$line"; done
import json, statistics, sys
kept = int(sys.argv[2])
images, steps = [], []
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "step" and e.get("stage") == "denoise":
        steps.append(e["seconds"])
    elif e.get("event") == "image":
        images.append(steps[1:])  # the first step of an image left out
        steps = []
sets = {}
for name, first in (("without LoRA", 0), ("with the LoRA beside", kept), ("without LoRA again", 2 * kept)):
    later = [s for img in images[first + 1:first + kept] for s in img]  # the set's 2nd and later images
    sets[name] = statistics.median(later) if later else float("nan")
    print(f"{name}: median denoise step {sets[name]:.4f} s ({len(later)} steps of images 2..{kept})")
print(f"LoRA step / LoRA-free step: {sets['with the LoRA beside'] / sets['without LoRA']:.3f}")
PY
same=1
for ((i = 1; i <= KEPT; i++)); do
  python3 hip/tests/cli/png_tool.py same-pixels "$OUT/none-$i.png" "$OUT/none2-$i.png" || same=0
done
((same)) && log "PASS restore: the LoRA-free images after the LoRA set are the first ones bit for bit" ||
  log "FAIL restore: the LoRA-free images differ after the LoRA set"
python3 hip/tests/cli/png_tool.py same-pixels "$OUT/none-1.png" "$OUT/lora-1.png" 2>/dev/null &&
  log "FAIL the LoRA changed nothing" || log "PASS the LoRA changes the image"
