#!/usr/bin/env bash
# Issue 47's closing measurement on a GPU machine (docs/loras.md), on the full-size random-weight
# model (tools/random_model.sh): the merge kernel's check (moss-check kernels --family lora), the
# merge time of a rank-64 LoRA over every DiT linear split into reading, merging (on the device:
# the resident weights in place; host copies) and hashing (the engine's "loras:" lines), the 1024x1024 image time of 8 steps at CFG 1
# with that LoRA against 50 steps at CFG 3 without, and the restore's bit-identity (a jobs file
# LoRA, none, LoRA in one engine: the middle image equals a fresh run without LoRA, the third the
# first). Usage: bench/h200_lora.sh BIN_DIR OUT_DIR [MODEL_DIR]   (SIZE=WxH, RANK=N change them;
# EXTRA="flags" adds flags to every run: a quick try on the tiny model needs --skip-layers 1)
set -uo pipefail
BIN=$1
OUT=$2
MODEL=${3:-/tmp/moss-random-full}
RANK=${RANK:-64}
SIZE=${SIZE:-1024x1024}
mkdir -p "$OUT"
log() { echo "$@" | tee -a "$OUT/lora.txt"; }
if [[ ! -f $MODEL/transformer/config.json ]]; then
  tools/random_model.sh "$MODEL" "$BIN" >"$OUT/model.log" 2>&1 || { log "FAIL writing the random model"; exit 1; }
fi
LORA=$OUT/rank$RANK.safetensors
# A PEFT-named LoRA on every 2-D weight of the DiT, bf16 factors of a small random pattern.
python3 - "$MODEL/transformer" "$LORA" "$RANK" <<'PY' || { log "FAIL writing the LoRA"; exit 1; }
import json, os, random, struct, sys
folder, out, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
shapes = {}
for name in sorted(os.listdir(folder)):
    if name.endswith(".safetensors"):
        with open(os.path.join(folder, name), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            for k, v in json.loads(f.read(n)).items():
                if k != "__metadata__" and k.endswith(".weight") and len(v["shape"]) == 2:
                    shapes[k[:-7]] = v["shape"]
rng = random.Random(47)
pattern = b"".join(struct.pack("<H", struct.unpack("<I", struct.pack("<f", rng.gauss(0, 0.01)))[0] >> 16) for _ in range(1 << 16))
header, sizes = {}, []
offset = 0
for module, (o, i) in sorted(shapes.items()):
    for suffix, shape in (("lora_A.weight", [rank, i]), ("lora_B.weight", [o, rank])):
        nbytes = shape[0] * shape[1] * 2
        header[f"transformer.{module}.{suffix}"] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + nbytes]}
        sizes.append(nbytes)
        offset += nbytes
text = json.dumps(header).encode()
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    for nbytes in sizes:
        full, rest = divmod(nbytes, len(pattern))
        f.write(pattern * full + pattern[:rest])
print(f"{len(shapes)} modules, rank {rank}, {offset / 2**20:.0f} MiB")
PY
log "LoRA: $(python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1]) / 2**20:.0f} MiB')" "$LORA") at rank $RANK over every DiT linear"
# The merge kernel against its host reference, bit for bit, before it is timed.
if [[ -x $BIN/moss-check ]]; then
  "$BIN/moss-check" kernels --family lora >"$OUT/kernels_lora.txt" 2>&1 && log "PASS moss-check kernels --family lora: $(tail -1 "$OUT/kernels_lora.txt")" ||
    log "FAIL moss-check kernels --family lora: $(tail -1 "$OUT/kernels_lora.txt")"
fi
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
common=(--model "$MODEL" --prompt "$prompt" --size "$SIZE" --seed 1 ${EXTRA:-})
"$BIN/moss-infer-hip" "${common[@]}" --lora "$LORA" --steps 8 --cfg 1 -o "$OUT/distill8.png" 2>"$OUT/distill8.log" ||
  { log "FAIL 8 steps with the LoRA: $(tail -1 "$OUT/distill8.log")"; exit 1; }
