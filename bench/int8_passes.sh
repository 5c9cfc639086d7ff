#!/usr/bin/env bash
# Issue 49's INT8 activation passes alone, for the lead on an NVIDIA GPU machine: the register
# pass (kernels/int8_row_regs.h) in the stand-alone rotate_quantize (o's input, bf16 4160x3072;
# ffn_down's input, f32 2048x8192), the quantizing norms (norm1 with two stored updates, norm2;
# 4160x3072) and the quantizing SiTU unit (2048x8192 f32), each checked bit-identical to the host
# and timed by `moss-check kernels --family dit --filter int8`, on the native path and under
# MOSSINFER_KERNELS=portable (the Radeon code); then the DiT step's op profile with INT8 blocks
# (`MOSSINFER_PROFILE=1 bench --stages-only --int8`, 1024x1024, cfg 3) on each path, and the bf16
# DiT's (its norms: the quantizing norms' goal). Writes OUT_DIR/<step>.txt and the timed rows to
# OUT_DIR/passes.txt.
#   bench/int8_passes.sh BIN_DIR OUT_DIR   (an NVIDIA build: cmake -DHIP_TARGET=nvidia)
set -uo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT"
# The timed rows, as h200_int8_fused.sh picks them.
rows='^(rotate_quantize|norm_modulate_quantized|add_norm_modulate_quantized|gated_unit_quantized).*(timed|[0-9]\.[0-9]{4} +[0-9]+[GT][BF]/s)|passed, .* failed'
: >"$OUT/passes.txt"
for path in native portable; do
  MOSSINFER_KERNELS=$path "$BIN/moss-check" kernels --family dit --filter int8 >"$OUT/check_$path.txt" 2>&1
  echo "== moss-check int8, $path (exit $?)" >>"$OUT/passes.txt"
  grep -E "$rows" "$OUT/check_$path.txt" >>"$OUT/passes.txt"
  MOSSINFER_KERNELS=$path MOSSINFER_PROFILE=1 "$BIN/moss-infer-hip" bench --stages-only --size 1024x1024 --steps 3 \
    --int8 >"$OUT/profile_$path.txt" 2>&1
  echo "== op profile, $path (exit $?)" >>"$OUT/passes.txt"
  grep -E "rotate|quantized|norm_modulate|gated_unit|linear_int8" "$OUT/profile_$path.txt" >>"$OUT/passes.txt"
done
# The bf16 DiT's norms beside them (the goal: the quantizing norms no slower than these).
MOSSINFER_PROFILE=1 "$BIN/moss-infer-hip" bench --stages-only --size 1024x1024 --steps 3 >"$OUT/profile_bf16.txt" 2>&1
echo "== op profile, bf16 blocks, native (exit $?)" >>"$OUT/passes.txt"
grep -E "norm_modulate|gated_unit|linear_gated_unit" "$OUT/profile_bf16.txt" >>"$OUT/passes.txt"
cat "$OUT/passes.txt"
