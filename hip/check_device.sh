#!/usr/bin/env bash
# check_device.sh: compile every kernel source device-only for the AMD targets and check the code
# objects, on a machine with no GPU and no ROCm (Debian's clang-19 / llvm-19 / lld-19 only; see
# docs/toolchain.md section 1).
#
#   hip/check_device.sh [--out DIR] [--kernels-out FILE] [--expect-violation KIND] [FILE.hip ...]
#   hip/check_device.sh --binary PROGRAM --matrix-list FILE [--out DIR] [--kernels-out FILE]
#
# --binary checks the code objects inside a built program instead (the release: the kernels users
# get, built by ROCm's clang), unbundled from its .hip_fatbin section with the offload bundler;
# run it with the ROCm root's LLVM tools (LLVM_READELF, LLVM_OBJDUMP, LLVM_NM, LLVM_OBJCOPY,
# OFFLOAD_BUNDLER; hip/ci/amd.sh). Which kernels are matrix kernels comes from --matrix-list, the
# --kernels-out list of a source run. --kernels-out writes one sorted line per kernel build,
# "ARCH KIND MANGLED-NAME" (KIND: matrix or -), so two runs can be compared.
#
# Targets: hip/amd_targets.txt (the release's; CHECK_DEVICE_ARCHS replaces the list for a
# measurement). A target the compiler does not know (clang-19 and gfx1153) is skipped, and the
# verdict line names it. Default sources: hip/src/kernels/*.hip. Each is compiled once per target
# (CHECK_DEVICE_JOBS compiles at a time, default the cores) with
#   clang++-19 -x hip -nogpuinc -nogpulib --rocm-path=EMPTY --offload-device-only --no-gpu-bundle-output
#              --offload-arch=TARGET -Rpass-analysis=kernel-resource-usage
# and -I hip/src/runtime/amd_device_only, whose minimal <hip/hip_runtime.h> stands in for ROCm's
# (src/runtime/portability.h reaches everything device-side through compiler builtins).
#
# Per kernel and architecture it reports and checks:
#   mma      matrix instructions (v_wmma_*_bf16, v_wmma_*_f16 of the fp16 leaf,
#            kernels/matrix_leaf.h's mma<true>, v_wmma_i32_16x16x16_iu8 of the int8 leaf, mma_i8,
#            and v_wmma_f32_16x16x16_fp8_fp8 of the fp8 leaf, mma_f8, gfx12 only) in the kernel's own code (the leaf is inlined; a
#            WMMA in a called, non-inlined function is not counted); must be > 0 in a matrix
#            kernel (the VAE conv's F16 kernels hold only the f16 form). A source marks its kernels as matrix kernels with the line
#                // check_device: matrix
#            (every kernel of that file must then use the matrix leaf).
#   wave     wavefront size, must be 32
#   wg       maximum flat workgroup size: the kernel's declared __launch_bounds__, which must be
#            32, 64, 128 or 256 threads (whole waves; never the compiler's default of 1024, under
#            which it would budget registers for 1024 threads). Workgroups of several waves are
#            allowed since the portable GEMM and attention share LDS tiles among 4 waves
#            (docs/amd_kernels.md: a one-wave 32x64 GEMM tile moves 21 flops per byte into LDS,
#            a 128x64 tile of 4 waves 43).
#   scratch  private segment bytes per lane, must be 0
#   spill    VGPR + SGPR spills, must be 0
#   dyn      dynamic stack (recursion, variable-sized allocas), must be "no"
#   undef    undefined symbols in the code object, must be 0
# vgpr/sgpr/lds are reported only, and occ: the waves per SIMD the compiler reports for the
# kernel on that target (its resource-usage remark: VGPRs against the target's register file,
# 1536 or 1024 per SIMD, LDS, the launch bound; "-" in --binary runs, which have no remarks).
# A source with no kernels, or one that does not compile, fails.
#
# Exit status: 0 all checks passed; 1 a violation or a compile error; 2 bad usage;
# 77 the LLVM 19 tools are missing (ctest reports the test as skipped, not passed).
# --expect-violation KIND inverts the verdict for testing the checker itself: exit 0 only when the
# sources compile and at least one violation of KIND (matrix, wave, workgroup, scratch, spill,
# dynamic-stack, undefined, no-kernels) is found. tests/device_bad/*.hip use this.
set -euo pipefail

HIP_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The release's targets (hip/amd_targets.txt, the one list CI and the release read);
# CHECK_DEVICE_ARCHS replaces it for a measurement (e.g. "gfx11-generic gfx12-generic").
read -ra ARCHS <<< "${CHECK_DEVICE_ARCHS:-$(cat "$HIP_DIR/amd_targets.txt")}"