"$BIN/moss-infer-hip" "${common[@]}" --steps 50 --cfg 3 -o "$OUT/base50.png" 2>"$OUT/base50.log" ||
  { log "FAIL 50 steps: $(tail -1 "$OUT/base50.log")"; exit 1; }
grep '^loras:' "$OUT/distill8.log" | sed 's/^/merge: /' | tee -a "$OUT/lora.txt"
# The merge's time split from the engine's lines: reading and checking the files, their hashes,
# the merge itself (resident weights on the device in place; host copies: streamed blocks and
# the text encoder, merged on the device and downloaded).
python3 - "$OUT/distill8.log" <<'PY' | tee -a "$OUT/lora.txt"
import re, sys
text = open(sys.argv[1]).read()
read = re.search(r"read and checked ([0-9.]+) s, hashes ([0-9.]+) s", text)
device = [(int(n), float(s)) for n, s in re.findall(r"merged into (\d+) resident DiT tensors on the device in ([0-9.]+) s", text)]
copies = [(int(n), float(s)) for n, s in re.findall(r"merged into (\d+) (?:DiT|text encoder) tensors in ([0-9.]+) s", text)]
merge = sum(s for _, s in device + copies)
print(f"merge time split: read and checked {float(read.group(1)):.3f} s, merge {merge:.3f} s "
      f"(on the device in place {sum(s for _, s in device):.3f} s over {sum(n for n, _ in device)} tensors, "
      f"host copies {sum(s for _, s in copies):.3f} s over {sum(n for n, _ in copies)}), hashes {float(read.group(2)):.3f} s"
      if read else "merge time split: FAIL no 'loras:' lines in the log")
PY
log "8 steps, CFG 1, LoRA: $(grep '^done:' "$OUT/distill8.log")"
log "50 steps, CFG 3:      $(grep '^done:' "$OUT/base50.log")"
python3 - "$OUT/distill8.log" "$OUT/base50.log" <<'PY' | tee -a "$OUT/lora.txt"
import re, sys
t = [float(re.search(r"total ([0-9.]+) s", open(p).read()).group(1)) for p in sys.argv[1:]]
print(f"image time: 8 steps CFG 1 {t[0]:.2f} s, 50 steps CFG 3 {t[1]:.2f} s: {t[1] / t[0]:.2f}x faster")
PY
# Restore: LoRA, none, LoRA in one engine (a jobs file); then a fresh run without LoRA.
jobs=$OUT/jobs.jsonl
: >"$jobs"
for lora in "[\"$LORA\"]" "[]" "[\"$LORA\"]"; do
  echo "{\"prompt\": \"$prompt\", \"width\": ${SIZE%x*}, \"height\": ${SIZE#*x}, \"steps\": 8, \"cfg_scale\": 1, \"seed\": 1, \"lora\": $lora}" >>"$jobs"
done
"$BIN/moss-infer-hip" --model "$MODEL" ${EXTRA:-} --jobs "$jobs" -o "$OUT/job-%d.png" 2>"$OUT/jobs.log" ||
  { log "FAIL jobs: $(tail -1 "$OUT/jobs.log")"; exit 1; }
"$BIN/moss-infer-hip" "${common[@]}" --steps 8 --cfg 1 -o "$OUT/fresh8.png" 2>"$OUT/fresh8.log" ||
  { log "FAIL fresh run: $(tail -1 "$OUT/fresh8.log")"; exit 1; }
log "jobs merges: $(grep '^loras:' "$OUT/jobs.log" | tr '\n' ' ')"
same() { python3 hip/tests/cli/png_tool.py same-pixels "$1" "$2" >/dev/null && echo PASS || echo FAIL; }
log "$(same "$OUT/job-2.png" "$OUT/fresh8.png") restore: the image after the LoRA set equals a fresh load's, bit for bit"
log "$(same "$OUT/job-1.png" "$OUT/job-3.png") the LoRA set again: the same image"
log "$(same "$OUT/job-1.png" "$OUT/distill8.png") the jobs file's LoRA image equals the single run's"
