# Sourced by the CLI test scripts with their arguments (BINARY MODEL_DIR): BIN and MODEL, a
# scratch folder WORK removed at exit, and the passed/failed counters the script's summary reads.
set -u
BIN=$1
MODEL=$2
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0
