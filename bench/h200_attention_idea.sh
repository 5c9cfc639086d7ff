#!/usr/bin/env bash
# h200_attention_idea.sh: issue 49's change to the portable attention (attention.hip's direct
# tiling, bench/amd_model.md section 6), checked and timed on the lent NVIDIA card's portable path
# (MOSSINFER_KERNELS=portable runs the direct tiling). What NVIDIA sees of the change: the output's
# rescale skipped where no row of a wave raised its maximum (the same bits: the factor is exactly
# 1) and the softmax's scale inside exp2's fma (one rounding fewer: close, not the same bits); P's
# one-add rounding is AMD's alone (NVIDIA keeps cvt.rn, one instruction a pair).
#   1. moss-check kernels --family dit --filter attention on the portable path, old and new build
#      (the new must pass; the old is the baseline of the same call)
#   2. the 1024x1024 step (and 512) before/after on the portable path, alternated
#      (bench/h200_step_ab.sh, timing phase), latents compared: close, not byte-identical (the fma)
# Carry as bench/h200_step_ab.sh: .carry/bundle-old.tar.xz (the parent commit's build) and
# .carry/bundle.tar.xz (this branch's), each packed by bench/make_carry.sh. Fits one 10-minute call.
#   bash bench/h200_attention_idea.sh            (OUT set by the device tool)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/attention-idea
mkdir -p "$work/old" "$work/new"
tar -C "$work/new" -xJf "$root/.carry/bundle.tar.xz" || exit 2
tar -C "$work/old" -xJf "$root/.carry/bundle-old.tar.xz" || exit 2
status=0
for which in old new; do
  log=$OUT/check-attention-portable-$which.log
  LD_LIBRARY_PATH=$work/$which/lib MOSSINFER_KERNELS=portable timeout 240 \
    "$work/$which/bin/moss-check" kernels --family dit --filter attention >"$log" 2>&1
  rc=$?
  echo "== moss-check kernels --family dit --filter attention, portable, $which build: rc $rc"
  tail -n 4 "$log"
  [[ $which == new && $rc -ne 0 ]] && status=3
done
if [[ $status -ne 0 ]]; then
  echo "== the new build's attention checks failed: no timings"
  exit $status
fi
KERNEL_PATHS=portable PHASES=timing SIZES="${SIZES:-1024 512}" RUNS=${RUNS:-3} OUT=$OUT \
  bash "$root/bench/h200_step_ab.sh"
