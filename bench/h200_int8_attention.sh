#!/usr/bin/env bash
# Issue 49's int8 QKᵀ attention (CoreOps::quantize_keys, norm_rope_attention_int8_qk; the portable
# direct tiling's kInt8Qk variant, kernels/attention.hip) on a GPU machine, for the lead: the
# `moss-check kernels` group int8_attention on both NVIDIA paths -- MOSSINFER_KERNELS=portable (the
# Radeon code on the NVIDIA leaf: quantize_keys bit-identical to the host, the attention within the
# bf16 attention's 1e-2 at T 77 to 4160, the DiT's 1024² shape timed) and native (quantize_keys
# bit-identical; the attention refused by name: the native path keeps its wgmma bf16 attention) --
# and the bf16 attention group under MOSSINFER_KERNELS=portable in the same call, whose
# "q_rope vt" rows at 4173 and 4106 tokens are the bf16 kernel the int8 variant replaces (same
# tiling, same machine: the ratio of the two timed rows is the variant's speed-up on this leaf;
# the Radeon figure comes from bench/amd_model.py, the leaf's int8 rate being the model's input).
# Each step's output goes to OUT_DIR/<step>.txt, the verdicts and timed rows to
# OUT_DIR/int8_attention.txt.
#   bench/h200_int8_attention.sh BIN_DIR OUT_DIR   (an NVIDIA build: cmake -DHIP_TARGET=nvidia)
set -uo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT"
log() { echo "$@" | tee -a "$OUT/int8_attention.txt"; }
step() {  # name, command...
  local name=$1
  shift
  if "$@" >"$OUT/$name.txt" 2>&1; then log "$name: pass"; else log "$name: FAIL (exit $?, $OUT/$name.txt)"; fi
  grep -E "^(quantize_keys|norm_rope_attention_int8_qk|attention\[portable\]).*(4160|4173|4106|refused)|passed, .* failed" \
    "$OUT/$name.txt" | tee -a "$OUT/int8_attention.txt" >/dev/null || true
}
step int8_attention_portable env MOSSINFER_KERNELS=portable "$BIN/moss-check" kernels --family dit --filter int8_attention
step int8_attention_native "$BIN/moss-check" kernels --family dit --filter int8_attention
step bf16_attention_portable env MOSSINFER_KERNELS=portable "$BIN/moss-check" kernels --family dit --filter attention
exit 0
