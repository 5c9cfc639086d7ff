#!/usr/bin/env bash
# scripts/quickstart.sh for real on this build (issue 51): its detection's notes, the configure
# and build of THIS build folder with its own HIP_TARGET (up to date: nothing is compiled twice),
# --version and --list-devices, and the tiny-model image, on the host backend where there is no
# supported GPU (CI) saying so. No packages are installed. An AMD build folder is skipped (77):
# hip/ci/amd.sh runs its suites inside a build root, where configuring again is its own business.
# Usage: quickstart_host_test.sh BUILD_DIR
set -uo pipefail
BUILD=$1
TARGET=$(sed -n 's/^HIP_TARGET:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
[[ -n $TARGET ]] || { echo "FAIL no HIP_TARGET in $BUILD/CMakeCache.txt"; exit 1; }
[[ $TARGET == gfx* ]] && { echo "skipped: an AMD build ($TARGET)"; exit 77; }
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
out=$(MOSSINFER_BUILD_DIR=$BUILD HIP_TARGET=$TARGET MOSSINFER_QUICKSTART_NO_INSTALL=1 \
  MOSSINFER_QUICKSTART_OUT=$WORK/tiny.png bash "$ROOT/scripts/quickstart.sh" 2>&1)
rc=$?
failed=0
check() {
  if "${@:2}"; then echo "PASS $1"; else echo "FAIL $1"; failed=1; fi
}
check "exit 0" test "$rc" -eq 0
check "the override is said" grep -q "quickstart: HIP_TARGET=$TARGET given: building that instead" <<<"$out"
check "detection notes" grep -Eq '^quickstart: .*(the AMD build|the NVIDIA build|the host build)' <<<"$out"
check "version printed" grep -Eq '^architectures: ' <<<"$out"
if grep -qx 'no HIP devices' <<<"$out" || [[ $TARGET == host ]]; then
  check "host backend said" grep -q 'no supported GPU found: running the host reference backend (MOSSINFER_BACKEND=host)' <<<"$out"
  check "how slow said" grep -q 'hours for a full-size image' <<<"$out"
fi
check "tiny image written" test -s "$WORK/tiny.png"
check "done line names it" grep -Eq "^done: .*; wrote $WORK/tiny\.png$" <<<"$out"
((failed == 0)) || echo "$out" | tail -30
exit $failed
