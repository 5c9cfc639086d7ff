# Sourced by the GPU bench scripts that time the full-size random-weight model, with the name of
# their results file and their own arguments:
#   source "$(dirname "$0")/random_model_setup.sh" RESULTS.txt "$@"   (BIN_DIR OUT_DIR [MODEL_DIR] ...)
# Sets BIN, OUT (created), MODEL (default /tmp/moss-random-full), log() (prints a line and appends
# it to OUT/RESULTS.txt) and random_model (the script calls it after its own quick checks: writes
# the random model with tools/random_model.sh, its log OUT/model.log, unless MODEL already holds a
# DiT). Run from the repository root.
set -uo pipefail
BIN=$2
OUT=$3
MODEL=${4:-/tmp/moss-random-full}
mkdir -p "$OUT"
RESULTS=$OUT/$1
log() { echo "$@" | tee -a "$RESULTS"; }
random_model() {
  [[ -f $MODEL/transformer/diffusion_pytorch_model.safetensors ]] && return
  tools/random_model.sh "$MODEL" "$BIN" >"$OUT/model.log" 2>&1 || { log "FAIL writing the random model"; exit 1; }
}
