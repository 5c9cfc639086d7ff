#!/usr/bin/env bash
# check_device.sh: compile every kernel source device-only for the AMD targets and check the code
# objects, on a machine with no GPU and no ROCm (Debian's clang-19 / llvm-19 / lld-19 only; see
# shared/spec/research/toolchain.md section 1).
#
#   hip/check_device.sh [--out DIR] [--expect-violation KIND] [FILE.hip ...]
#
# Default sources: hip/src/kernels/*.hip. Each is compiled with
#   clang++-19 -x hip -nogpuinc -nogpulib --offload-device-only --no-gpu-bundle-output
#              --offload-arch=gfx1100 --offload-arch=gfx1200 --offload-arch=gfx1201
# and -I hip/src/runtime/amd_device_only, whose minimal <hip/hip_runtime.h> stands in for ROCm's
# (src/runtime/portability.h reaches everything device-side through compiler builtins).
#
# Per kernel and architecture it reports and checks:
#   mma      bf16 matrix instructions (v_wmma_*bf16*) in the kernel's own code (the leaf is
#            inlined; a WMMA in a called, non-inlined function is not counted); must be > 0 in a
#            matrix kernel. A source marks its kernels as matrix kernels with the line
#                // check_device: matrix
#            (every kernel of that file must then use the matrix leaf).
#   wave     wavefront size, must be 32
#   wg       maximum flat workgroup size, must be 32 (__launch_bounds__(kWorkgroupSize))
#   scratch  private segment bytes per lane, must be 0
#   spill    VGPR + SGPR spills, must be 0
#   dyn      dynamic stack (recursion, variable-sized allocas), must be "no"
#   undef    undefined symbols in the code object, must be 0
# vgpr/sgpr/lds are reported only. A source with no kernels, or one that does not compile, fails.
#
# Exit status: 0 all checks passed; 1 a violation or a compile error; 2 bad usage;
# 77 the LLVM 19 tools are missing (ctest reports the test as skipped, not passed).
# --expect-violation KIND inverts the verdict for testing the checker itself: exit 0 only when the
# sources compile and at least one violation of KIND (matrix, wave, workgroup, scratch, spill,
# dynamic-stack, undefined, no-kernels) is found. tests/device_bad/*.hip use this.
set -euo pipefail

ARCHS=(gfx1100 gfx1200 gfx1201)
HIP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

CLANG=${CLANG:-clang++-19}
READELF=${LLVM_READELF:-llvm-readelf-19}
OBJDUMP=${LLVM_OBJDUMP:-llvm-objdump-19}
NM=${LLVM_NM:-llvm-nm-19}
# Demangling is cosmetic: binutils' c++filt knows bf16 (DF16b), llvm-cxxfilt-19 does not.
CXXFILT=${CXXFILT:-$(command -v c++filt || command -v llvm-cxxfilt-19 || echo cat)}

usage() { echo "usage: $0 [--out DIR] [--expect-violation KIND] [FILE.hip ...]" >&2; exit 2; }

out_dir="" expect=""
sources=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) [[ $# -ge 2 ]] || usage; out_dir=$2; shift 2 ;;
    --expect-violation) [[ $# -ge 2 ]] || usage; expect=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) usage ;;
    *) sources+=("$1"); shift ;;
  esac
done
if [[ -n $expect ]]; then
  case $expect in
    matrix|wave|workgroup|scratch|spill|dynamic-stack|undefined|no-kernels) ;;
    *) echo "unknown violation kind: $expect" >&2; usage ;;
  esac
fi
if [[ ${#sources[@]} -eq 0 ]]; then
  shopt -s nullglob
  sources=("$HIP_DIR"/src/kernels/*.hip)
  shopt -u nullglob
  [[ ${#sources[@]} -gt 0 ]] || { echo "no kernel sources in $HIP_DIR/src/kernels" >&2; exit 1; }
fi

missing=()
for tool in "$CLANG" "$READELF" "$OBJDUMP" "$NM"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "SKIP: ${missing[*]} not found; install clang-19 lld-19 llvm-19 (Debian 12) to check AMD device code" >&2
  exit 77
fi

if [[ -z $out_dir ]]; then
  out_dir=$(mktemp -d)
  trap 'rm -rf "$out_dir"' EXIT
fi
mkdir -p "$out_dir"

arch_flags=()
for a in "${ARCHS[@]}"; do arch_flags+=("--offload-arch=$a"); done
cflags=(-x hip -std=c++17 -O3 -DNDEBUG -Wall -Wextra -Werror -Wno-unused-parameter
        -nogpuinc -nogpulib --offload-device-only --no-gpu-bundle-output -mno-wavefrontsize64
        "${arch_flags[@]}" -I"$HIP_DIR/src" -I"$HIP_DIR/src/runtime/amd_device_only")

# Per kernel in a code object: name vgpr sgpr lds scratch vgpr_spill sgpr_spill dynamic_stack wave wg
kernel_notes() {
  "$READELF" --notes "$1" | awk '
    function emit() { if (name != "") print name, f["vgpr_count"]+0, f["sgpr_count"]+0, f["group_segment_fixed_size"]+0,
                        f["private_segment_fixed_size"]+0, f["vgpr_spill_count"]+0, f["sgpr_spill_count"]+0,
                        (f["uses_dynamic_stack"] == "true" ? "yes" : "no"), f["wavefront_size"]+0, f["max_flat_workgroup_size"]+0 }
    function field(s,   kv) { if (match(s, /^\.[a-z_]+:[ \t]*/)) { kv = substr(s, 2, RLENGTH - 1); sub(/:[ \t]*$/, "", kv);
                        f[kv] = substr(s, RLENGTH + 1); if (kv == "name") name = f[kv] } }
    /^amdhsa\.kernels:/ { inside = 1; next }
    inside && /^[^ ]/   { emit(); name = ""; inside = 0; next }
    inside && /^  - \./ { emit(); name = ""; delete f; field(substr($0, 5)); next }
    inside && /^    \./ { field(substr($0, 5)) }
    END { emit() }'
}

