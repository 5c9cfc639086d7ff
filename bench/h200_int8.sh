#!/usr/bin/env bash
# Issue 49's closing measurement on a GPU machine: the INT8 ConvRot DiT's fidelity table and its
# step time against bf16, on the full-size random model (tools/random_model.sh).
#
#   bench/h200_int8.sh BIN_DIR OUT_DIR [MODEL_DIR]     (SIZES="512 1024", STEPS=4, PARTS="fidelity speed")
#
# Fidelity, per size and for 4 prompts (bench/int8_fidelity.py; bench/amd_model.md section 6):
#   (a) fp32 PyTorch: tools/golden/dump_official.py --dtype float32 with the stand-in pipeline
#       (moss_ref's DiT, transformers' Qwen3.5, diffusers' VAE): text states, noise, sigmas and the
#       fp32 final latent of each prompt (cfg 3, skip 22, STEPS steps); kept in /tmp across calls
#   (b) bf16 PyTorch and (c) the INT8 reference (bench/int8_convrot_ref.py int8_dit on moss_ref's
#       DiT, the INT8 file the engine runs) on those inputs; also (c) with QK^T in int8 (the
#       attention idea), judged by the same bar
#   (d) the engine's INT8 DiT, native and MOSSINFER_KERNELS=portable: `moss-check official
#       --stages dit` on the same inputs, on a folder whose transformer is the INT8 file and a dump
#       whose final_latent is (c)'s, so its final_latent line is engine-INT8 against the INT8 reference;
#       where moss-check refuses that folder, end to end through `--diffusion-model INT8.safetensors`
#       (the engine's own text states: its bf16 folder's end-to-end distance to fp32 printed beside)
#   The table prints per prompt: bf16 vs fp32, INT8-ref vs fp32 (the format's own error), the bar
#   (0.5x bf16 vs fp32) and each row against the INT8 reference, "within" or "OUTSIDE".
# Speed (1024x1024): median denoise step (`--progress json`, first step left out) of the bf16
#   folder and of `--diffusion-model INT8.safetensors`, native and portable, in this one call:
#   the ratio INT8/bf16 (the issue's target on the native path: at most 0.7).
# What the engine refuses (no INT8 loader yet, an unknown flag) is skipped with one line naming the
# command and its last output line; the rest still runs. Needs torch, transformers, safetensors and
# diffusers' wheel in .whl/ (carry it). A size or part at a time fits the device's
# 10 minutes a command: SIZES=512 PARTS=fidelity, then SIZES=1024 PARTS=fidelity, then PARTS=speed
# (PROMPT_IDS="0 1" then "2 3" halves a size's call; the fp32 dumps are kept in /tmp while the
# machine stays warm).
# A dry run of the whole flow on the tiny model and the host build (what the engine lacks is skipped):
#   SIZES=32 STEPS=2 SKIP=1 GROUP=64 BACKEND=host DEVICE=cpu SPEED_SIZE=32x32 MOSSINFER_BACKEND=host \
#     bench/h200_int8.sh build-host /tmp/int8-dry hip/tests/data/tiny-moss
set -uo pipefail
if [[ $# -lt 2 || $1 == -h || $1 == --help ]]; then
  awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BIN=$1
OUT=$2
MODEL=${3:-/tmp/moss-random-full}
SIZES=${SIZES:-512 1024}
STEPS=${STEPS:-4}
PARTS=${PARTS:-fidelity speed}
SKIP=${SKIP:-22}                # the uncond row's skipped layer (the pipeline's default)
GROUP=${GROUP:-256}             # the rotation's group size (the tiny models' widths need 64)
BACKEND=${BACKEND:-hip}         # moss-check's backend
DEVICE=${DEVICE:-cuda}          # where the PyTorch references run
SPEED_SIZE=${SPEED_SIZE:-1024x1024}
PROMPT_IDS=${PROMPT_IDS:-0 1 2 3}  # which of the 4 prompts (a call's share; the fp32 dumps stay in /tmp)
root=$(cd "$(dirname "$0")/.." && pwd)
py="python3 $root/bench/int8_fidelity.py"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
log() { echo "$@" | tee -a "$OUT/int8.txt"; }
last() { tail -1 "$1" 2>/dev/null | cut -c1-200; }
PROMPTS=(
  "A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
  "An old lighthouse on a rocky coast at dusk, waves breaking, oil painting."
  "A red vintage bicycle leaning against a yellow wall with a blue door, street photography."
  "A bowl of ramen with a soft-boiled egg and green onions, steam rising, top-down view."
)
[[ -x $BIN/moss-infer-hip && -x $BIN/moss-check ]] || { log "FAIL $BIN has no moss-infer-hip / moss-check"; exit 2; }
if [[ ! -f $MODEL/transformer/diffusion_pytorch_model.safetensors ]]; then
  "$root/tools/random_model.sh" "$MODEL" "$BIN" >"$OUT/model.log" 2>&1 || { log "FAIL writing the random model: $(last "$OUT/model.log")"; exit 1; }
fi
MODEL=$(cd "$MODEL" && pwd)  # the INT8 folder links to it

# The INT8 file: the engine's quantize, else the PyTorch reference's (the same format).
int8=$OUT/dit_int8.safetensors
if [[ ! -f $int8 ]]; then
  t0=$(date +%s)
  if "$BIN/moss-infer-hip" quantize --model "$MODEL" --out "$int8" --group-size "$GROUP" >"$OUT/quantize.log" 2>&1; then
    log "quantize (engine): $(( $(date +%s) - t0 )) s, $(stat -c %s "$int8") bytes"
  else
    log "SKIP engine quantize: $(last "$OUT/quantize.log"); the INT8 file from bench/int8_convrot_ref.py instead"
    rm -f "$int8"
    python3 "$root/bench/int8_convrot_ref.py" --quantize-dit "$MODEL" "$int8" --group-size "$GROUP" >>"$OUT/quantize.log" 2>&1 ||
      { log "FAIL bench/int8_convrot_ref.py --quantize-dit: $(last "$OUT/quantize.log")"; exit 1; }
  fi
fi
# A folder like MODEL whose transformer is the INT8 file (what moss-check official loads).
int8_model=$OUT/int8-model
if [[ ! -d $int8_model ]]; then
  mkdir -p "$int8_model/transformer"
  for e in "$MODEL"/*; do [[ $(basename "$e") == transformer ]] || ln -s "$e" "$int8_model/"; done
  ln -s "$MODEL/transformer/config.json" "$int8_model/transformer/config.json"
  ln -s "$int8" "$int8_model/transformer/diffusion_pytorch_model.safetensors"
fi

if [[ " $PARTS " == *" fidelity "* ]]; then
  for size in $SIZES; do
    dumps=() ids=()
    for i in $PROMPT_IDS; do
      dump=/tmp/int8-fp32-$(basename "$MODEL")-$size-$STEPS-$SKIP-$i.safetensors
      if [[ ! -f $dump ]]; then
        t0=$(date +%s)
        python3 "$root/tools/golden/dump_official.py" --model "$MODEL" --pipeline-module "$root/tools/golden/standin_pipeline.py" \
          --dtype float32 --device "$DEVICE" --prompt "${PROMPTS[$i]}" --negative "" --seed $((42 + i)) --height "$size" --width "$size" \
          --steps "$STEPS" --cfg 3 --skip-layers "$SKIP" --wheels "$root/.whl" --out "$dump" >"$OUT/dump-$size-$i.log" 2>&1 ||
          { log "FAIL fp32 dump $size prompt $i: $(last "$OUT/dump-$size-$i.log")"; exit 3; }
        log "fp32 dump $size prompt $i: $(( $(date +%s) - t0 )) s"
      fi
      dumps+=("$dump") ids+=("$i")
    done
    refs=$OUT/refs-$size.safetensors
    t0=$(date +%s)
    $py refs --model "$MODEL" --int8 "$int8" --device "$DEVICE" --out "$refs" "${dumps[@]}" >"$OUT/refs-$size.log" 2>&1 ||
      { log "FAIL references $size: $(last "$OUT/refs-$size.log")"; exit 3; }
    log "references $size (bf16, INT8, INT8 + int8 QK^T): $(( $(date +%s) - t0 )) s"
    engine_args=()
    for path in native portable; do
      logs=() npys=() base=()
      for j in "${!dumps[@]}"; do
        i=${ids[$j]}
        swapped=$OUT/dump-$size-$i-int8ref.safetensors
        $py swap "${dumps[$j]}" "$refs" int8ref "$swapped" --index "$j"
        l=$OUT/engine-$path-$size-$i.log
        MOSSINFER_KERNELS=$path timeout 300 "$BIN/moss-check" official --backend "$BACKEND" --model "$int8_model" --dump "$swapped" \
          --stages dit >"$l" 2>&1
        rc=$?
        logs+=("$l")
        grep -q "final_latent" "$l" && continue
        log "SKIP engine INT8 $path $size prompt $i (moss-check rc $rc): $($py why "$l")"
        # End to end instead, through --diffusion-model: the text states are then the engine's own
        # (bf16 text encoder), so its bf16 folder's run against fp32 is printed beside as a baseline.
        run=("$BIN/moss-infer-hip" --model "$MODEL" --prompt "${PROMPTS[$i]}" --negative "" --seed $((42 + i))
             --size "${size}x$size" --steps "$STEPS" --cfg 3 --skip-layers "$SKIP" --quiet)
        e=$OUT/e2e-$path-$size-$i
        MOSSINFER_KERNELS=$path timeout 300 "${run[@]}" --diffusion-model "$int8" --latent-out "$e.npy" >"$e.log" 2>&1 ||
          log "SKIP engine INT8 $path $size prompt $i end to end: $($py why "$e.log")"
        MOSSINFER_KERNELS=$path timeout 300 "${run[@]}" --latent-out "$e-bf16.npy" >"$e-bf16.log" 2>&1 ||
          log "SKIP engine bf16 $path $size prompt $i end to end: $($py why "$e-bf16.log")"
        npys+=("$e.npy") base+=("$e-bf16.npy")
      done
      engine_args+=(--engine "$path=$(IFS=,; echo "${logs[*]}")")
      if [[ ${#npys[@]} -gt 0 ]]; then
        engine_args+=(--engine-npy "$path e2e=$(IFS=,; echo "${npys[*]}")")
        engine_args+=(--info-npy "$path bf16 e2e-fp32=fp32:$(IFS=,; echo "${base[*]}")")
      fi
    done
    log "== fidelity ${size}x$size, $STEPS steps, prompts $PROMPT_IDS as rows 0.. (relative L2 of the final latents) =="
    $py table "$refs" "${engine_args[@]}" | tee -a "$OUT/int8.txt"
  done
fi

if [[ " $PARTS " == *" speed "* ]]; then
  log "== step time $SPEED_SIZE, $((STEPS + 2)) steps (median, the first left out) =="
  for path in native portable; do
    declare -A sec=()
    for kind in bf16 int8; do
      extra=()
      [[ $kind == int8 ]] && extra=(--diffusion-model "$int8")
      l=$OUT/speed-$path-$kind.log
      MOSSINFER_KERNELS=$path timeout 300 "$BIN/moss-infer-hip" --model "$MODEL" "${extra[@]}" --prompt "${PROMPTS[0]}" \
        --size "$SPEED_SIZE" --steps $((STEPS + 2)) --skip-layers "$SKIP" --seed 7 --latent-out "$OUT/speed-$path-$kind.npy" --progress json >"$l" 2>&1
      rc=$?
      s=$($py steps "$l")
      if [[ $rc -ne 0 || $s == none ]]; then
        log "SKIP $path $kind run (rc $rc): $($py why "$l")"
        s=none
      fi
      sec[$kind]=$s
    done
    if [[ ${sec[bf16]} != none && ${sec[int8]} != none ]]; then
      log "$path: bf16 ${sec[bf16]} s, INT8 ${sec[int8]} s a step: INT8/bf16 $(python3 -c "print(f'{${sec[int8]} / ${sec[bf16]}:.3f}')")"
    else
      log "$path: bf16 ${sec[bf16]} s, INT8 ${sec[int8]} s a step: no ratio"
    fi
    unset sec
  done
fi
exit 0
