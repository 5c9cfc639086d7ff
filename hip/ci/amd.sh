#!/usr/bin/env bash
# CI's AMD part (issue 15; docs/amd_release.md), as root on Debian 12: make the ROCm 7 root
# (scripts/amd_root.sh), build and package the release (scripts/amd_release.sh), build the
# documented AMD configuration with the root's own GCC 15 / clang-22 (tools and tests on,
# warnings as errors) and run its ctest suites, check the tarball as a user gets it
# (hip/ci/amd_package_check.sh), and check the code objects inside the shipped binary with the
# root's LLVM tools, which must hold the kernels that check_device.sh found compiling the sources
# with clang-19 (KERNELS_CLANG19, written by .ci/run's check_device.sh --kernels-out), for every
# target of hip/amd_targets.txt; a target clang-19 does not know (gfx1153) must hold the same
# kernels as the others (docs/amd_targets.md); then the shipped server's web page in headless
# Chromium. Prints each part's time at the end.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
root=${MOSSINFER_ROCM_ROOT:-$repo/build-rocm/root}
jobs=${JOBS:-$(nproc)}
kernels_clang19=${KERNELS_CLANG19:-$repo/build/kernels-clang19.txt}
export MOSSINFER_ROCM_ROOT=$root
[[ -f $kernels_clang19 ]] || { echo "amd: $kernels_clang19 missing: run check_device.sh --kernels-out first" >&2; exit 1; }
case $kernels_clang19 in
  "$repo"/*) ;;
  *) echo "amd: $kernels_clang19 must lie inside the repository (the root sees it as /src)" >&2; exit 1 ;;
esac

read -ra targets < "$repo/hip/amd_targets.txt"
# The root-native build compiles the device code for one target of each matrix layout (gfx11,
# gfx12): the release build compiles all ten with the same clang-22, and check_device checks
# them; ten here would add about ten CI minutes for no new check (docs/amd_targets.md).
root_native_targets="gfx1100;gfx1201"
times=()
part() {  # NAME COMMAND...
  local name=$1 t0=$SECONDS
  shift
  echo "== amd: $name"
  "$@"
  times+=("$(printf '%-34s %5d s' "$name" $((SECONDS - t0)))")
}
in_root() { chroot "$root" env -C /src "$@"; }

part "ROCm root (mmdebstrap + apt)" bash "$repo/scripts/amd_root.sh" "$root"
part "release build and package" bash "$repo/scripts/amd_release.sh" "$repo/build-amd-release/out"
tarball=$(ls "$repo"/build-amd-release/out/mossinfer-*-linux-hip-x86_64.tar.gz)

source "$repo/scripts/amd_root_mounts.sh"
root_mount_repo "$root" "$repo"
trap 'root_unmount "$root"' EXIT
# The documented configuration (README), ROCM_PATH=/usr for Debian's packages.
part "root-native build (GCC 15, clang-22)" in_root bash -euo pipefail -c "
  cmake -S hip -B build-amd -G Ninja '-DHIP_TARGET=$root_native_targets' -DROCM_PATH=/usr >/dev/null
  cmake --build build-amd -j$jobs"
# The device label is check_device.sh with clang-19, which the root does not have (it runs on the host).
part "ctest on the AMD build" in_root ctest --test-dir build-amd --output-on-failure -LE device -j"$jobs"
rel=${tarball#"$repo"/}
part "release tarball checks" in_root bash hip/ci/amd_package_check.sh "$rel" build-amd/moss-check hip/tests/data
unpacked=build-amd-release/shipped
rm -rf "$repo/$unpacked" && mkdir -p "$repo/$unpacked" && tar xzf "$tarball" -C "$repo/$unpacked" --strip-components=1
# The kernels expected in the binary: clang-19's, for a target clang-19 does not know the first
# target's list under its name (every target builds the same kernels from the same sources), and
# the self-test's own kernels (hip/ci/self_test_kernels.txt). The list also tells the binary's
# check which kernels are matrix kernels, on every target.
expected=$repo/build-amd-release/kernels-expected.txt
ref=${targets[0]}
grep -q "^$ref " "$kernels_clang19" || { echo "amd: no $ref kernels in $kernels_clang19" >&2; exit 1; }
{
  cat "$kernels_clang19"
  for a in "${targets[@]}"; do
    grep -q "^$a " "$kernels_clang19" || sed -n "s/^$ref /$a /p" "$kernels_clang19"
    grep -v '^#' "$repo/hip/ci/self_test_kernels.txt" | sed "s/^/$a /"
  done
} | sort -u > "$expected"
part "check_device on the shipped binary" in_root env CLANG=clang++-22 LLVM_READELF=llvm-readelf-22 \
  LLVM_OBJDUMP=llvm-objdump-22 LLVM_NM=llvm-nm-22 OFFLOAD_BUNDLER=clang-offload-bundler-22 \
  LLVM_OBJCOPY=llvm-objcopy-22 bash hip/check_device.sh --binary "$unpacked/bin/moss-infer-hip" \
  --matrix-list "${expected#"$repo"/}" --kernels-out build-amd-release/kernels-shipped.txt
if ! diff "$expected" "$repo/build-amd-release/kernels-shipped.txt" > "$repo/build-amd-release/kernels.diff"; then
  echo "amd: the shipped binary's kernels differ from the sources' (clang-19):" >&2
  cat "$repo/build-amd-release/kernels.diff" >&2
  exit 1
fi
for a in "${targets[@]}"; do
  if grep -q "^$a " "$kernels_clang19"; then how="the same as the clang-19 compile of the sources"
  else how="the same as $ref's (clang-19 does not know $a)"; fi
  echo "amd: $a: $(grep -c "^$a " "$expected") kernels in the shipped binary, $how"
done
# The shipped server's web page in headless Chromium: the browser and Selenium run on the host
# (.ci/run installs them), `serve` and the CLI from the unpacked tarball inside the root through
# chroot (MOSSINFER_TEST_CHROOT); both see the same network.
part "web page of the shipped serve in Chromium" env MOSSINFER_TEST_CHROOT="$root" python3 \
  "$repo/hip/tests/server/web_browser_test.py" "/src/$unpacked/bin/moss-infer-hip" /src/hip/tests/data/tiny-moss
echo "== amd: package $(basename "$tarball"), $(du -k "$tarball" | cut -f1) KiB"
printf '%s\n' "${times[@]}"
