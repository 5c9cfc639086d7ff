#!/usr/bin/env bash
# h200_before_after.sh OLD_BIN NEW_BIN MODEL_DIR OUT_DIR: the same generations from two builds of
# the program in one run, for a change that must not alter behaviour (issue 17: the redesign).
# For each configuration (kernel path native and portable, 1024 and 512) it runs the old and the
# new binary alternately, twice each: fridge prompt, seed 42, 8 steps, cfg 3, decode to PNG. It
# prints, per run, the mean of denoise steps 2-8 (step 1 warms up), the text encoder's load +
# encode and the VAE time, then whether the final latents are byte-identical and the images'
# pixels identical (their records differ: build and times). Writes OUT_DIR/before-after.txt.
#   PATHS="native portable" SIZES="1024 512" RUNS=2 override the loops; NVIDIA builds only run
#   both kernel paths (MOSSINFER_KERNELS).
set -uo pipefail
old=${1:?usage: h200_before_after.sh OLD_BIN NEW_BIN MODEL_DIR OUT_DIR}
new=${2:?}
model=${3:?}
out=${4:?}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
report=$out/before-after.txt
: >"$report"
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."

# One run: the log's step times, text encoder and VAE seconds on one line.
summarise() {
  local log=$1
  local mean te vae
  mean=$(grep -oE '^denoise [0-9]+/[0-9]+ [0-9.]+' "$log" | awk 'NR > 1 { s += $3; n++ } END { if (n) printf "%.4f", s / n }')
  te=$(grep -oE 'done: text encoder [0-9.]+' "$log" | awk '{ print $4 }')
  vae=$(grep -oE ', vae [0-9.]+ s' "$log" | awk '{ print $3 }')
  echo "mean step (2-8) ${mean:-?} s text encoder ${te:-?} s vae ${vae:-?} s"
}

for path in ${PATHS:-native portable}; do
  for size in ${SIZES:-1024 512}; do
    for run in $(seq 1 "${RUNS:-2}"); do
      for which in old new; do
        bin=$old
        [[ $which == new ]] && bin=$new
        name=$path-$size-$which
        MOSSINFER_KERNELS=$path timeout 600 "$bin/moss-infer-hip" --model "$model" --prompt "$prompt" \
          --size "${size}x$size" --steps 8 --seed 42 --cfg 3 --latent-out "$out/$name.npy" -o "$out/$name.png" \
          >"$out/$name-run$run.log" 2>&1
        rc=$?
        echo "$path $size run$run $which: exit $rc, $(summarise "$out/$name-run$run.log")" | tee -a "$report"
      done
    done
    if cmp -s "$out/$path-$size-old.npy" "$out/$path-$size-new.npy"; then
      echo "$path $size: latents byte-identical" | tee -a "$report"
    else
      echo "$path $size: latents DIFFER (or a run failed)" | tee -a "$report"
    fi
    if python3 "$root/hip/tests/cli/png_tool.py" same-pixels "$out/$path-$size-old.png" "$out/$path-$size-new.png"; then
      echo "$path $size: image pixels identical" | tee -a "$report"
    else
      echo "$path $size: image pixels DIFFER (or a run failed)" | tee -a "$report"
    fi
  done
done
