#!/usr/bin/env bash
# Issue 49's INT8 ConvRot kernels on a GPU machine (docs/int8_convrot.md section 9): the
# `moss-check kernels` group int8 (CoreOps::linear_int8 on the GPU against the host op, tolerance
# 0; the DiT's four projections at 1024x1024 timed) on both NVIDIA paths, native (mma.sync
# m16n8k32, four warps a block) and MOSSINFER_KERNELS=portable (the Radeon code: one wave a block,
# the int8 leaf in NVIDIA's spelling), then the bf16 GEMMs at the same shapes for the ratio
# (the dit family's gemm group, whose timed rows are the same four projections). Then self-test,
# which runs the small int8 cases in the dit family. Each step's output goes to OUT_DIR/<step>.txt
# and one verdict line to OUT_DIR/int8_kernels.txt.
#   bench/h200_int8_kernels.sh BIN_DIR OUT_DIR   (an NVIDIA build: cmake -DHIP_TARGET=nvidia)
set -uo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT"
log() { echo "$@" | tee -a "$OUT/int8_kernels.txt"; }
step() {  # name, command...
  local name=$1
  shift
  if "$@" >"$OUT/$name.txt" 2>&1; then log "$name: pass"; else log "$name: FAIL (exit $?, $OUT/$name.txt)"; fi
  grep -E "^linear_int8|passed, .* failed" "$OUT/$name.txt" | tee -a "$OUT/int8_kernels.txt" >/dev/null || true
}
step int8_native "$BIN/moss-check" kernels --family dit --filter int8
step int8_portable env MOSSINFER_KERNELS=portable "$BIN/moss-check" kernels --family dit --filter int8
step bf16_gemm "$BIN/moss-check" kernels --family dit --filter gemm
step self_test "$BIN/moss-infer-hip" self-test
exit 0
