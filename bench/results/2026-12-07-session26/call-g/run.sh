#!/usr/bin/env bash
# session 26 call G: the sage rows again with Q_BLOCK 16 (the kernel's per-wave Q scale) and the fp8 P.V rows (c), then the portable step ratio if time is left
set -u
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/b && tar -C /tmp/b -xJf .carry/bundle.tar.xz || exit 2
export LD_LIBRARY_PATH=/tmp/b/lib
B=/tmp/b/bin
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
SAGE_ROWS="fp32 bf16 int8ref f32-i8qk i8-i8qk f32-i8fp8 i8-i8fp8" PARTS=sage SAGE_LIMIT=360 timeout 460 bash bench/h200_int8.sh $B $OUT/sage > $OUT/sage_stdout.txt 2>&1
el "sage rc $?"
tail -40 $OUT/sage/int8.txt 2>/dev/null || tail -30 $OUT/sage_stdout.txt
left=$(( 585 - ($(date +%s) - T0) ))
el "portable step with $left s"
[[ $left -gt 130 ]] && MOSSINFER_KERNELS=portable timeout $left bash bench/int8_step_compare.sh $B 1024x1024 > $OUT/step_portable.txt 2>&1
el "step rc $?"; grep -E "DiT step .*resident \(|int8/bf16" $OUT/step_portable.txt
