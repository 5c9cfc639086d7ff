#!/usr/bin/env bash
# amd_release.sh OUT_DIR: the AMD release in one command (issue 15; docs/amd_release.md).
# Makes the ROCm 7 build root if it is missing (scripts/amd_root.sh), builds moss-infer-hip there
# for the targets in hip/amd_targets.txt with ROCm's clang-22 against the Debian 12 sysroot (so the
# binary starts on Ubuntu 22.04 and newer), with the server compiled in from Debian 12's
# cpp-httplib source (unpacked in the root), packages it and writes
# OUT_DIR/mossinfer-VERSION-linux-hip-x86_64.tar.gz.
#
# Environment: MOSSINFER_ROCM_ROOT  the root's folder (default: build-rocm/root in the repository)
#              JOBS                 parallel build jobs (default: the number of cores)
# Needs root (chroot, mount). The build folder is build-amd-release in the repository.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: amd_release.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=${MOSSINFER_ROCM_ROOT:-$repo/build-rocm/root}
jobs=${JOBS:-$(nproc)}

bash "$repo/scripts/amd_root.sh" "$root"
source "$repo/scripts/amd_root_mounts.sh"
root_mount_repo "$root" "$repo"
trap 'root_unmount "$root"' EXIT

# The folder the release links the HIP runtime from holds that one library and nothing else
# (hip/cmake/release-sysroot.cmake).
mkdir -p "$root/opt/mossinfer-hip-link"
ln -sfn /usr/lib/x86_64-linux-gnu/libamdhip64.so.7 "$root/opt/mossinfer-hip-link/libamdhip64.so"

# The full licence text of every library the binary carries (docs/amd_release.md lists them).
licenses=$repo/build-amd-release/licenses
bash "$repo/scripts/collect_licenses.sh" "$root" "$licenses"

targets=$(tr -s ' \n' ';' < "$repo/hip/amd_targets.txt" | sed 's/;$//')
t0=$SECONDS
chroot "$root" env -C /src bash -euo pipefail -c "
  cmake -S hip -B build-amd-release -G Ninja '-DHIP_TARGET=$targets' -DROCM_PATH=/usr \
    -DCMAKE_TOOLCHAIN_FILE=/src/hip/cmake/release-sysroot.cmake -DMOSSINFER_STATIC_DEPS=ON \
    -DMOSSINFER_STATIC_LIBSTDCXX=ON -DMOSSINFER_TESTS=OFF -DMOSSINFER_HIP_TOOLS=OFF \
    -DMOSSINFER_SERVER=ON -DMOSSINFER_HTTPLIB_SOURCE=/opt/mossinfer-src/cpp-httplib \
    -DMOSSINFER_BUNDLED_LICENSES=/src/build-amd-release/licenses >/dev/null
  cmake --build build-amd-release -j$jobs --target moss-infer-hip
  cd build-amd-release && cpack -G TGZ -B /src/build-amd-release/package >/dev/null"
name=$(cd "$repo/build-amd-release/package" && ls mossinfer-*-linux-hip-x86_64.tar.gz)
cp "$repo/build-amd-release/package/$name" "$out/$name"
echo "amd_release: $out/$name ($(du -h "$out/$name" | cut -f1), built in $((SECONDS - t0)) s)"
