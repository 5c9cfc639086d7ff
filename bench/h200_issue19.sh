#!/usr/bin/env bash
# Issue 19's benchmark on the GPU machine, in calls of at most 9 minutes each (the device's
# per-command limit is 10), from the bundle of bench/make_carry.sh. Run with carry
# [".carry", ".whl"]:
#   set -o pipefail; bash bench/h200_issue19.sh a 2>&1 | tee $OUT/a.log
# a   ours, the eager baselines (the usual table) and the first image of ours and of the
#     DiffSynth path, page cache warm and cold
# b   the torch.compile anchors: moss_ref whole model (default mode) at 512, 1024 and 1456, then
#     the 42 blocks compiled, each compile timed cold (fresh inductor cache)
# c   the first image of the compiled reference (its compile included), then whatever
#     anchors are given (e.g. the sizes b had no time for: `c --compile-scope model
#     --compile-sizes 1456`; without flags it adds max-autotune-no-cudagraphs at 1024)
# Flags after the letter go to run_bench.py and override the defaults. Every phase past the time
# budget is skipped and listed in the report, to be run by a later call; the results file is
# rewritten after every phase. Each call writes $OUT/<date>-h200-issue19-<letter>.{json,md};
# one report of all of them, on any machine:
#   python3 bench/run_bench.py --report-only --merge-results A.json,B.json,C.json --tag h200-issue19
set -u
call=${1:?usage: h200_issue19.sh a|b|c [run_bench.py flags]}
shift
tar -C .carry -xJf .carry/bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/.carry/lib PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
common=(--build .carry/bin --tag "h200-issue19-$call" --copy-to "$OUT" --results-dir /tmp/bench-results
        --time-budget 500 --run-timeout 90)
case $call in
  a) flags=(--first-image --first-impls ours,diffsynth --first-timeout 150) ;;
  b) flags=(--only model,compile --compile-scope model,blocks --compile-reserve 200) ;;
  c) flags=(--only model,first_image,compile --first-impls compiled --first-timeout 420
            --compile-scope model --compile-mode max-autotune-no-cudagraphs --compile-sizes 1024
            --compile-reserve 200) ;;
  *) echo "h200_issue19.sh: call a, b or c" >&2; exit 2 ;;
esac
timeout 540 python3 bench/run_bench.py "${common[@]}" "${flags[@]}" "$@" >/tmp/bench-$call.out 2>&1
echo "== bench $call rc $?"
grep -E "^\[bench .*(done in|FAILED|skip )" /tmp/bench-$call.out | tail -40
sed -n '/^## Speed/,$p' /tmp/bench-$call.out