# Per function symbol: name count of bf16 matrix instructions
matrix_counts() {
  "$OBJDUMP" -d --no-show-raw-insn "$1" | awk '
    /^[0-9a-f]+ <.*>:$/ { sym = $2; sub(/^</, "", sym); sub(/>:$/, "", sym); n[sym] += 0; next }
    /v_s?wmmac?_[a-z0-9_]*bf16/ { n[sym]++ }
    END { for (s in n) print s, n[s] }'
}

short_name() { echo "$1" | "$CXXFILT" | sed -e 's/(anonymous namespace):://g' -e 's/(.*$//' -e 's/^moss:://'; }

rows=() violations=() compile_failed=0 found_expected=0
record_violation() {  # kind, text
  violations+=("$2")
  [[ $1 == "$expect" ]] && found_expected=1
  return 0
}

for src in "${sources[@]}"; do
  [[ -f $src ]] || { echo "no such kernel source: $src" >&2; exit 2; }
  src=$(realpath "$src")
  base=$(basename "$src" .hip)
  work="$out_dir/$base"
  mkdir -p "$work"
  matrix=0
  grep -q '^// check_device: matrix[[:space:]]*$' "$src" && matrix=1
  if ! log=$(cd "$work" && "$CLANG" "${cflags[@]}" -c "$src" 2>&1); then
    echo "$log" >&2
    violations+=("$base: does not compile for ${ARCHS[*]}")
    compile_failed=1
    continue
  fi
  for a in "${ARCHS[@]}"; do
    co="$work/$base-hip-amdgcn-amd-amdhsa-$a.out"
    undef=$("$NM" -u "$co" | grep -c . || true)
    declare -A mma=()
    while read -r sym count; do mma[$sym]=$count; done < <(matrix_counts "$co")
    kernels=0
    while read -r name vgpr sgpr lds scratch vspill sspill dyn wave wg; do
      kernels=$((kernels + 1))
      short=$(short_name "$name")
      nmma=${mma[$name]:-0}
      bad=()
      [[ $matrix -eq 1 && $nmma -eq 0 ]] && { bad+=(matrix); record_violation matrix "$short [$a]: no bf16 matrix instruction in a matrix kernel"; }
      [[ $wave -ne 32 ]] && { bad+=(wave); record_violation wave "$short [$a]: wavefront size $wave, must be 32"; }
      [[ $wg -ne 32 ]] && { bad+=(wg); record_violation workgroup "$short [$a]: max workgroup size $wg, must be 32 (__launch_bounds__(kWorkgroupSize))"; }
      [[ $scratch -ne 0 ]] && { bad+=(scratch); record_violation scratch "$short [$a]: $scratch bytes of scratch per lane"; }
      [[ $((vspill + sspill)) -ne 0 ]] && { bad+=(spill); record_violation spill "$short [$a]: $vspill VGPR and $sspill SGPR spills"; }
      [[ $dyn != no ]] && { bad+=(dyn); record_violation dynamic-stack "$short [$a]: uses a dynamic stack"; }
      [[ $undef -ne 0 ]] && { bad+=(undef); record_violation undefined "$short [$a]: $undef undefined symbols in $base"; }
      verdict=ok
      [[ ${#bad[@]} -gt 0 ]] && verdict="FAIL(${bad[*]})"
      kind=-
      [[ $matrix -eq 1 ]] && kind=matrix
      rows+=("$short|$a|$kind|$nmma|$wave|$wg|$vgpr|$sgpr|$lds|$scratch|$((vspill + sspill))|$dyn|$undef|$verdict")
    done < <(kernel_notes "$co")
    unset mma
    [[ $kernels -eq 0 ]] && record_violation no-kernels "$base [$a]: no kernels in the code object"
  done
done

# ---- table ----
header="kernel|arch|kind|mma|wave|wg|vgpr|sgpr|lds|scratch|spill|dyn|undef|result"
all=("$header" "${rows[@]}")
printf '%s\n' "${all[@]}" | awk -F'|' '
  { for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } nf = NF; nr = NR }
  END { for (r = 1; r <= nr; r++) { line = ""
          for (i = 1; i <= nf; i++) line = line (i > 1 ? "  " : "") sprintf("%" (i <= 3 ? "-" : "") w[i] "s", cell[r, i])
          print line
          if (r == 1) { sep = ""; for (i = 1; i <= nf; i++) sep = sep (i > 1 ? "  " : "") sprintf("%" w[i] "s", ""); gsub(/ /, "-", sep); print sep } } }'

echo
if [[ ${#violations[@]} -gt 0 ]]; then
  printf 'violation: %s\n' "${violations[@]}"
fi
nrows=${#rows[@]}
if [[ -n $expect ]]; then
  if [[ $compile_failed -eq 0 && $found_expected -eq 1 ]]; then
    echo "expected violation '$expect' detected: checker works"
    exit 0
  fi
  echo "expected violation '$expect' NOT detected" >&2
  exit 1
fi
if [[ ${#violations[@]} -gt 0 ]]; then
  echo "check_device: FAILED (${#violations[@]} violations; $nrows kernel builds checked for ${ARCHS[*]})"
  exit 1
fi
echo "check_device: OK ($nrows kernel builds checked for ${ARCHS[*]})"
