#!/usr/bin/env bash
# Writes a full-size random-weight MOSS-Image model folder with the official shapes, tensor names
# and configs (DiT: dim 3072, 24 heads, 42 blocks + the two-block text embedder; Qwen3.5-9B text
# encoder; FLUX.2 small decoder), so full-size runs and benchmarks can be made on a GPU machine
# that has no official weights. About 28 GB on disk; a minute or two on a fast machine.
#
#   tools/random_model.sh OUT_DIR [BIN_DIR] [-- extra bench_random_model flags]
#     BIN_DIR: where the built tools are (default build); extra flags: --dit-layers N,
#     --te-layers N, --no-text-encoder (smaller folders for quick checks).
set -euo pipefail
if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1
bin=${2:-build}
shift $(( $# >= 2 ? 2 : 1 ))
[[ ${1:-} == -- ]] && shift
root=$(cd "$(dirname "$0")/.." && pwd)
tool="$bin/bench_random_model"
[[ -x $tool ]] || { echo "random_model.sh: $tool not found: build the project first (cmake --build $bin)" >&2; exit 2; }
exec "$tool" --out "$out" --tokenizer "$root/hip/tests/data/qwen35-tokenizer/tokenizer.json" "$@"
