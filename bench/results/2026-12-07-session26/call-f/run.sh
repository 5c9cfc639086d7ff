#!/usr/bin/env bash
# session 26 call F: the sage verdict rows (fp8 rows left out), then the committed native flow's int8 group and step ratio
set -u
T0=$(date +%s)
el() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
mkdir -p /tmp/b && tar -C /tmp/b -xJf .carry/bundle.tar.xz || exit 2
export LD_LIBRARY_PATH=/tmp/b/lib
B=/tmp/b/bin
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader
SAGE_ROWS="fp32 bf16 int8ref f32-i8qk i8-i8qk f32-bf16att" PARTS=sage SAGE_LIMIT=330 timeout 430 bash bench/h200_int8.sh $B $OUT/sage > $OUT/sage_stdout.txt 2>&1
el "sage rc $?"
tail -40 $OUT/sage/int8.txt 2>/dev/null || tail -30 $OUT/sage_stdout.txt
timeout 30 $B/moss-check kernels --family dit --filter int8 > $OUT/int8_native.txt 2>&1
el "int8 native rc $?"; grep -E "passed, .* failed" $OUT/int8_native.txt
left=$(( 585 - ($(date +%s) - T0) ))
el "step with $left s"
timeout $left bash bench/int8_step_compare.sh $B 1024x1024 > $OUT/step_native.txt 2>&1
el "step rc $?"; grep -E "DiT step .*resident \(|int8/bf16" $OUT/step_native.txt
