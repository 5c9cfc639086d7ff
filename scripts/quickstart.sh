#!/usr/bin/env bash
# Set up, build and make a first image from the bundled tiny model, for the machine this runs on:
# a Radeon with ROCm 7 gets the AMD build for its architecture, a machine with nvcc the NVIDIA
# build, any other the host build (the CPU reference backend, slow; it says so). Where there is a
# supported GPU it runs the kernel self-test first.
#
# Environment: HIP_TARGET overrides what was detected (gfx1101, "gfx1100;gfx1201", nvidia, host);
# ROCM_PATH names the ROCm install to prefer; MOSSINFER_BUILD_DIR the build folder (default
# build; an existing one is reused as it is configured); MOSSINFER_QUICKSTART_NO_INSTALL=1 installs
# no packages; MOSSINFER_QUICKSTART_OUT the tiny image's path (default tiny-moss.png). The
# detection's own variables: scripts/lib/detect_machine.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "quickstart: $*"; }
source scripts/lib/detect_machine.sh

detect_machine
while IFS= read -r line; do [[ -z $line ]] || say "$line"; done <<<"$DETECTED_NOTES"
target=$DETECTED_TARGET
if [[ -n ${HIP_TARGET:-} ]]; then
  target=$HIP_TARGET
  say "HIP_TARGET=$HIP_TARGET given: building that instead"
fi
build=${MOSSINFER_BUILD_DIR:-build}
out=${MOSSINFER_QUICKSTART_OUT:-tiny-moss.png}
amd=0
[[ $target == gfx* ]] && amd=1

# Debian's packages (the AMD build's ROCm itself is not among them: see the README).
packages=(cmake make g++ pkg-config clang-19 lld-19 llvm-19 libpcre2-dev libutf8proc-dev nlohmann-json3-dev
  libpng-dev zlib1g-dev libgtest-dev libcpp-httplib-dev)
((amd)) && packages+=(ninja-build)
if [[ -z ${MOSSINFER_QUICKSTART_NO_INSTALL:-} ]] && command -v apt-get >/dev/null; then
  if [[ $(id -u) -eq 0 ]]; then
    say "installing Debian packages: ${packages[*]}"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null
  else
    missing=()
    for p in "${packages[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$' || missing+=("$p")
    done
    ((${#missing[@]} == 0)) || say "not root, so not installing what is missing: sudo apt-get install ${missing[*]}"
  fi
fi

configure=(cmake -S hip -B "$build" "-DHIP_TARGET=$target")
if ((amd)); then
  rocm=${ROCM_PATH:-${DETECTED_ROCM:-/opt/rocm}}
  # A build folder already configured keeps its ROCm unless ROCM_PATH names one.
  [[ -e $build/CMakeCache.txt && -z ${ROCM_PATH:-} ]] || configure+=("-DROCM_PATH=$rocm")
  if [[ ! -e $build/CMakeCache.txt ]]; then
    command -v ninja >/dev/null || { say "the AMD build needs ninja: sudo apt-get install ninja-build"; exit 1; }
    configure+=(-G Ninja)
  fi
  say "building for $target with ROCm at $rocm (a few minutes)"
elif [[ $target == nvidia ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
  say "building for NVIDIA (sm_90a; several minutes)"
else
  say "building the host configuration (no GPU code)"
fi
"${configure[@]}"
cmake --build "$build" -j"$(nproc)"
bin=$build/moss-infer-hip
"$bin" --version
devices=$("$bin" --list-devices)
echo "$devices"

if [[ $target != host ]] && grep -q ': supported$' <<<"$devices"; then
  backend=hip
  say "running the kernel self-test on the GPU (seconds)"
  if ! "$bin" self-test; then
    say "the self-test failed: please open an issue with its output above"
    exit 1
  fi
else
  backend=host
  say "no supported GPU found: running the host reference backend (MOSSINFER_BACKEND=host) on the CPU;"
  say "seconds for the tiny model, hours for a full-size image"
fi
# The tiny model has 4 DiT blocks (0 to 3): --skip-layers 2, as its goldens were made with.
MOSSINFER_BACKEND=$backend "$bin" --model hip/tests/data/tiny-moss \
  --prompt "a red apple on a wooden table" --size 96x64 --steps 4 --cfg 3 --shift 5 --seed 42 --skip-layers 2 \
  -o "$out"
say "wrote $out (96x64; the tiny model has random weights: a noise-like pattern, not an apple)"
say "next: scripts/get_model.sh sft DIR downloads the real model (about 27 GiB); README \"First image\""
