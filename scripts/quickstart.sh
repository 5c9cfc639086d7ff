#!/usr/bin/env bash
# Set up, build and make an image from the bundled tiny model: on a supported GPU when one is
# present, otherwise on the host reference backend (and it says so).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    cmake make g++ pkg-config clang-19 lld-19 llvm-19 libpcre2-dev libutf8proc-dev nlohmann-json3-dev \
    libpng-dev zlib1g-dev libgtest-dev libcpp-httplib-dev >/dev/null
fi
export PATH=/usr/local/cuda/bin:$PATH
target=${HIP_TARGET:-nvidia}
command -v nvcc >/dev/null || [[ $target != nvidia ]] || target=host
cmake -S hip -B build -DHIP_TARGET="$target"
cmake --build build -j2
build/moss-infer-hip --version
build/moss-infer-hip --list-devices
if build/moss-infer-hip --list-devices | grep -q ': supported$'; then
  backend=hip
else
  backend=host
  echo "quickstart: no supported GPU found: running the host reference backend (MOSSINFER_BACKEND=host)"
fi
MOSSINFER_BACKEND=$backend build/moss-infer-hip --model hip/tests/data/tiny-moss \
  --prompt "a red apple on a wooden table" --size 96x64 --steps 4 --cfg 3 --shift 5 --seed 42 --skip-layers 2 \
  -o tiny-moss.png
echo "quickstart: wrote tiny-moss.png"
