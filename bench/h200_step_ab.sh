#!/usr/bin/env bash
# h200_step_ab.sh: a kernel change's whole verdict in one call on the H200 (issue 19): the new
# build's DiT and runtime kernel checks and GPU golden stages, then the old and the new build on
# the same full-size random model (bench/h200_before_after.sh: latents and pixels compared, step
# times alternated), each on the kernel paths of KERNEL_PATHS, then one op profile of each at 1024 with the clocks and power
# sampled beside it. Carry [".carry"] holding bundle-old.tar.xz and bundle.tar.xz, each packed by
# bench/make_carry.sh from one build (rename the first). Everything lands in $OUT/ab.tgz; a short
# table is printed last.
#   SIZES (default "1024 512 1456"), RUNS (default 2), CHECKS (default "kernels-runtime kernels-dit
#   dit e2e"), PROFILE_SIZE (default 1024), TE_LAYERS (default 2: the DiT step does not depend on
#   the text encoder's depth, and a shallow one writes and loads in seconds); KERNEL_PATHS (default
#   native; "native portable" checks, times and profiles both, MOSSINFER_KERNELS); PHASES (default
#   "checks timing": a change on both paths takes one call per phase, the model kept in /tmp).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=/tmp/ab
mkdir -p "$work/old" "$work/new" "$work/logs"
# The logs travel back however the call ends (a failed check, a finished phase, the last table).
trap 'tar -C "$work" -czf "$OUT/ab.tgz" logs' EXIT
tar -C "$work/new" -xJf "$root/.carry/bundle.tar.xz" || exit 2
tar -C "$work/old" -xJf "$root/.carry/bundle-old.tar.xz" || exit 2
export LD_LIBRARY_PATH=$work/new/lib
model=/tmp/moss-random-full
t0=$(date +%s)
if [[ ! -f $model/.complete ]]; then
  "$work/new/bin/bench_random_model" --out "$model" --tokenizer "$root/hip/tests/data/qwen35-tokenizer/tokenizer.json" \
    --te-layers "${TE_LAYERS:-2}" >"$work/logs/model.log" 2>&1 && touch "$model/.complete"
fi
echo "== model written in $(( $(date +%s) - t0 )) s"

paths=${KERNEL_PATHS:-native}
phases=" ${PHASES:-checks timing} "
if [[ $phases == *" checks "* ]]; then
  for k in $paths; do
    MOSSINFER_KERNELS=$k CHECK_TIMEOUT=${CHECK_TIMEOUT:-150} bash "$root/bench/h200_checks.sh" "$work/new/bin" \
      "$work/logs/checks-$k" ${CHECKS:-kernels-runtime kernels-dit dit e2e} >"$work/logs/checks-$k.out" 2>&1
    echo "== checks, $k kernels"
    tail -n 12 "$work/logs/checks-$k.out"
    # A failing or hung check stops the call here: the timings of a wrong build mean nothing, and a
    # hang would cost every run below its limit.
    if grep -E '^moss-check' "$work/logs/checks-$k.out" | grep -vqE ': rc 0,'; then
      echo "== a check failed ($k kernels): no timings"
      exit 3
    fi
  done
fi
[[ $phases == *" timing "* ]] || exit 0

PATHS=$paths SIZES=${SIZES:-1024 512 1456} RUNS=${RUNS:-2} \
  bash "$root/bench/h200_before_after.sh" "$work/old/bin" "$work/new/bin" "$model" "$work/ba" >/dev/null 2>&1
cp "$work/ba/before-after.txt" "$work/logs/"

prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
size=${PROFILE_SIZE:-1024}
for k in $paths; do
  for which in old new; do
    nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 100 \
      >"$work/logs/clocks-$k-$which.csv" 2>/dev/null &
    smi=$!
    MOSSINFER_KERNELS=$k MOSSINFER_PROFILE=1 timeout 300 "$work/$which/bin/moss-infer-hip" --model "$model" \
      --prompt "$prompt" --size "${size}x$size" --steps 12 --seed 42 --cfg 3 --latent-out "$work/$which-profile.npy" \
      >"$work/logs/profile-$k-$which.log" 2>&1
    kill "$smi" 2>/dev/null
    wait "$smi" 2>/dev/null
  done
done
echo "== before/after"
cat "$work/logs/before-after.txt"
for k in $paths; do
  for which in old new; do
    echo "== profile $which, $k kernels ($size, per step = total / 12)"
    grep -E "^core\.(linear_gated_unit|linear 3072x|linear_transposed|attention BF16|add_norm_modulate|norm_rope)|^all ops" \
      "$work/logs/profile-$k-$which.log" | awk '{ printf "%s  %.2f ms/step\n", $0, $(NF-2) / 12 }'
    awk -F', ' 'NR > 1 && $5 + 0 > 50 { c += $2; p += $3; n++ } END { if (n) printf "busy samples %d: mean SM clock %.0f MHz, mean power %.0f W\n", n, c / n, p / n }' \
      "$work/logs/clocks-$k-$which.csv"
  done
done
