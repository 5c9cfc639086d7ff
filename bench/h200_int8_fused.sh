#!/usr/bin/env bash
# Issue 49's quantization fused into the producing ops (docs/int8_convrot.md section 9), on a GPU
# machine, for the lead: the `moss-check kernels` group int8 (the linear's cases and the
# activation ops': rotate_quantize and linear_int8 from its rows bit-identical, each quantizing
# producer's rows exactly the host's quantization of its own fp32 rows; the DiT's shapes timed:
# norm1, norm2, the SiTU unit on 2048 rows, the o input's pass; linear_int8_gated_unit, the unit in
# the int8 GEMM's epilogue, bit-identical to linear_int8 + gated_unit and timed beside them at
# 4160x3072x16384 in the closing summary) on both NVIDIA paths, native and
# MOSSINFER_KERNELS=portable (the Radeon code); the bf16 GEMMs at the same shapes (the dit family's
# gemm group); then the INT8 / bf16 DiT step ratio on each path
# (bench/int8_step_compare.sh: resident, 1024x1024, cfg); then self-test (the small int8 cases
# gate generation). Each step's output goes to OUT_DIR/<step>.txt, the verdicts and the timed
# rows to OUT_DIR/int8_fused.txt. The fidelity table (engine INT8 against the PyTorch INT8
# reference, which this change moves closer: fp32 rows quantized instead of their bf16
# roundings) is bench/h200_int8.sh's.
#   bench/h200_int8_fused.sh BIN_DIR OUT_DIR   (an NVIDIA build: cmake -DHIP_TARGET=nvidia)
set -uo pipefail
BIN=$1
OUT=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT"
log() { echo "$@" | tee -a "$OUT/int8_fused.txt"; }
step() {  # name, command...
  local name=$1
  shift
  if "$@" >"$OUT/$name.txt" 2>&1; then log "$name: pass"; else log "$name: FAIL (exit $?, $OUT/$name.txt)"; fi
  grep -E "^(linear_int8|rotate_quantize|norm_modulate_quantized|add_norm_modulate_quantized|gated_unit_quantized)\
.*(timed|[0-9]\.[0-9]{4} +[0-9]+[GT][BF]/s)|passed, .* failed|int8/bf16 resident step" "$OUT/$name.txt" |
    tee -a "$OUT/int8_fused.txt" >/dev/null || true
}
step int8_native "$BIN/moss-check" kernels --family dit --filter int8
step int8_portable env MOSSINFER_KERNELS=portable "$BIN/moss-check" kernels --family dit --filter int8
step bf16_gemm "$BIN/moss-check" kernels --family dit --filter gemm
step step_native bash "$HERE/int8_step_compare.sh" "$BIN" 1024x1024
step step_portable env MOSSINFER_KERNELS=portable bash "$HERE/int8_step_compare.sh" "$BIN" 1024x1024
step self_test "$BIN/moss-infer-hip" self-test
exit 0
