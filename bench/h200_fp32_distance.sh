#!/usr/bin/env bash
# h200_fp32_distance.sh: how far a kernel change moves the final latents from an fp32 PyTorch
# reference, old build against new, on the full-size random model (issue 19's "full-size latents
# stay within the fp32-reference distance"). The reference is tools/golden/dump_official.py in
# float32 with the stand-in pipeline (moss_ref's DiT, transformers' Qwen3.5, diffusers' VAE): the
# fridge prompt, seed 42, 1024x1024, 4 steps, cfg 3, skip 22; each build then runs the DiT stage
# of `moss-check official --backend hip` on that dump (its noise and text states) and prints the
# final latent's cosine, relative L2 and max |diff| to fp32.
#   bench/h200_fp32_distance.sh OLD_BIN NEW_BIN MODEL OUT_DIR
# Needs torch and transformers on the machine and diffusers' wheel in .whl/ (carry it).
set -uo pipefail
old=${1:?usage: h200_fp32_distance.sh OLD_BIN NEW_BIN MODEL OUT_DIR}
new=${2:?}
model=${3:?}
out=${4:?}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
# Made once per model on a machine (the reference does not depend on the builds).
dump=/tmp/fp32-ref-1024-$(basename "$model").safetensors
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
t0=$(date +%s)
if [[ ! -f $dump ]]; then
  python3 "$root/tools/golden/dump_official.py" --model "$model" --pipeline-module "$root/tools/golden/standin_pipeline.py" \
    --dtype float32 --prompt "$prompt" --negative "" --seed 42 --height 1024 --width 1024 --steps 4 --cfg 3 \
    --skip-layers 22 --wheels "$root/.whl" --out "$dump" >"$out/fp32-dump.log" 2>&1 ||
    { echo "== fp32 dump failed: $(tail -3 "$out/fp32-dump.log")"; exit 3; }
fi
echo "== fp32 reference dumped in $(( $(date +%s) - t0 )) s"
for which in old new; do
  bin=$old
  [[ $which == new ]] && bin=$new
  timeout 300 "$bin/moss-check" official --backend hip --model "$model" --dump "$dump" --stages dit \
    >"$out/fp32-distance-$which.log" 2>&1
  echo "$which (rc $?): $(grep -E 'final_latent' "$out/fp32-distance-$which.log" | head -1)"
done
