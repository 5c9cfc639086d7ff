#!/usr/bin/env bash
# collect_licenses.sh ROOT OUT: the licence texts of every library the AMD release binary carries,
# from Debian's copyright files (ROOT is the ROCm root, ROOT/sysroot the Debian 12 tree), each whole,
# with every common licence they refer to (/usr/share/common-licenses/NAME) beside them.
# The list, and why each is inside the binary, is in docs/amd_release.md.
set -euo pipefail
root=${1:?usage: collect_licenses.sh ROOT OUT}
out=${2:?usage: collect_licenses.sh ROOT OUT}
# package folder (under usr/share/doc) : what of it the binary carries
sysroot_packages=(
  "libpcre2-8-0:PCRE2, linked statically (the tokenizer's regular expressions)"
  "libutf8proc2:utf8proc, linked statically (Unicode normalisation for the tokenizer)"
  "libpng16-16:libpng, linked statically (PNG output)"
  "zlib1g:zlib, linked statically (PNG compression)"
  "nlohmann-json3-dev:nlohmann-json, compiled in (header-only JSON parser)"
  "libstdc++6:GCC 12's libstdc++, linked statically (-static-libstdc++; GCC Runtime Library Exception)"
  "libgcc-s1:GCC 12's libgcc and its unwinder, linked statically (-static-libgcc; GCC Runtime Library Exception)"
)
root_packages=(
  "libclang-rt-22-dev:LLVM compiler-rt builtins, linked statically (the HIP link's --rtlib=compiler-rt)"
  "rocm-device-libs-22:ROCm device libraries, linked into the GPU code objects"
  "libamdhip64-dev:HIP headers, whose inline host and device code is compiled in"
)
# Debian 12 source packages unpacked in the root (scripts/amd_root.sh), whose code is compiled in.
source_packages=(
  "cpp-httplib:cpp-httplib 0.11 (Debian 12's source package, httplib.h), compiled in (the HTTP server of serve)"
)
rm -rf "$out"
mkdir -p "$out/common-licenses"
index=$out/README.txt
{
  echo "Third-party software inside bin/moss-infer-hip, with each one's licence text in this folder."
  echo "The HIP runtime (libamdhip64.so.7) is not shipped: it is the user's ROCm installation's."
  echo
} > "$index"
add() {  # TREE ENTRY [COPYRIGHT-FILE]
  local tree=$1 pkg=${2%%:*} what=${2#*:} src
  src=${3:-$tree/usr/share/doc/$pkg/copyright}
  [[ -s $src ]] || { echo "collect_licenses: missing $src" >&2; exit 1; }
  cp "$src" "$out/$pkg.copyright"
  echo "$pkg.copyright: $what" >> "$index"
  local lic
  for lic in $(grep -o 'common-licenses/[A-Za-z0-9.+-]*[A-Za-z0-9]' "$src" | sort -u); do
    lic=${lic#common-licenses/}
    if [[ -f $tree/usr/share/common-licenses/$lic ]]; then
      cp "$tree/usr/share/common-licenses/$lic" "$out/common-licenses/$lic"
    fi
  done
}
for e in "${sysroot_packages[@]}"; do add "$root/sysroot" "$e"; done
for e in "${root_packages[@]}"; do add "$root" "$e"; done
for e in "${source_packages[@]}"; do add "$root" "$e" "$root/opt/mossinfer-src/${e%%:*}/debian/copyright"; done
echo >> "$index"
echo "common-licenses/: the full texts those copyright files refer to by name." >> "$index"