CLANG=${CLANG:-clang++-19}
READELF=${LLVM_READELF:-llvm-readelf-19}
OBJDUMP=${LLVM_OBJDUMP:-llvm-objdump-19}
NM=${LLVM_NM:-llvm-nm-19}
OBJCOPY=${LLVM_OBJCOPY:-llvm-objcopy-19}
BUNDLER=${OFFLOAD_BUNDLER:-clang-offload-bundler-19}
# Demangling is cosmetic: binutils' c++filt knows bf16 (DF16b), llvm-cxxfilt-19 does not.
CXXFILT=${CXXFILT:-$(command -v c++filt || command -v llvm-cxxfilt-19 || echo cat)}

usage() {
  echo "usage: $0 [--out DIR] [--kernels-out FILE] [--expect-violation KIND] [FILE.hip ...]" >&2
  echo "       $0 --binary PROGRAM --matrix-list FILE [--out DIR] [--kernels-out FILE]" >&2
  exit 2
}

out_dir="" expect="" binary="" matrix_list="" kernels_out=""
sources=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) [[ $# -ge 2 ]] || usage; out_dir=$2; shift 2 ;;
    --binary) [[ $# -ge 2 ]] || usage; binary=$2; shift 2 ;;
    --matrix-list) [[ $# -ge 2 ]] || usage; matrix_list=$2; shift 2 ;;
    --kernels-out) [[ $# -ge 2 ]] || usage; kernels_out=$2; shift 2 ;;
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
if [[ -n $binary ]]; then
  [[ ${#sources[@]} -eq 0 && -z $expect && -n $matrix_list ]] || usage
  [[ -f $binary ]] || { echo "no such program: $binary" >&2; exit 2; }
  [[ -f $matrix_list ]] || { echo "no such kernel list: $matrix_list" >&2; exit 2; }
elif [[ ${#sources[@]} -eq 0 ]]; then
  shopt -s nullglob
  sources=("$HIP_DIR"/src/kernels/*.hip)
  shopt -u nullglob
  [[ ${#sources[@]} -gt 0 ]] || { echo "no kernel sources in $HIP_DIR/src/kernels" >&2; exit 1; }
fi

tools=("$READELF" "$OBJDUMP" "$NM")
if [[ -n $binary ]]; then tools+=("$OBJCOPY" "$BUNDLER"); else tools+=("$CLANG"); fi
missing=()
for tool in "${tools[@]}"; do
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

# A compiler checks the targets it knows: Debian 12's clang-19 predates gfx1153 (llvm-project PR 113138), whose
# kernels CI checks in the shipped binary, built by ROCm's clang-22 (hip/ci/amd.sh). The
# skipped targets are named in the verdict, never passed over silently.
unknown=()
# An empty ROCm root: a ROCm the machine happens to have (Debian's libamdhip64-dev puts one in
# /usr) makes clang add its CUDA/HIP wrapper headers even under -nogpuinc, which then fail to
# compile without ROCm's device headers; the check is meant to see the sources alone.
no_rocm=$out_dir/.no-rocm
mkdir -p "$no_rocm"
if [[ -z $binary ]]; then
  known=()
  for a in "${ARCHS[@]}"; do
    if "$CLANG" -x hip -nogpuinc -nogpulib --rocm-path="$no_rocm" --offload-device-only -fsyntax-only --offload-arch="$a" \
         /dev/null >/dev/null 2>&1; then known+=("$a"); else unknown+=("$a"); fi
  done
  [[ ${#known[@]} -gt 0 ]] || { echo "$CLANG knows none of the targets ${ARCHS[*]}" >&2; exit 1; }
  ARCHS=("${known[@]}")
fi
cflags=(-x hip -std=c++17 -O3 -DNDEBUG -Wall -Wextra -Werror -Wno-unused-parameter
        -nogpuinc -nogpulib --rocm-path="$no_rocm" --offload-device-only --no-gpu-bundle-output -mno-wavefrontsize64
        -I"$HIP_DIR/src" -I"$HIP_DIR/src/runtime/amd_device_only")
# arch_flags ARCH: one target per compile, so the compiler's resource remarks (occupancy) belong
# to one architecture. A generic target (gfx11-generic) exists only in code object v6, which
# clang-19 still calls "in development" in a warning that has no flag of its own: there, and only
# there, warnings stay warnings (docs/amd_targets.md: generic targets are measured, not shipped).
arch_flags() {
  echo "--offload-arch=$1"
  if [[ $1 == *-generic ]]; then echo -mcode-object-version=6; echo -Wno-error; fi
}
# Per kernel of a compile's remarks: mangled-name waves-per-SIMD (the compiler's occupancy, from
# the VGPR, SGPR and LDS use and the launch bound, with this target's register file).
occupancy_remarks() {
  sed -n -e 's/.*remark: Function Name: \([^ ]*\) .*/F \1/p' -e 's/.*remark: *Occupancy \[waves\/SIMD\]: \([0-9]*\).*/O \1/p' |
    awk '$1 == "F" { name = $2 } $1 == "O" && name != "" { print name, $2; name = "" }'
}
declare -A OCC=()   # "ARCH MANGLED" -> waves per SIMD (source runs only)

# extract_code_objects PROGRAM DIR: DIR/bundle-N/ARCH.co for each offload bundle in the program's
# .hip_fatbin section. The bundles lie one after another, each padded to an alignment: a bundle
# starts at a magic string ("__CLANG_OFFLOAD_BUNDLE__", or "CCOB" when compressed) and ends where
# the next one starts; the offload bundler reads one and ignores the padding after it.
extract_code_objects() {
  local program=$1 dir=$2 fat n a
  mkdir -p "$dir"
  fat="$dir/hip_fatbin"
  "$OBJCOPY" --dump-section .hip_fatbin="$fat" "$program" "$dir/program.copy" ||
    { echo "no .hip_fatbin section in $program" >&2; exit 1; }
  rm -f "$dir/program.copy"
  n=$(perl -e '
    local $/; open(my $f, "<:raw", $ARGV[0]) or die; my $d = <$f>; my @at;
    while ($d =~ /__CLANG_OFFLOAD_BUNDLE__|CCOB/g) {
      my $p = pos($d) - length($&);
      # A compressed bundle declares its size; skip over it so its contents are not searched.
      if ($& eq "CCOB") { my ($v) = unpack("v", substr($d, $p + 4, 2));
        my $size = $v >= 3 ? unpack("Q<", substr($d, $p + 8, 8)) : unpack("V", substr($d, $p + 8, 4));
        push @at, $p; pos($d) = $p + $size; next }
      push @at, $p }
    push @at, length($d);
    for my $i (0 .. $#at - 1) { open(my $o, ">:raw", sprintf("%s/bundle-%03d.bin", $ARGV[1], $i)) or die;
      print $o substr($d, $at[$i], $at[$i + 1] - $at[$i]) }
    print scalar(@at) - 1' "$fat" "$dir")
  [[ $n -gt 0 ]] || { echo "no offload bundles in $program" >&2; exit 1; }
  for b in "$dir"/bundle-*.bin; do
    mkdir -p "${b%.bin}"
    for a in "${ARCHS[@]}"; do
      "$BUNDLER" --unbundle --type=o --input="$b" --targets="hipv4-amdgcn-amd-amdhsa--$a" \
        --output="${b%.bin}/$a.co" 2>/dev/null || true
    done
  done
}

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

# Per function symbol: name count of matrix instructions (bf16 / f16, the int8 leaf's iu8, the fp8
# leaf's fp8_fp8)
matrix_counts() {
  "$OBJDUMP" -d --no-show-raw-insn "$1" | awk '
    /^[0-9a-f]+ <.*>:$/ { sym = $2; sub(/^</, "", sym); sub(/>:$/, "", sym); n[sym] += 0; next }
    /v_s?wmmac?_[a-z0-9_]*_(b?f16|iu8|fp8)/ { n[sym]++ }
    END { for (s in n) print s, n[s] }'
}

short_name() { echo "$1" | "$CXXFILT" | sed -e 's/(anonymous namespace):://g' -e 's/(.*$//' -e 's/^moss:://'; }

rows=() listed=() violations=() compile_failed=0 found_expected=0
record_violation() {  # kind, text
  violations+=("$2")
  [[ $1 == "$expect" ]] && found_expected=1
  return 0
}

# check_code_object NAME ARCH FILE MATRIX: every kernel of one code object against the rules.
check_code_object() {
  local base=$1 a=$2 co=$3 matrix=$4
  local undef kernels=0 name vgpr sgpr lds scratch vspill sspill dyn wave wg short nmma verdict kind is_matrix
  undef=$("$NM" -u "$co" | grep -c . || true)
  declare -A mma=()
  while read -r sym count; do mma[$sym]=$count; done < <(matrix_counts "$co")
  while read -r name vgpr sgpr lds scratch vspill sspill dyn wave wg; do
    kernels=$((kernels + 1))
    short=$(short_name "$name")
    nmma=${mma[$name]:-0}
    is_matrix=$matrix
    if [[ $matrix == list ]]; then   # --binary: the kind comes from the sources' kernel list
      is_matrix=0
      grep -qxF "$a matrix $name" "$matrix_list" && is_matrix=1
    fi
    bad=()
    [[ $is_matrix -eq 1 && $nmma -eq 0 ]] && { bad+=(matrix); record_violation matrix "$short [$a]: no bf16/f16/iu8/fp8 matrix instruction in a matrix kernel"; }
    [[ $wave -ne 32 ]] && { bad+=(wave); record_violation wave "$short [$a]: wavefront size $wave, must be 32"; }
    [[ " 32 64 128 256 " != *" $wg "* ]] && { bad+=(wg); record_violation workgroup "$short [$a]: max workgroup size $wg, must be a declared launch bound of 32, 64, 128 or 256 threads"; }
    [[ $scratch -ne 0 ]] && { bad+=(scratch); record_violation scratch "$short [$a]: $scratch bytes of scratch per lane"; }
    [[ $((vspill + sspill)) -ne 0 ]] && { bad+=(spill); record_violation spill "$short [$a]: $vspill VGPR and $sspill SGPR spills"; }
    [[ $dyn != no ]] && { bad+=(dyn); record_violation dynamic-stack "$short [$a]: uses a dynamic stack"; }
    [[ $undef -ne 0 ]] && { bad+=(undef); record_violation undefined "$short [$a]: $undef undefined symbols in $base"; }
    verdict=ok
    [[ ${#bad[@]} -gt 0 ]] && verdict="FAIL(${bad[*]})"
    kind=-
    [[ $is_matrix -eq 1 ]] && kind=matrix
    rows+=("$short|$a|$kind|$nmma|$wave|$wg|$vgpr|${OCC["$a $name"]:--}|$sgpr|$lds|$scratch|$((vspill + sspill))|$dyn|$undef|$verdict")
    listed+=("$a $kind $name")
  done < <(kernel_notes "$co")
  [[ $kernels -eq 0 ]] && record_violation no-kernels "$base [$a]: no kernels in the code object"
  return 0
}

if [[ -n $binary ]]; then
  # The code objects inside a built program: its .hip_fatbin section holds one offload bundle per
  # HIP source, each with a code object per architecture (extract_code_objects, below).
  extract_code_objects "$binary" "$out_dir/shipped"
  for bundle in "$out_dir"/shipped/bundle-*; do
    [[ -d $bundle ]] || continue
    for a in "${ARCHS[@]}"; do
      co="$bundle/$a.co"
      [[ -s $co ]] || { record_violation no-kernels "$(basename "$bundle") [$a]: no code object for $a"; continue; }
      check_code_object "$(basename "$bundle")" "$a" "$co" list
    done
  done
else
  # Every (source, target) compile first, CHECK_DEVICE_JOBS at a time (default: the cores; ten
  # targets made this the long part of the check), each with its own log; then the checks, in
  # order, so the table and the kernel list do not depend on which compile finished first.
  max_jobs=${CHECK_DEVICE_JOBS:-$(nproc)}
  srcs=() works=()
  for src in "${sources[@]}"; do
    [[ -f $src ]] || { echo "no such kernel source: $src" >&2; exit 2; }
    src=$(realpath "$src")
    base=$(basename "$src" .hip)
    srcs+=("$src") works+=("$out_dir/$base")
    mkdir -p "$out_dir/$base"
    for a in "${ARCHS[@]}"; do
      while [[ $(jobs -rp | wc -l) -ge $max_jobs ]]; do wait -n || true; done
      mapfile -t af < <(arch_flags "$a")
      (cd "$out_dir/$base" && "$CLANG" "${cflags[@]}" "${af[@]}" -Rpass-analysis=kernel-resource-usage -c "$src" \
         > "$a.log" 2>&1; echo $? > "$a.rc") &
    done
  done
  wait
  for i in "${!srcs[@]}"; do
    src=${srcs[$i]} work=${works[$i]}
    base=$(basename "$src" .hip)
    matrix=0
    grep -q '^// check_device: matrix[[:space:]]*$' "$src" && matrix=1
    for a in "${ARCHS[@]}"; do
      if [[ $(cat "$work/$a.rc" 2>/dev/null) != 0 ]]; then
        grep -v 'remark:' "$work/$a.log" >&2
        violations+=("$base: does not compile for $a")
        compile_failed=1
        continue
      fi
      while read -r fn waves; do OCC["$a $fn"]=$waves; done < <(occupancy_remarks < "$work/$a.log")
      check_code_object "$base" "$a" "$work/$base-hip-amdgcn-amd-amdhsa-$a.out" "$matrix"
    done
  done
fi
if [[ -n $kernels_out ]]; then
  printf '%s\n' "${listed[@]}" | sort -u > "$kernels_out"
fi

# ---- table ----
header="kernel|arch|kind|mma|wave|wg|vgpr|occ|sgpr|lds|scratch|spill|dyn|undef|result"
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
skipped=""
[[ ${#unknown[@]} -gt 0 ]] && skipped="; not known to $CLANG, not checked here: ${unknown[*]}"
if [[ ${#violations[@]} -gt 0 ]]; then
  echo "check_device: FAILED (${#violations[@]} violations; $nrows kernel builds checked for ${ARCHS[*]}$skipped)"
  exit 1
fi
echo "check_device: OK ($nrows kernel builds checked for ${ARCHS[*]}$skipped)"
