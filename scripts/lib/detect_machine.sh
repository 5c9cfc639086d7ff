# What quickstart.sh builds for, found on this machine (sourced; bash). detect_machine sets:
#   DETECTED_TARGET   the HIP_TARGET to build: gfx... (one or more, ';'-separated), nvidia or host
#   DETECTED_ROCM     the ROCm 7 install found (its root: /opt/rocm, /usr, ...), or empty
#   DETECTED_NOTES    what was found and why this target, one sentence a line, for the person
# Safe under `set -euo pipefail` (quickstart's). It reads the machine only through these roots, so the tests can give it a fake one:
#   MOSSINFER_ROCM_CANDIDATES  ROCm roots to try, in order (default: $ROCM_PATH, /opt/rocm,
#                              /opt/rocm-* newest first, /usr)
#   MOSSINFER_SYSFS_ROOT       where sysfs is (default /sys): the amdgpu driver's KFD topology
#   MOSSINFER_DEV_ROOT         where /dev is (default /dev): /dev/kfd and its permissions
#   MOSSINFER_TARGETS_FILE     the architectures a build can hold (default hip/amd_targets.txt)
#   MOSSINFER_NVCC             the CUDA compiler (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc;
#                              "none": there is none)
# rocminfo is looked up in the ROCm root's bin/, then on PATH.

# The ROCm major.minor of root $1 ("7.0"), empty when none is found there.
rocm_version_at() {
  local root=$1 v=""
  if [[ -r $root/.info/version ]]; then
    v=$(head -n1 "$root/.info/version")
  elif [[ -r $root/include/hip/hip_version.h ]]; then
    v=$(awk '/#define HIP_VERSION_MAJOR/ {M=$3} /#define HIP_VERSION_MINOR/ {m=$3} END {if (M != "") print M "." m}' \
      "$root/include/hip/hip_version.h")
  fi
  if [[ $v =~ ^([0-9]+)\.([0-9]+) ]]; then echo "${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"; fi
}

# The gfx architectures of the GPUs the amdgpu driver reports under sysfs root $1 (KFD topology:
# gfx_target_version = major*10000 + minor*100 + stepping, stepping written in hex: 110001 is
# gfx1101, 90010 gfx90a; CPU nodes report 0), one a line, sorted, distinct.
sysfs_gfx_archs() {
  local f v
  for f in "$1"/class/kfd/kfd/topology/nodes/*/properties; do
    [[ -r $f ]] || continue
    v=$(awk '$1 == "gfx_target_version" {print $2}' "$f")
    [[ $v =~ ^[0-9]+$ ]] && ((v > 0)) || continue
    printf 'gfx%d%d%x\n' $((v / 10000)) $((v / 100 % 100)) $((v % 100))
  done | sort -u
}

# The gfx architectures rocminfo ($1) lists for its GPU agents, one a line, sorted, distinct. A
# rocminfo that fails (ROCm installed, but no GPU or no access to /dev/kfd) lists none: its status
# must not end quickstart (set -e with pipefail), which then reads the driver's sysfs instead.
rocminfo_gfx_archs() {
  { "$1" 2>/dev/null || true; } | awk '$1 == "Name:" && $2 ~ /^gfx[0-9a-f]+$/ {print $2}' | sort -u
}

detect_machine() {
  local here sysfs dev targets_file root candidates=() version="" archs="" a supported=() unsupported=()
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  sysfs=${MOSSINFER_SYSFS_ROOT:-/sys}
  dev=${MOSSINFER_DEV_ROOT:-/dev}
  targets_file=${MOSSINFER_TARGETS_FILE:-$here/hip/amd_targets.txt}
  DETECTED_TARGET="" DETECTED_ROCM="" DETECTED_NOTES=""
  if [[ -n ${MOSSINFER_ROCM_CANDIDATES:-} ]]; then
    read -r -a candidates <<<"$MOSSINFER_ROCM_CANDIDATES"
  else
    local versioned=() d
    for d in /opt/rocm-*; do [[ -d $d ]] && versioned+=("$d"); done
    ((${#versioned[@]} == 0)) || mapfile -t versioned < <(printf '%s\n' "${versioned[@]}" | sort -rV)
    candidates=(${ROCM_PATH:+"$ROCM_PATH"} /opt/rocm "${versioned[@]}" /usr)
  fi
  for root in "${candidates[@]}"; do
    version=$(rocm_version_at "$root")
    [[ -n $version ]] || continue
    if ((${version%%.*} >= 7)); then
      DETECTED_ROCM=$root
      break
    fi
    DETECTED_NOTES+="ROCm $version found at $root: too old (ROCm 7 is needed)"$'\n'
  done

  # The Radeon's architecture: rocminfo when ROCm has one, else the driver's own report in sysfs.
  local rocminfo=""
  [[ -n $DETECTED_ROCM && -x $DETECTED_ROCM/bin/rocminfo ]] && rocminfo=$DETECTED_ROCM/bin/rocminfo
  [[ -z $rocminfo ]] && rocminfo=$(command -v rocminfo || true)
  [[ -n $rocminfo ]] && archs=$(rocminfo_gfx_archs "$rocminfo")
  local source="rocminfo"
  if [[ -z $archs ]]; then
    archs=$(sysfs_gfx_archs "$sysfs")
    source="the amdgpu driver ($sysfs/class/kfd)"
  fi
  for a in $archs; do
    if grep -qw "$a" "$targets_file"; then supported+=("$a"); else unsupported+=("$a"); fi
  done
  ((${#unsupported[@]})) &&
    DETECTED_NOTES+="AMD GPU ${unsupported[*]} (from $source): not supported (the kernels need RDNA3 or newer's bf16 WMMA: $(xargs <"$targets_file"))"$'\n'

  if ((${#supported[@]})); then
    if [[ -n $DETECTED_ROCM ]]; then
      DETECTED_TARGET=$(IFS=';'; echo "${supported[*]}")
      DETECTED_NOTES+="Radeon ${supported[*]} (from $source) and ROCm $version at $DETECTED_ROCM: the AMD build for ${supported[*]}"$'\n'
      if [[ -e $dev/kfd && ! ( -r $dev/kfd && -w $dev/kfd ) ]]; then
        DETECTED_NOTES+="$dev/kfd is not usable by $(id -un): add yourself to the render and video groups (sudo usermod -aG render,video \$USER) and log in again"$'\n'
      fi
      return 0
    fi
    DETECTED_NOTES+="Radeon ${supported[*]} (from $source) but no ROCm 7 install (looked in: ${candidates[*]}): install ROCm 7 (README, \"Radeon from zero\") and run quickstart again; until then"$'\n'
  fi
  local nvcc=${MOSSINFER_NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  if [[ $nvcc != none && -x $nvcc ]]; then
    DETECTED_TARGET=nvidia
    DETECTED_NOTES+="$nvcc found: the NVIDIA build (sm_90a: H100/H200)"$'\n'
    return 0
  fi
  DETECTED_TARGET=host
  DETECTED_NOTES+="no usable GPU toolchain found: the host build, which runs on the CPU (the tiny model takes seconds; a full-size 1024x1024 image takes hours)"$'\n'
}
