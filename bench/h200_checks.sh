#!/usr/bin/env bash
# Every device check in one go on a GPU machine: the kernel checks (each kernel against its host
# replay, with timings), the tiny-model pipeline check against the goldens, and the golden-file
# tools. Logs go to OUT_DIR/checks-<tool>.log; the summary line of each is printed last.
# Usage: bench/h200_checks.sh BIN_DIR OUT_DIR [TOOL ...]   (default: every check that is built)
# CHECK_TIMEOUT (seconds, default 300) bounds each tool, so a hung kernel costs only that.
set -uo pipefail
BIN=$1
OUT=$2
shift 2
DATA=hip/tests/data
TINY=$DATA/tiny-moss
mkdir -p "$OUT"
declare -A ARGS=(
  [hip_check]=""
  [hip_dit_kernel_check]=""
  [hip_te_kernel_check]=""
  [hip_vae_check]="--data $DATA"
  [hip_pipeline_check]="--model $TINY --data $DATA"
  [hip_te_check]="--model $TINY --golden $DATA/golden_text_encoder.safetensors"
  [hip_dit_run]="--model $TINY --golden $DATA/golden_dit.safetensors"
)
tools=("$@")
[[ ${#tools[@]} -eq 0 ]] && tools=(hip_check hip_dit_kernel_check hip_te_kernel_check hip_vae_check hip_pipeline_check hip_te_check hip_dit_run)
summary=()
for t in "${tools[@]}"; do
  [[ -x $BIN/$t ]] || { summary+=("$t: not built"); continue; }
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/$t" ${ARGS[$t]:-} >"$OUT/checks-$t.log" 2>&1
  rc=$?
  summary+=("$t: rc $rc, $(( $(date +%s) - t0 )) s, $(grep -E '[0-9]+ passed' "$OUT/checks-$t.log" | tail -1)")
  grep -E '^FAIL|first bad|stopped by' "$OUT/checks-$t.log" | head -20
done
# The same device tools on a dump in dump_official.py's format (made from the tiny goldens).
if [[ -x $BIN/golden_check && -x $BIN/hip_te_check && -x $BIN/hip_dit_run && " ${tools[*]} " == *" hip_dit_run "* ]]; then
  "$BIN/golden_check" official-fixture --data "$DATA" --out "$OUT/tiny-dump.safetensors" >"$OUT/checks-dump.log" 2>&1
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/hip_te_check" --model "$TINY" --golden "$OUT/tiny-dump.safetensors" >>"$OUT/checks-dump.log" 2>&1
  rc1=$?
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/hip_dit_run" --model "$TINY" --golden "$OUT/tiny-dump.safetensors" --steps 2 >>"$OUT/checks-dump.log" 2>&1
  rc2=$?
  summary+=("official-dump tools: hip_te_check rc $rc1, hip_dit_run rc $rc2; $(grep -E '[0-9]+ passed' "$OUT/checks-dump.log" | tr '\n' ' ')")
  grep -E '^FAIL' "$OUT/checks-dump.log" | head -20
  rm -f "$OUT/tiny-dump.safetensors"
fi
printf '%s\n' "${summary[@]}" | tee "$OUT/checks-summary.txt"
