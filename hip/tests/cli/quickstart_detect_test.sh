#!/usr/bin/env bash
# scripts/lib/detect_machine.sh on fake machines (issue 51): ROCm installs (AMD's /opt/rocm with
# .info/version, Debian's /usr with hip_version.h, too old ones), Radeons reported by a rocminfo
# stub or by the amdgpu driver's KFD topology in a sysfs tree (one, two, unsupported, none), nvcc
# present or not. Each case checks the target quickstart would build and the note it prints.
# Nothing is built and nothing of the real machine is read.
set -uo pipefail
HERE=$(cd "$(dirname "$0")/../../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failed=0 count=0

# rocm ROOT VERSION [hip_version.h]: a ROCm install at ROOT reporting VERSION.
rocm() {
  mkdir -p "$1/bin"
  if [[ ${3:-} == header ]]; then
    mkdir -p "$1/include/hip"
    printf '#define HIP_VERSION_MAJOR %s\n#define HIP_VERSION_MINOR %s\n#define HIP_VERSION_PATCH 0\n' \
      "${2%%.*}" "$(cut -d. -f2 <<<"$2")" >"$1/include/hip/hip_version.h"
  else
    mkdir -p "$1/.info" && echo "$2-56" >"$1/.info/version"
  fi
}
# rocminfo_stub ROOT ARCH...: ROOT/bin/rocminfo lists a CPU agent and one GPU agent per ARCH.
rocminfo_stub() {
  local root=$1 a
  shift
  {
    echo '#!/bin/sh'
    echo 'cat <<EOT'
    echo '*******'; echo 'Agent 1'; echo '*******'; echo '  Name:                    AMD Ryzen 9 7950X'
    echo '  Device Type:             CPU'
    for a in "$@"; do
      echo '*******'; echo 'Agent 2'; echo '*******'; echo "  Name:                    $a"
      echo '  Marketing Name:          AMD Radeon Graphics'; echo '  Device Type:             GPU'
      echo "      Name:                    amdgcn-amd-amdhsa--$a"
    done
    echo 'EOT'
  } >"$root/bin/rocminfo"
  chmod +x "$root/bin/rocminfo"
}
# kfd SYSFS VERSION...: KFD topology nodes, node 0 a CPU (gfx_target_version 0).
kfd() {
  local sys=$1 n=1 v
  shift
  mkdir -p "$sys/class/kfd/kfd/topology/nodes/0"
  printf 'cpu_cores_count 16\ngfx_target_version 0\n' >"$sys/class/kfd/kfd/topology/nodes/0/properties"
  for v in "$@"; do
    mkdir -p "$sys/class/kfd/kfd/topology/nodes/$n"
    printf 'cpu_cores_count 0\nsimd_count 120\ngfx_target_version %s\n' "$v" >"$sys/class/kfd/kfd/topology/nodes/$n/properties"
    n=$((n + 1))
  done
}
# check NAME EXPECTED_TARGET NOTE_PATTERN [EXPECTED_ROCM]: detect_machine on the fake machine $M.
check() {
  local name=$1 want=$2 pattern=$3 want_rocm=${4:-}
  local got
  got=$(cd "$WORK" && env -i PATH="$M/path:/usr/bin:/bin" HOME="$WORK" \
    MOSSINFER_ROCM_CANDIDATES="${CANDIDATES:-$M/opt/rocm $M/usr}" MOSSINFER_SYSFS_ROOT="$M/sys" \
    MOSSINFER_DEV_ROOT="$M/dev" MOSSINFER_NVCC="${NVCC:-none}" \
    bash -c 'set -euo pipefail; source "$1/scripts/lib/detect_machine.sh"; detect_machine;
             printf "%s\n%s\n%s" "$DETECTED_TARGET" "$DETECTED_ROCM" "$DETECTED_NOTES"' _ "$HERE")
  count=$((count + 1))
  local target rocm_found notes
  target=$(sed -n 1p <<<"$got")
  rocm_found=$(sed -n 2p <<<"$got")
  notes=$(sed -n '3,$p' <<<"$got")
  if [[ $target != "$want" || $rocm_found != "$want_rocm" ]] || ! grep -Eq -- "$pattern" <<<"$notes"; then
    echo "FAIL $name: target '$target' (want '$want'), rocm '$rocm_found' (want '$want_rocm'), notes:"
    sed 's/^/    /' <<<"$notes"
    failed=$((failed + 1))
  else
    echo "ok   $name: $target"
  fi
}
# Every machine's PATH has a rocminfo that fails as ROCm's does without a usable GPU ("ROCk
# module is NOT loaded", status 1): it shadows a real one of the machine running the test (the
# AMD build's root has Debian's), and the detection must go on past it to the driver's sysfs.
machine() {
  M=$WORK/$1; mkdir -p "$M/path" "$M/sys" "$M/dev"; CANDIDATES="" NVCC=""
  printf '#!/bin/sh\necho "ROCk module is NOT loaded, possibly no GPU devices" >&2\nexit 1\n' >"$M/path/rocminfo"
  chmod +x "$M/path/rocminfo"
}

machine rocm7-rocminfo
rocm "$M/opt/rocm" 7.0.2 && rocminfo_stub "$M/opt/rocm" gfx1101
check rocm7-rocminfo gfx1101 "Radeon gfx1101 \(from rocminfo\) and ROCm 7\.0 at .*/opt/rocm" "$M/opt/rocm"

machine rocm7-sysfs-apu
rocm "$M/opt/rocm" 7.1.0 && kfd "$M/sys" 110501
check rocm7-sysfs-apu gfx1151 "Radeon gfx1151 \(from the amdgpu driver" "$M/opt/rocm"

machine two-cards
rocm "$M/opt/rocm" 7.0.0 && kfd "$M/sys" 120001 110000 120001
check two-cards "gfx1100;gfx1201" "the AMD build for gfx1100 gfx1201" "$M/opt/rocm"

machine debian-usr
rocm "$M/usr" 7.2 header && rocminfo_stub "$M/usr" gfx1200
check debian-usr gfx1200 "ROCm 7\.2 at .*/usr" "$M/usr"

machine rocm-env-first
rocm "$M/opt/rocm" 7.0.0 && rocm "$M/opt/rocm-7.1.1" 7.1.1 && kfd "$M/sys" 110002
CANDIDATES="$M/opt/rocm-7.1.1 $M/opt/rocm"
check rocm-env-first gfx1102 "ROCm 7\.1 at .*/opt/rocm-7\.1\.1" "$M/opt/rocm-7.1.1"

machine rocm6-too-old
rocm "$M/opt/rocm" 6.4.1 && kfd "$M/sys" 110000
check rocm6-too-old host "ROCm 6\.4 found at .*: too old \(ROCm 7 is needed\)"

machine radeon-no-rocm
kfd "$M/sys" 110001
check radeon-no-rocm host "Radeon gfx1101 .*but no ROCm 7 install"

machine radeon-no-rocm-nvcc
kfd "$M/sys" 110001
printf '#!/bin/sh\nexit 0\n' >"$M/path/nvcc" && chmod +x "$M/path/nvcc"
NVCC="$M/path/nvcc"
check radeon-no-rocm-nvcc nvidia "nvcc found: the NVIDIA build"

machine rdna2-unsupported
rocm "$M/opt/rocm" 7.0.0 && kfd "$M/sys" 100300
check rdna2-unsupported host "AMD GPU gfx1030 .*not supported" "$M/opt/rocm"

machine instinct-hex-stepping
rocm "$M/opt/rocm" 7.0.0 && kfd "$M/sys" 90010
check instinct-hex-stepping host "AMD GPU gfx90a .*not supported" "$M/opt/rocm"

machine rocm-without-gpu
rocm "$M/opt/rocm" 7.0.0
check rocm-without-gpu host "no usable GPU toolchain found: the host build.*hours" "$M/opt/rocm"

machine nvidia-only
printf '#!/bin/sh\nexit 0\n' >"$M/path/nvcc" && chmod +x "$M/path/nvcc"
NVCC="$M/path/nvcc"
check nvidia-only nvidia "nvcc found"

machine bare
check bare host "the host build, which runs on the CPU"

echo "$((count - failed)) of $count passed"
((failed == 0))
