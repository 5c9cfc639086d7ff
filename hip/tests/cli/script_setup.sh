# Sourced by the CLI test scripts with their arguments (BINARY MODEL_DIR ...): BIN and MODEL as
# absolute paths (the scripts run the binary from inside WORK), HERE (this folder, png_tool.py's),
# a scratch folder WORK removed at exit, the passed/failed counters the script's summary reads and
# the verdict helpers below, so that every script counts and prints its results the same way.
set -u
BIN=$(realpath "$1")
MODEL=$(realpath "$2")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
passed=0
failed=0

# ok NAME / bad NAME [WHY]: count and print one result.
ok() { passed=$((passed + 1)); echo "PASS $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1${2+: $2}"; }

# mismatch STATUS PATTERN RC OUTPUT: why a run that exited RC printing OUTPUT is not the expected
# one (exit STATUS, output matching the extended regex PATTERN); nothing when it is.
mismatch() {
  local status=$1 pattern=$2 rc=$3 out=$4
  if [[ $rc -ne $status ]]; then echo "exit $rc, expected $status"
  elif ! grep -qE -- "$pattern" <<<"$out"; then echo "output does not match /$pattern/"; fi
}

# verdict NAME WHY OUTPUT [head|tail]: PASS when WHY is empty, else FAIL with WHY and five lines
# (the first by default, or the last) of the run's OUTPUT, indented.
verdict() {
  local name=$1 why=$2 out=$3 show=${4:-head}
  if [[ -z $why ]]; then
    ok "$name"
  else
    bad "$name" "$why"
    "$show" -5 <<<"$out" | sed 's/^/    /'
  fi
}
