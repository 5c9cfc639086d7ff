#!/usr/bin/env bash
# Issue 18's closing measurement on a GPU machine: the per-image time of a 10-image batch
# (--batch-count 10, the model loaded once) against ten separate runs, at 1024x1024 on a
# full-size random-weight model. Also checks that the batch's second image equals the separate
# run with its seed. Usage: bench/h200_batch.sh BIN_DIR OUT_DIR [MODEL_DIR] [STEPS]
# (SIZE=WxH and EXTRA="flags" change the size and add flags: a quick try on the tiny model.)
source "$(dirname "$0")/h200_setup.sh" batch.txt "$@"
random_model
STEPS=${4:-20}
IMAGES=10
now() { date +%s.%N; }
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
common=(--model "$MODEL" --prompt "$prompt" --size "${SIZE:-1024x1024}" --steps "$STEPS" ${EXTRA:-})

t0=$(now)
for i in $(seq 1 $IMAGES); do
  "$BIN/moss-infer-hip" "${common[@]}" --seed "$i" -o "$OUT/single-$i.png" 2>"$OUT/single-$i.log" ||
    { log "FAIL single run $i: $(tail -1 "$OUT/single-$i.log")"; exit 1; }
done
t1=$(now)
"$BIN/moss-infer-hip" "${common[@]}" --seed 1 --batch-count $IMAGES -o "$OUT/batch-%02d.png" 2>"$OUT/batch.log" ||
  { log "FAIL batch: $(tail -1 "$OUT/batch.log")"; exit 1; }
t2=$(now)
python3 - "$t0" "$t1" "$t2" "$IMAGES" <<'PY' | tee -a "$OUT/batch.txt"
import sys
t0, t1, t2, n = map(float, sys.argv[1:])
print(f"{int(n)} separate runs: {t1 - t0:.1f} s, {(t1 - t0) / n:.2f} s per image")
print(f"--batch-count {int(n)}:     {t2 - t1:.1f} s, {(t2 - t1) / n:.2f} s per image ({(t1 - t0) / (t2 - t1):.2f}x)")
PY
log "separate run 1: $(grep '^done:' "$OUT/single-1.log")"
log "batch image 1:  $(grep '^done:' "$OUT/batch.log" | head -1)"
log "batch image 2:  $(grep '^done:' "$OUT/batch.log" | sed -n 2p)"
log "$(grep '^memory plan' "$OUT/batch.log" | head -1)"
same=$(python3 hip/tests/cli/png_tool.py same-pixels "$OUT/single-2.png" "$OUT/batch-02.png" && echo 1)
log "$([[ $same == 1 ]] && echo PASS || echo FAIL) batch image 2 equals the separate run with seed 2"
