#!/usr/bin/env bash
# The GPU measurements of issues 45, 48 and 50 (and issue 47's and 49's figures) in one call on the
# GPU machine, from the bundle bench/make_carry.sh packs (run with carry [".carry"]):
#   set -o pipefail; bash bench/h200_issues45_48_50.sh 2>&1 | tee $OUT/all.log
# PHASE=files (default): bench's ceilings on this card (issue 50), the quantize time of the full-size
# DiT (issue 49, CPU), then the full-size random model from its folder against the Comfy-Org single
# files (issue 45: load time, peak host memory, latents bit for bit). PHASE=runs: the samplers'
# image times (issue 48) and the LoRA merge, 8 against 50 steps and the restore (issue 47).
# PHASE=layouts: the issue-45 measurement alone.
# Every step has a time limit, so one that hangs costs its limit, not the call.
set -u
tar -C .carry -xJf .carry/bundle.tar.xz
export LD_LIBRARY_PATH=$PWD/.carry/lib PYTHONUNBUFFERED=1
B=.carry/bin
M=/tmp/moss-random-full
R=$OUT/results
mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# The scripts read GNU time's -v lines; a machine without it gets the stand-in (bench/time_v.py).
if [[ ! -x /usr/bin/time ]]; then
  cp bench/time_v.py /usr/bin/time 2>/dev/null || echo "no /usr/bin/time and it cannot be installed"
fi
if [[ ! -f $M/transformer/diffusion_pytorch_model.safetensors ]]; then
  timeout 200 tools/random_model.sh "$M" "$B" >"$R/model.log" 2>&1
  echo "== random model rc $?"
fi
case ${PHASE:-files} in
  files | layouts)
    [[ ${PHASE:-files} == layouts ]] || {
    timeout 150 "$B/moss-infer-hip" bench --steps 2 --size 512x512 >"$R/bench.log" 2>&1
    echo "== bench rc $?"; grep -iE "ceiling|^device" "$R/bench.log" | head -5
    timeout 120 bash bench/int8_quantize_full.sh "$B" 2>&1 | tail -3
    echo "== quantize rc $?"
    }
    # The opening of both layouts on this machine's CPU (sparse files: seconds, no disk).
    timeout 60 bash bench/model_files_mapping.sh "$B" 9 2>&1 | tee "$R/mapping.txt"
    # Layouts phase alone: room for dropping and reading back both layouts (52 GB) before the runs.
    RUNS=${RUNS:-2} timeout "$([[ ${PHASE:-files} == layouts ]] && echo 380 || echo 330)" \
      bash bench/h200_model_files.sh "$B" "$R/model_files" "$M" 4 >/dev/null 2>&1
    echo "== model_files rc $?"
    cat "$R/model_files/model_files.txt"
    rm -rf "$R/model_files/layouts" "$M-layouts" "$R/model_files"/*.npy
    ;;
  runs)
    timeout 200 bash bench/h200_samplers.sh "$B" "$R/samplers" "$M" >/dev/null 2>&1
    echo "== samplers rc $?"
    cat "$R/samplers/samplers.txt"
    timeout 300 bash bench/h200_lora.sh "$B" "$R/lora" "$M" >/dev/null 2>&1
    echo "== lora rc $?"
    cat "$R/lora/lora.txt"
    rm -f "$R/lora"/*.safetensors "$R"/*/*.npy
    ;;
esac
