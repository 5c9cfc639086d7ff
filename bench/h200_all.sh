#!/usr/bin/env bash
# Every device check, the benchmark and the issue-7 pipeline checks in one call on the GPU
# machine (about 5 minutes), from the bundle that bench/make_carry.sh packs. Run with carry
# [".carry", ".whl"]:   set -o pipefail; bash bench/h200_all.sh 2>&1 | tee $OUT/final.log
# $OUT receives checks.tgz (every check's log), the benchmark's <date>-h200.{md,json} and
# pipeline.txt. Every step has a time limit, so a hung kernel costs its limit, not the call.
set -u
tar -C .carry -xJf .carry/bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/.carry/lib PYTHONUNBUFFERED=1
B=.carry/bin
D=hip/tests/data
C=/tmp/chk
mkdir -p "$C"
run() {  # LIMIT_S NAME COMMAND...: its log in $C/NAME.log, its tally and failures printed
  local limit=$1 name=$2
  shift 2
  timeout "$limit" "$@" >"$C/$name.log" 2>&1
  echo "== $name rc $? $(grep -E '[0-9]+ passed' "$C/$name.log" | tail -1)"
  grep -E "^FAIL|first bad|stopped by" "$C/$name.log" | head -8
}
run 90 dit_kc $B/hip_dit_kernel_check
grep -E "^(gemm|attention|norm_|gated_unit|linear_gated)" $C/dit_kc.log | grep -E "4160|T4173 |T8350|T16450" |
  grep -E "TFLOP|GB/s" | head -30
run 45 vae_kc $B/hip_vae_check --data $D
grep -E "^vae decode \(small|conv2d f16 .*1024x1024" $C/vae_kc.log | head -12
run 40 te_kc $B/hip_te_kernel_check
run 20 pipeline_check $B/hip_pipeline_check --model $D/tiny-moss --data $D
run 20 dit_run $B/hip_dit_run --model $D/tiny-moss --golden $D/golden_dit.safetensors
run 20 te_check $B/hip_te_check --model $D/tiny-moss --golden $D/golden_text_encoder.safetensors
tar -C /tmp -czf "$OUT/checks.tgz" chk
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
  export PYTHONPATH=/tmp/site
MOSS_REF=.carry/moss_ref.py GOLDEN_CHECK=$B/golden_check timeout 120 python3 -m pytest -q -p no:cacheprovider \
  tools/golden >/tmp/dump_test.log 2>&1
echo "== dump_official.py test (tiny model, moss_ref standing in) rc $?: $(tail -1 /tmp/dump_test.log)"
timeout 300 python3 bench/run_bench.py --build $B --moss-ref .carry/moss_ref.py --compile --time-budget 260 \
  --run-timeout 60 --copy-to "$OUT" >/tmp/bench.out 2>&1
echo "== bench rc $?"
tail -45 /tmp/bench.out
timeout 150 bash bench/h200_pipeline.sh $B /tmp/pipe >/dev/null 2>&1
echo "== pipeline rc $?"
cat /tmp/pipe/pipeline.txt
cp /tmp/pipe/pipeline.txt "$OUT/"
