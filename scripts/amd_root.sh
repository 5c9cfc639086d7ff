#!/usr/bin/env bash
# amd_root.sh ROOT: make the ROCm 7 build root if it is missing (issue 15; recipe and timings in
# docs/amd_release.md). Needs root and Debian's mmdebstrap; the host's apt sources stay as they are.
#
#   ROOT/               a Debian sid root with Debian's ROCm 7.2.4 (experimental): clang-22, lld-22,
#                       hipcc, libamdhip64-dev, rocm-device-libs-22, and the root's own GCC, CMake and
#                       -dev packages (the "root-native" build compiles against these)
#   ROOT/sysroot/       a Debian 12 (bookworm) tree: glibc 2.36 headers, GCC 12's libstdc++ and the
#                       static PCRE2, utf8proc, libpng and zlib. The release binary is compiled and
#                       linked against it, so it needs no newer glibc than the oldest distribution we
#                       target (docs/amd_release.md), while clang-22 and the device libraries come
#                       from the root.
#   ROOT/opt/mossinfer-src/cpp-httplib/
#                       Debian 12's source package of cpp-httplib (apt-get source, Debian's patches
#                       applied): the release compiles its single header in, as the Debian 12
#                       host build links the same source compiled by Debian (libcpp-httplib-dev).
# A finished root carries ROOT/.mossinfer-root with the package lists it was made from; a root
# whose stamp differs (or a half-made one) is made again from nothing.
set -euo pipefail

root=${1:?usage: amd_root.sh ROOT}
mirror=${MOSSINFER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root_packages="libamdhip64-dev hipcc rocm-device-libs-22 clang-22 lld-22 llvm-22 cmake ninja-build g++ \
pkg-config libpcre2-dev libutf8proc-dev nlohmann-json3-dev libpng-dev zlib1g-dev libgtest-dev file python3 dpkg-dev"
sysroot_packages="libc6-dev libstdc++-12-dev libgcc-12-dev linux-libc-dev libpcre2-dev libutf8proc-dev \
libpng-dev zlib1g-dev nlohmann-json3-dev"
# Source packages of bookworm the release compiles in (dpkg-dev above unpacks them).
source_packages="cpp-httplib"
stamp="root: $root_packages | sysroot bookworm: $sysroot_packages | sources bookworm: $source_packages"

if [[ -f $root/.mossinfer-root && $(cat "$root/.mossinfer-root") == "$stamp" ]]; then
  echo "amd_root: $root is ready"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || { echo "amd_root: making the ROCm root needs root (mmdebstrap, chroot)" >&2; exit 2; }
if ! command -v mmdebstrap >/dev/null; then
  apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
fi

# The mirror's Release files are past their Valid-Until: apt must not reject them.
no_expiry='Acquire::Check-Valid-Until "false"'
if [[ -d $root ]]; then
  # A bind mount of the repository is on the same file system: rm would follow it. Nothing may
  # be mounted under a root that is deleted.
  source "$(dirname "${BASH_SOURCE[0]}")/amd_root_mounts.sh"
  root_unmount "$root"
  if [[ -n $(root_mounts "$root") ]]; then
    echo "amd_root: still mounted under $root: $(root_mounts "$root" | tr '\n' ' '); not deleting it" >&2
    exit 1
  fi
  rm -rf --one-file-system "$root"
fi
mkdir -p "$(dirname "$root")"
t0=$SECONDS
mmdebstrap --quiet --variant=apt --aptopt="$no_expiry" --include=ca-certificates \
  sid "$root" "deb $mirror sid main" "deb $mirror experimental main"
echo "deb-src $mirror bookworm main" > "$root/etc/apt/sources.list.d/bookworm-src.list"
chroot "$root" apt-get -o Acquire::Check-Valid-Until=false update -q >/dev/null
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -o Acquire::Check-Valid-Until=false install -y -q \
  --no-install-recommends -t experimental $root_packages >/dev/null
echo "amd_root: sid root with ROCm 7 in $((SECONDS - t0)) s"
t1=$SECONDS
mmdebstrap --quiet --variant=apt --aptopt="$no_expiry" --include="${sysroot_packages// /,}" \
  bookworm "$root/sysroot" "deb $mirror bookworm main"
echo "amd_root: bookworm sysroot in $((SECONDS - t1)) s"
mkdir -p "$root/opt/mossinfer-src"
for p in $source_packages; do
  chroot "$root" env -C /opt/mossinfer-src bash -euo pipefail -c "
    apt-get source -q $p/bookworm >/dev/null
    rm -f ${p}_*  # the .dsc and tarballs; the unpacked, patched tree stays
    mv $p-*/ $p"
done
echo "amd_root: bookworm sources: $(ls "$root/opt/mossinfer-src" | tr '\n' ' ')"
echo "$stamp" > "$root/.mossinfer-root"
