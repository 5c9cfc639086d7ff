#!/usr/bin/env bash
# The GPU-pipeline checks of issue 7 on a full-size random-weight model, in one go on a GPU
# machine: resident vs streamed DiT (2 and 17 resident blocks) give byte-identical latents, the
# memory peaks of a 1024x1024 run under a 16 GiB budget, and the refusals that must come before
# the text encoder runs. Usage: bench/h200_pipeline.sh BIN_DIR OUT_DIR [MODEL_DIR]
source "$(dirname "$0")/h200_setup.sh" pipeline.txt "$@"
passed=0
failed=0
verdict() {  # NAME OK DETAIL
  if [[ $2 == 1 ]]; then passed=$((passed + 1)); log "PASS $1: $3"; else failed=$((failed + 1)); log "FAIL $1: $3"; fi
}

random_model

# Peak device memory of a command, sampled by nvidia-smi every 50 ms (MiB in use on GPU 0).
run_measured() {  # NAME ARGS...
  local name=$1; shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$OUT/$name.mem" 2>/dev/null &
  local smi=$!
  "$BIN/moss-infer-hip" --model "$MODEL" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo $rc
}
peak_mib() { sort -n "$OUT/$1.mem" | tail -1; }
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
common=(--prompt "$prompt" --size 512x512 --steps 4 --seed 42)

rc=$(run_measured resident "${common[@]}" --latent-out "$OUT/resident.npy")
verdict resident-run "$([[ $rc == 0 ]] && echo 1)" "rc $rc; $(grep -E '^(memory plan|done)' "$OUT/resident.log" | tr '\n' ' ')"
# Budget for R resident blocks from the resident plan (bench/mossbench/engine.py budget_for_resident).
dit_peak=$(grep -oE 'DiT [0-9.]+ GiB' "$OUT/resident.log" | grep -oE '[0-9.]+' | head -1)
block=$(python3 -c "
import json,struct
f=open('$MODEL/transformer/diffusion_pytorch_model.safetensors','rb');n=struct.unpack('<Q',f.read(8))[0];h=json.loads(f.read(n))
print(sum(v['data_offsets'][1]-v['data_offsets'][0] for k,v in h.items() if k.startswith('layers.0.'))/2**30)")
for R in 2 17; do
  budget=$(PYTHONPATH="$(dirname "$0")" python3 -c \
    "from mossbench.engine import budget_for_resident as b; print(f'{b($dit_peak, 42, $block, $R):.3f}')")
  rc=$(run_measured "streamed$R" "${common[@]}" --vram-budget "$budget" --latent-out "$OUT/streamed$R.npy")
  got=$(grep -oE '[0-9]+ of [0-9]+ DiT blocks resident' "$OUT/streamed$R.log" | head -1)
  same=$(cmp -s "$OUT/resident.npy" "$OUT/streamed$R.npy" && echo 1)
  verdict "streamed-$R" "$([[ $rc == 0 && $same == 1 && $got == "$R of"* ]] && echo 1)" \
    "budget $budget GiB, rc $rc, $got, latents $([[ $same == 1 ]] && echo byte-identical || echo DIFFER); $(grep -E '^denoise 4' "$OUT/streamed$R.log")"
done
log "resident step times: $(grep -E '^denoise' "$OUT/resident.log" | tr '\n' ' ')"

rc=$(run_measured full1024 --prompt "$prompt" --size 1024x1024 --steps 3 --seed 1 --vram-budget 16 -o "$OUT/full1024.png")
verdict full-1024-budget16 "$([[ $rc == 0 && $(peak_mib full1024) -lt 18432 ]] && echo 1)" \
  "rc $rc, peak $(peak_mib full1024) MiB (limit 18432); $(grep -E '^(memory plan|done)' "$OUT/full1024.log" | tr '\n' ' ')"

for case in "small-budget:--size 512x512 --vram-budget 1.2" "huge-decode:--size 2048x2048 --vram-budget 4"; do
  name=${case%%:*}
  read -r -a extra <<<"${case#*:}"
  rc=$(run_measured "$name" --prompt "$prompt" "${extra[@]}" -o "$OUT/$name.png")
  before_te=$(grep -q '^text encoder' "$OUT/$name.log" || echo 1)
  verdict "refuse-$name" "$([[ $rc == 2 && $before_te == 1 && ! -e $OUT/$name.png ]] && echo 1)" \
    "rc $rc; $(grep -E 'moss-infer-hip:' "$OUT/$name.log" | head -1)"
done
log "$passed passed, $failed failed"
[[ $failed == 0 ]]
