#!/usr/bin/env bash
# Every device check in one go on a GPU machine: the kernel checks (each kernel against its host
# replay, with timings), the golden stages on the GPU backend (te, dit, vae, e2e --backend hip: the
# tiny model against the goldens, with the distance to the host backend), and `official
# --backend hip` on a dump in dump_official.py's format. Logs go to OUT_DIR/checks-<check>.log;
# the summary line of each is printed last.
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
  [te]="--backend hip --model $TINY --golden $DATA/golden_text_encoder.safetensors"
  [dit]="--backend hip --model $TINY --golden $DATA/golden_dit.safetensors"
  [vae]="--backend hip --model $TINY --golden $DATA/golden_vae.safetensors"
  [e2e]="--backend hip --model $TINY --golden-dit $DATA/golden_dit.safetensors --golden-te $DATA/golden_text_encoder.safetensors"
)
checks=("$@")
[[ ${#checks[@]} -eq 0 ]] && checks=(kernels-runtime kernels-dit kernels-te kernels-vae te dit vae e2e official)
[[ -x $BIN/moss-check ]] || { echo "h200_checks: $BIN/moss-check not found" >&2; exit 2; }
summary=()
for c in "${checks[@]}"; do
  [[ $c == official ]] && continue  # below: it needs a dump
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/moss-check" ${SUB[$c]:-$c} ${ARGS[$c]:-} >"$OUT/checks-$c.log" 2>&1
  rc=$?
  summary+=("moss-check ${SUB[$c]:-$c}: rc $rc, $(( $(date +%s) - t0 )) s, $(grep -E '[0-9]+ passed' "$OUT/checks-$c.log" | tail -1)")
  grep -E '^FAIL|first bad|stopped by' "$OUT/checks-$c.log" | head -20
done
# The text encoder and the DiT on the GPU on a dump in dump_official.py's format (made from the
# tiny goldens): its text states, step-0 velocities and the first two sampler steps.
if [[ " ${checks[*]} " == *" official "* ]]; then
  "$BIN/moss-check" official-fixture --data "$DATA" --out "$OUT/tiny-dump.safetensors" >"$OUT/checks-dump.log" 2>&1
  timeout "${CHECK_TIMEOUT:-300}" "$BIN/moss-check" official --backend hip --model "$TINY" \
    --dump "$OUT/tiny-dump.safetensors" --stages te,dit0,dit --steps 2 >>"$OUT/checks-dump.log" 2>&1
  rc=$?
  summary+=("official-dump checks (official --backend hip): rc $rc; $(grep -E '[0-9]+ passed' "$OUT/checks-dump.log" | tr '\n' ' ')")
  grep -E '^FAIL' "$OUT/checks-dump.log" | head -20
  rm -f "$OUT/tiny-dump.safetensors"
fi
printf '%s\n' "${summary[@]}" | tee "$OUT/checks-summary.txt"
