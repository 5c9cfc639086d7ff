#!/usr/bin/env bash
# What loading the model costs before any weight is read, from the official folder against the
# Comfy-Org single files (issue 45), on the host: no GPU, no disk space. Writes the full-size
# model's headers with every tensor's bytes a hole (bench_random_model --sparse; model_layouts
# --sparse --comfy-only: fused-qkv DiT, model.-prefixed text encoder, LDM-named VAE), then
# bench_model_files times opening each (every mapping, name mapper, check and fingerprint) and
# its parts, side by side, and `inspect` (a process each, wall time) must recognise both. What
# comes after (the weights' reads and uploads) needs the GPU
# machine: bench/h200_model_files.sh.
#
#   bench/model_files_mapping.sh [BIN_DIR] [RUNS]     (BIN_DIR default build; RUNS default 9)
set -euo pipefail
BIN=${1:-build}
RUNS=${2:-9}
root=$(cd "$(dirname "$0")/.." && pwd)
for t in bench_random_model model_layouts bench_model_files moss-infer-hip; do
  [[ -x $BIN/$t ]] || { echo "model_files_mapping.sh: $BIN/$t not found: build the project first" >&2; exit 2; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/model-files-mapping.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$BIN/bench_random_model" --out "$work/folder" --tokenizer "$root/hip/tests/data/qwen35-tokenizer/tokenizer.json" \
  --sparse >"$work/model.log" 2>&1 || { cat "$work/model.log" >&2; exit 1; }
"$BIN/model_layouts" --from "$work/folder" --out "$work/layouts" --comfy-only --sparse >"$work/layouts.log" 2>&1 ||
  { cat "$work/layouts.log" >&2; exit 1; }
echo "sparse full-size model: $(du -sh --apparent-size "$work/folder" | cut -f1) folder, $(du -sh --apparent-size "$work/layouts" | cut -f1) single files (holes: $(du -sh "$work" | cut -f1) on disk)"
"$BIN/bench_model_files" --folder "$work/folder" --dit "$work/layouts/dit_comfy.safetensors" \
  --te "$work/layouts/te_model.safetensors" --vae "$work/layouts/vae_ldm.safetensors" --runs "$RUNS"
# inspect, one process per layout: what a user runs first on the files they downloaded.
TIMEFORMAT=%R
for layout in folder files; do
  if [[ $layout == folder ]]; then paths=("$work/folder"); else paths=("$work"/layouts/*.safetensors --tokenizer "$work/folder/tokenizer/tokenizer.json"); fi
  s=$( { time "$BIN/moss-infer-hip" inspect "${paths[@]}" >"$work/inspect-$layout.txt" 2>&1; } 2>&1 ) ||
    { echo "inspect of the sparse $layout failed:" >&2; cat "$work/inspect-$layout.txt" >&2; exit 1; }
  echo "inspect $layout: exit 0, wall $s s"
done
