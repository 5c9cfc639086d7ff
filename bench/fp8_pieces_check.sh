#!/usr/bin/env bash
# fp8 P.V's pieces on a GPU (docs/attention_int8_qk.md "P.V in fp8: the pieces"): CoreOps::
# quantize_values_fp8's kernel against the host body at tolerance 0, which also proves the
# device's e4m3 conversion (gfx12: v_cvt_pk_fp8_f32 after the clamp; NVIDIA sm_89+:
# cvt.rn.satfinite.e4m3x2.f32) equal to the host's definition on every code the values reach
# (docs/matrix_layouts.md section 9), on the DiT's shape (timed) and odd ones. On an NVIDIA build
# the case runs twice: the native path and MOSSINFER_KERNELS=portable (the same kernel either way:
# the second run shows the knob changes nothing here). Needs a device build's moss-check.
#
#   bench/fp8_pieces_check.sh [BIN_DIR]     (default: build)
# Prints moss-check's table and its "N passed, M failed" line per run; exits non-zero on a failure.
set -uo pipefail
bin=${1:-build}
[[ -x $bin/moss-check ]] || { echo "build $bin first (a device build: the kernels family is GPU-only)" >&2; exit 2; }
status=0
for kernels in native portable; do
  echo "== MOSSINFER_KERNELS=$kernels"
  MOSSINFER_KERNELS=$kernels "$bin/moss-check" kernels --family dit --filter fp8 || status=1
done
exit $status
