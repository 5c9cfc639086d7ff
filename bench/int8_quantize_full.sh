#!/usr/bin/env bash
# The quantize time and peak host memory for the full-size DiT (issue 49's closing note), on the
# random full-size model (tools/random_model.sh, no text encoder) and, when given, the official
# folder: `moss-infer-hip quantize --group-size 256` under /usr/bin/time -v. A CPU measurement (no
# GPU needed); run it on the device machine, whose disk holds the 10 GB DiT and the 5.4 GB output.
#
#   bench/int8_quantize_full.sh [BIN_DIR] [OFFICIAL_MODEL_DIR]
#     BIN_DIR: the built tools (default build). Prints one line per model:
#     "quantize <model>: <s> s wall, <GiB> GiB peak RSS (<GiB> GiB of it the mapping at most), <bytes> bytes"
# The issue's bound: peak RSS beyond the mapping under 2 GB. RSS counts the mapped input pages the
# process touched (file-backed, reclaimable), so the line also prints the mapping's size.
set -euo pipefail
bin=${1:-build}
official=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -x $bin/moss-infer-hip && -x $bin/bench_random_model ]] || { echo "build $bin first" >&2; exit 2; }

measure() {  # label, model folder
  local out=$work/int8.safetensors log=$work/time.log
  /usr/bin/time -v "$bin/moss-infer-hip" quantize --model "$2" --out "$out" --group-size 256 2> "$log" >/dev/null
  local wall rss bytes mapped
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.2f", $2 / 1048576}' "$log")
  bytes=$(stat -c %s "$out")
  mapped=$(du -b --apparent-size -c "$2"/transformer/*.safetensors | tail -1 | awk '{printf "%.2f", $1 / 1073741824}')
  echo "quantize $1: $wall wall, $rss GiB peak RSS ($mapped GiB of it the mapping at most), $bytes bytes"
  rm -f "$out"
}

"$root/tools/random_model.sh" "$work/random" "$bin" -- --no-text-encoder >/dev/null
measure "random full-size DiT" "$work/random"
rm -rf "$work/random"
[[ -n $official ]] && measure "official DiT ($official)" "$official"
exit 0
