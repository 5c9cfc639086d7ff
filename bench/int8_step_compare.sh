#!/usr/bin/env bash
# The INT8 ConvRot DiT step against the bf16 one on the device, in one call (issue 49's "INT8/bf16
# step ratio" and "8 GB memory plan"): `bench --stages-only` twice on the same card, bf16 then
# --int8, each with the resident step, the streamed step at --vram-budget 8 (an 8 GB card's plan)
# and the memory plan line. Needs a build whose backend runs linear_int8 (the GPU kernels of
# issue 49); until then the INT8 steps print "failed: ... no int8 kernels yet" and the memory
# plan lines still come.
#
#   bench/int8_step_compare.sh [BIN_DIR] [SIZE]     (defaults: build, 1024x1024)
# Prints the two runs' DiT step and memory plan lines, then
#   "int8/bf16 resident step: R (INT8 <s> s, bf16 <s> s)".
set -uo pipefail
bin=${1:-build}
size=${2:-1024x1024}
[[ -x $bin/moss-infer-hip ]] || { echo "build $bin first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for kind in bf16 int8; do
  flags=(bench --stages-only --size "$size" --steps 6 --vram-budget 8)
  [[ $kind == int8 ]] && flags+=(--int8)
  "$bin/moss-infer-hip" "${flags[@]}" >"$work/$kind.log" 2>&1
  echo "== $kind (exit $?)"
  grep -E "^ *(stages on|DiT step|memory plan)" "$work/$kind.log" || tail -5 "$work/$kind.log"
done
step() { grep -E "^ *DiT step .* blocks resident \(" "$work/$1.log" | grep -oE "[0-9.]+ s median" | head -1 | cut -d' ' -f1; }
b=$(step bf16)
i=$(step int8)
if [[ -n $b && -n $i ]]; then
  awk -v i="$i" -v b="$b" 'BEGIN { printf "int8/bf16 resident step: %.3f (INT8 %s s, bf16 %s s)\n", i / b, i, b }'
else
  echo "int8/bf16 resident step: not measured (bf16 '${b}', INT8 '${i}')"
fi
