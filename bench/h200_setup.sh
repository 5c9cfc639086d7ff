# Sourced by the GPU bench scripts that time the full-size random-weight model (h200_*.sh), with
# the name of their results file and their own arguments:
#   source "$(dirname "$0")/h200_setup.sh" RESULTS.txt "$@"   (BIN_DIR OUT_DIR [MODEL_DIR] ...)
# Sets BIN, OUT (created), MODEL (default /tmp/moss-random-full), log() (prints a line and appends
# it to OUT/RESULTS.txt) and random_model (the script calls it after its own quick checks: writes
# the random model with tools/random_model.sh, its log OUT/model.log, and logs how long that took,
# unless MODEL already holds a DiT), and alternate (below). Run from the repository root.
set -uo pipefail
BIN=$2
OUT=$3
MODEL=${4:-/tmp/moss-random-full}
mkdir -p "$OUT"
RESULTS=$OUT/$1
log() { echo "$@" | tee -a "$RESULTS"; }
random_model() {
  [[ -f $MODEL/transformer/diffusion_pytorch_model.safetensors ]] && return
  local t0
  t0=$(date +%s.%N)
  tools/random_model.sh "$MODEL" "$BIN" >"$OUT/model.log" 2>&1 ||
    { log "FAIL writing the random model"; cat "$OUT/model.log"; exit 1; }
  log "random model written in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
}

# alternate ROUND A B: runs the commands `A ROUND` and `B ROUND`, A first in odd rounds and B first
# in even ones, so that neither always runs on the caches and clocks the other one warmed.
alternate() {
  if (($1 % 2)); then "$2" "$1"; "$3" "$1"; else "$3" "$1"; "$2" "$1"; fi
}
