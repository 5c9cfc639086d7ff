#!/usr/bin/env bash
# Packs what a GPU machine needs into .carry/ (git-ignored), small enough to travel with the tree:
# the NVIDIA build's stripped program and tools and the Debian libraries they link that the
# machine's image lacks. The binaries share most of their device code, so one xz stream with a
# dictionary larger than a binary packs them into a few MB (about 35 MB with xz's
# default dictionary).
#   bench/make_carry.sh [BUILD_DIR]     (default build; then: run with carry [".carry", ".whl"])
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$root/.carry"
cp "$build"/moss-infer-hip "$build"/moss-check "$build"/bench_random_model "$stage/bin/"
# model_layouts writes a model in the other file layouts (bench/h200_model_files.sh).
[[ -x $build/model_layouts ]] && cp "$build"/model_layouts "$stage/bin/"
# bench_model_files times the opening of both layouts (bench/model_files_mapping.sh).
[[ -x $build/bench_model_files ]] && cp "$build"/bench_model_files "$stage/bin/"
strip "$stage"/bin/*
# Every library the binaries link beyond the C/C++ runtime, zlib and OpenSSL (which GPU machine
# images have, newer: shipping Debian 12's libstdc++ there would shadow it for Python too).
ldd "$stage"/bin/* | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libz|libssl|libcrypto|libdl|libpthread|librt|libcuda)\.so' |
  while read -r l; do cp -L "$l" "$stage/lib/"; done
tar -C "$stage" -cf - bin lib | xz -T1 --lzma2=preset=6,dict=192MiB >"$root/.carry/bundle.tar.xz"
du -h "$root/.carry/bundle.tar.xz"
