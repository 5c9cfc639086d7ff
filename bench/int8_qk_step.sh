#!/usr/bin/env bash
# int8 QKᵀ in the INT8 DiT's attention (docs/attention_int8_qk.md), its step on the device: the
# INT8 `bench --stages-only --int8` step with MOSSINFER_INT8_QK=0 (the bf16-K attention) and =1
# (int8 scores), both on the Radeon code (MOSSINFER_KERNELS=portable on an NVIDIA build; ignored
# on AMD builds, which run it anyway), in one call on the same card. What bench/amd_model.py's
# `+ int8 QK^T` row predicts for gfx1200 (1.131 -> 1.084 s) is a Radeon's; on NVIDIA this measures
# the portable kernels' difference, the direction and the attention's share. Needs the GPU kernels
# of int8 QKᵀ (kernels/attention_int8_keys.hip); without them the =1 run fails naming the op.
#
#   bench/int8_qk_step.sh [BIN_DIR] [SIZE]     (defaults: build, 1024x1024)
# Prints each run's DiT step line, then "int8 QK^T / bf16-K resident INT8 step: R (<s> s, <s> s)".
set -uo pipefail
bin=${1:-build}
size=${2:-1024x1024}
[[ -x $bin/moss-infer-hip ]] || { echo "build $bin first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for qk in 0 1; do
  MOSSINFER_KERNELS=portable MOSSINFER_INT8_QK=$qk \
    "$bin/moss-infer-hip" bench --stages-only --int8 --size "$size" --steps 6 >"$work/$qk.log" 2>&1
  echo "== MOSSINFER_INT8_QK=$qk (exit $?)"
  grep -E "^ *(stages on|DiT step)" "$work/$qk.log" || tail -5 "$work/$qk.log"
done
step() { grep -E "^ *DiT step .* blocks resident \(" "$work/$1.log" | grep -oE "[0-9.]+ s median" | head -1 | cut -d' ' -f1; }
off=$(step 0)
on=$(step 1)
if [[ -n $off && -n $on ]]; then
  awk -v a="$on" -v b="$off" 'BEGIN { printf "int8 QK^T / bf16-K resident INT8 step: %.3f (%s s, %s s)\n", a / b, a, b }'
else
  echo "int8 QK^T / bf16-K resident INT8 step: not measured (int8 QK^T '${on}', bf16-K '${off}')"
fi
