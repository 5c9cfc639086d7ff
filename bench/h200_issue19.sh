#!/usr/bin/env bash
# Issue 19's benchmark on the GPU machine, in calls of at most 9 minutes each (the device's
# per-command limit is 10), from the bundle of bench/make_carry.sh. Run with carry
# [".carry", ".whl"]:
#   set -o pipefail; bash bench/h200_issue19.sh anchors 2>&1 | tee $OUT/anchors.log
# anchors  ours' DiT step at 512, 1024 and 1456, then the torch.compile anchors in one process:
#          moss_ref whole model (default mode) at 1024, 1456 and 512, each compile timed cold
#          (fresh inductor cache), then the 42 blocks compiled; each compiled step at 1024 also
#          profiled by kernel (torch.profiler), and ours profiled by op (MOSSINFER_PROFILE=1) at
#          1024 after it, with the SM clock and power sampled throughout ($OUT/clocks.csv). The
#          text encoder is 2 layers deep here (the DiT step does not depend on it; the model is
#          written in seconds)
# first    ours stage by stage (DiT step at 512, 1024, 1456, streamed DiT, text encoder, VAE), then
#          the first image (50 steps, 1024x1024, start to written PNG, a fresh process each): ours,
#          the DiffSynth path and the compiled reference (its compile included), page cache warm,
#          then cold where it can be dropped; the full-size text encoder
# a, b, c  the earlier split: a = ours + eager baselines + first image of ours and DiffSynth; b =
#          the anchors alone; c = the compiled reference's first image + max-autotune at 1024
# The whole-model anchors at all three sizes in one call (the first compile about 170 s, the later
# ones about 120 s each from the same inductor cache; bench/NOTES.md, twelfth session):
#   LIMIT=560 bash bench/h200_issue19.sh anchors --compile-scope model --compile-sizes 1024,512,1456 \
#     --profile-sizes "" --dit-steps 12,8,6 --reps 5 --time-budget 545
# The first image cold for all three paths, in two calls on one warm machine (the compiled
# reference's cold run takes 260 s or more, past the `first` call's per-process limit):
#   LIMIT=545 bash bench/h200_issue19.sh first --first-cache cold,warm --time-budget 505
#   LIMIT=505 bash bench/h200_issue19.sh c --only model,first_image --first-impls compiled \
#     --first-cache cold --first-timeout 465 --time-budget 490
# Flags after the call's name go to run_bench.py and override the defaults. Every phase past the
# time budget is skipped and listed in the report; the results file is rewritten after every
# phase. Each call writes $OUT/<date>-h200-issue19-<call>.{json,md}; one report of several, on
# any machine:
#   python3 bench/run_bench.py --report-only --merge-results A.json,B.json --tag h200-issue19
set -u
call=${1:?usage: h200_issue19.sh anchors|first|a|b|c [run_bench.py flags]}
shift
tar -C .carry -xJf .carry/bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/.carry/lib PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
common=(--build .carry/bin --tag "h200-issue19-$call" --copy-to "$OUT" --results-dir /tmp/bench-results
        --time-budget 500 --run-timeout 90)
case $call in
  anchors) flags=(--only model,ours,dit,compile --te-layers 2 --dit-sizes 512,1024,1456 --compile-scope model,blocks
                  --compile-sizes 1024,1456,512 --profile-sizes 1024 --compile-reserve 100 --time-budget 390) ;;
  first) flags=(--only model,ours,dit,stream,te,vae,first_image --dit-sizes 512,1024,1456
                --first-impls ours,diffsynth,compiled --first-cache warm,cold --first-timeout 300
                --time-budget 420) ;;
  a) flags=(--first-image --first-impls ours,diffsynth --first-timeout 150) ;;
  b) flags=(--only model,compile --compile-scope model,blocks --compile-reserve 200) ;;
  c) flags=(--only model,first_image,compile --first-impls compiled --first-timeout 420
            --compile-scope model --compile-mode max-autotune-no-cudagraphs --compile-sizes 1024
            --compile-reserve 200) ;;
  *) echo "h200_issue19.sh: call anchors, first, a, b or c" >&2; exit 2 ;;
esac
# The SM clock and power beside every call (the step is power-capped above 512: bench/NOTES.md).
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 200 \
  >"$OUT/clocks-$call.csv" 2>/dev/null &
smi=$!
limit=540
case $call in anchors) limit=410 ;; first) limit=470 ;; esac  # anchors: time left for ours' op profile below
limit=${LIMIT:-$limit}  # a larger --time-budget needs a larger limit too (at most about 540 in one call)
timeout $limit python3 bench/run_bench.py "${common[@]}" "${flags[@]}" "$@" >/tmp/bench-$call.out 2>&1
echo "== bench $call rc $?"
if [[ $call == anchors ]]; then
  # ours' op profile at 1024 on the same model and card, to set beside the compiled steps' kernel
  # profiles in the results file
  MOSSINFER_PROFILE=1 timeout 60 .carry/bin/moss-infer-hip --model /tmp/moss-random-full --size 1024x1024 --steps 8 \
    --cfg 3 --skip-layers 22 --negative "" --seed 42 --latent-out /tmp/profile-1024.npy \
    --prompt "A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light." \
    >"$OUT/ours-profile-1024.log" 2>&1
  echo "== ours' op profile at 1024 rc $? (8 steps)"
  grep -E "^(denoise|core\.(linear_gated_unit|linear 3072x|attention BF16|add_norm_modulate|norm_rope))" "$OUT/ours-profile-1024.log"
fi
kill $smi 2>/dev/null
grep -E "^\[bench .*(done in|FAILED|skip )" /tmp/bench-$call.out | tail -40
sed -n '/^## Speed/,$p' /tmp/bench-$call.out
