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
CHECK_TIMEOUT=90 bash bench/h200_checks.sh $B $C
grep -E "^(gemm|attention|norm_|gated_unit|linear_gated)" $C/checks-kernels-dit.log |
  grep -E "4160|T4173 |T8350|T16450" | grep -E "TFLOP|GB/s" | head -30
grep -E "^vae decode \(small|conv2d f16 .*1024x1024" $C/checks-kernels-vae.log | head -12
tar -C /tmp -czf "$OUT/checks.tgz" chk
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
  export PYTHONPATH=/tmp/site
MOSS_REF=hip/tests/data/reference/moss_ref.py MOSS_CHECK=$B/moss-check timeout 120 python3 -m pytest -q -p no:cacheprovider \
  tools/golden >/tmp/dump_test.log 2>&1
echo "== dump_official.py test (tiny model, moss_ref standing in) rc $?: $(tail -1 /tmp/dump_test.log)"
timeout 300 python3 bench/run_bench.py --build $B --compile --compile-scope blocks --compile-sizes 512,1024 --time-budget 260 \
  --run-timeout 60 --copy-to "$OUT" >/tmp/bench.out 2>&1
echo "== bench rc $?"
tail -45 /tmp/bench.out
timeout 150 bash bench/h200_pipeline.sh $B /tmp/pipe >/dev/null 2>&1
echo "== pipeline rc $?"
cat /tmp/pipe/pipeline.txt
cp /tmp/pipe/pipeline.txt "$OUT/"
