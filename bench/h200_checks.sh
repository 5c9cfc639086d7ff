#!/usr/bin/env bash
# Every device check in one go on a GPU machine: the kernel checks (each kernel against its host
# replay, with timings), the tiny-model pipeline check against the goldens, and the golden-file
# tools. Logs go to OUT_DIR/checks-<check>.log; the summary line of each is printed last.
# Usage: bench/h200_checks.sh BIN_DIR OUT_DIR [CHECK ...]   (default: every check that is built)
# CHECK: a moss-check subcommand, or kernels-runtime|kernels-dit|kernels-te|kernels-vae (a family
# of `moss-check kernels`).
# CHECK_TIMEOUT (seconds, default 300) bounds each tool, so a hung kernel costs only that.
set -uo pipefail
BIN=$1
OUT=$2
shift 2
DATA=hip/tests/data
TINY=$DATA/tiny-moss
mkdir -p "$OUT"
# The kernel checks are the families of one subcommand, `moss-check kernels --family F`.
declare -A SUB=(
  [kernels-runtime]="kernels --family runtime"
  [kernels-dit]="kernels --family dit"
  [kernels-te]="kernels --family te"
  [kernels-vae]="kernels --family vae"
)
declare -A ARGS=(
  [kernels-vae]="--data $DATA"
  [pipeline]="--model $TINY --data $DATA"
  [te-run]="--model $TINY --golden $DATA/golden_text_encoder.safetensors"
  [dit-run]="--model $TINY --golden $DATA/golden_dit.safetensors"
)
checks=("$@")
[[ ${#checks[@]} -eq 0 ]] && checks=(kernels-runtime kernels-dit kernels-te kernels-vae pipeline te-run dit-run)
[[ -x $BIN/moss-check ]] || { echo "h200_checks: $BIN/moss-check not found" >&2; exit 2; }
summary=()
for c in "${checks[@]}"; do
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/moss-check" ${SUB[$c]:-$c} ${ARGS[$c]:-} >"$OUT/checks-$c.log" 2>&1
  rc=$?
  summary+=("moss-check ${SUB[$c]:-$c}: rc $rc, $(( $(date +%s) - t0 )) s, $(grep -E '[0-9]+ passed' "$OUT/checks-$c.log" | tail -1)")
  grep -E '^FAIL|first bad|stopped by' "$OUT/checks-$c.log" | head -20
done
# The same device checks on a dump in dump_official.py's format (made from the tiny goldens).
if [[ " ${checks[*]} " == *" dit-run "* ]]; then
  "$BIN/moss-check" official-fixture --data "$DATA" --out "$OUT/tiny-dump.safetensors" >"$OUT/checks-dump.log" 2>&1
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/moss-check" te-run --model "$TINY" --golden "$OUT/tiny-dump.safetensors" >>"$OUT/checks-dump.log" 2>&1
  rc1=$?
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/moss-check" dit-run --model "$TINY" --golden "$OUT/tiny-dump.safetensors" --steps 2 >>"$OUT/checks-dump.log" 2>&1
  rc2=$?
  summary+=("official-dump checks: te-run rc $rc1, dit-run rc $rc2; $(grep -E '[0-9]+ passed' "$OUT/checks-dump.log" | tr '\n' ' ')")
  grep -E '^FAIL' "$OUT/checks-dump.log" | head -20
  rm -f "$OUT/tiny-dump.safetensors"
fi
printf '%s\n' "${summary[@]}" | tee "$OUT/checks-summary.txt"
