#!/usr/bin/env bash
# amd_package_check.sh TARBALL MOSS_CHECK DATA_DIR: the AMD release tarball as a user gets it
# (issue 15), run inside the ROCm 7 root (no GPU): unpacked into an empty folder and started from
# there. Checks what the binary needs from the system (glibc floor, sonames, RUNPATH, no shared
# libstdc++), the licence texts, --version/--help/--list-devices, serve (its web page, and an
# image from txt2img equal to the CLI's), a GPU run's refusal without a device, the tiny model on
# the host backend against the golden image, and where the loader finds libamdhip64.so.7
# (LD_LIBRARY_PATH, then the package's lib/, then /opt/rocm/lib, then the system's paths) by
# moving the library between those places.
# Prints one PASS/FAIL line per check and 'N passed, M failed'; exit 0 only when all passed.
set -uo pipefail
tarball=$(realpath "${1:?usage: amd_package_check.sh TARBALL MOSS_CHECK DATA_DIR}")
moss_check=$(realpath "${2:?}")
data=$(realpath "${3:?}")
tests=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/server" && pwd)
# The oldest distribution the release targets: Ubuntu 22.04 (glibc 2.35); docs/amd_release.md.
GLIBC_FLOOR=2.35
ALLOWED_NEEDED="libamdhip64.so.7 libc.so.6 libm.so.6 ld-linux-x86-64.so.2"

work=$(mktemp -d)
moved=()   # library copies this script put in place, removed again on exit
system_lib=$(readlink -f /usr/lib/x86_64-linux-gnu/libamdhip64.so.7)
hidden=$work/hidden-libamdhip64
cleanup() {
  [[ -e $hidden ]] && mv "$hidden" "$system_lib"
  local f; for f in "${moved[@]}"; do rm -f "$f"; done
  rmdir /opt/rocm/lib /opt/rocm 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
passed=0 failed=0
check() {  # NAME CONDITION-TEXT-ON-FAILURE(empty = pass)
  if [[ -z $2 ]]; then passed=$((passed + 1)); echo "PASS $1"; else failed=$((failed + 1)); echo "FAIL $1: $2"; fi
}

mkdir "$work/pkg" && tar xzf "$tarball" -C "$work/pkg"
top=$(ls "$work/pkg")
pkg=$work/pkg/$top
bin=$pkg/bin/moss-infer-hip
check "tarball holds one folder named as the file" "$([[ $top.tar.gz == $(basename "$tarball") ]] || echo "$top")"
check "bin/moss-infer-hip is executable" "$([[ -x $bin ]] || echo missing)"

# ---- what the binary needs from the system ----
glibc_max=$(objdump -T "$bin" | grep -oE 'GLIBC_[0-9]+(\.[0-9]+)+' | sed 's/GLIBC_//' | sort -V | tail -1)
echo "     highest GLIBC symbol version: $glibc_max"
check "no symbol needs glibc newer than $GLIBC_FLOOR" \
  "$([[ $(printf '%s\n' "$glibc_max" "$GLIBC_FLOOR" | sort -V | tail -1) == "$GLIBC_FLOOR" ]] || \
     objdump -T "$bin" | grep -E "GLIBC_$glibc_max" | head -3 | tr -s ' ' | tr '\n' ';')"
check "no GLIBCXX or CXXABI symbols (libstdc++ static)" \
  "$(objdump -T "$bin" | grep -E 'GLIBCXX|CXXABI' | head -3 | tr -s ' ' | tr '\n' ';')"
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "     NEEDED: $needed"
extra=""
for n in $needed; do [[ " $ALLOWED_NEEDED " == *" $n "* ]] || extra+="$n "; done
check "needs only $ALLOWED_NEEDED" "$extra"
runpath=$(readelf -d "$bin" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
check "RUNPATH is \$ORIGIN/../lib:/opt/rocm/lib" "$([[ $runpath == '$ORIGIN/../lib:/opt/rocm/lib' ]] || echo "$runpath")"
read -ra targets < "$(dirname "${BASH_SOURCE[0]}")/../amd_targets.txt"
check "code objects for ${targets[*]}" \
  "$(for a in "${targets[@]}"; do grep -qa "amdgcn-amd-amdhsa--$a" "$bin" || echo -n "$a missing "; done)"
for lic in LICENSE THIRD_PARTY_LICENSES.md licenses/README.txt licenses/libpcre2-8-0.copyright \
           licenses/libutf8proc2.copyright licenses/libpng16-16.copyright licenses/zlib1g.copyright \
           licenses/libstdc++6.copyright licenses/cpp-httplib.copyright licenses/common-licenses/GPL-3 \
           licenses/common-licenses/Apache-2.0; do
  check "licence text $lic" "$([[ -s $pkg/$lic ]] || echo missing)"
done
ldd "$bin" | sed 's/^/     ldd: /'

# ---- started from the unpacked folder ----
run() { (cd "$work" && "$@") > "$work/out.txt" 2>&1; echo $?; }
rc=$(run "$bin" --version)
built="architectures: $(printf '%s, ' "${targets[@]}" | sed 's/, $//')"
check "--version exits 0 and names the ${#targets[@]} architectures" \
  "$([[ $rc == 0 ]] && grep -qxF "$built" "$work/out.txt" || { echo "exit $rc:"; head -3 "$work/out.txt"; })"
rc=$(run "$bin" --help)
check "--help exits 0" "$([[ $rc == 0 ]] && grep -q 'usage: moss-infer-hip' "$work/out.txt" || echo "exit $rc")"
rc=$(run "$bin" --list-devices)
check "--list-devices exits 0: no HIP devices" "$([[ $rc == 0 ]] && grep -qx 'no HIP devices' "$work/out.txt" || { echo "exit $rc:"; head -3 "$work/out.txt"; })"
# The server with cpp-httplib compiled in: the web page at /, and an image from POST txt2img equal
# to the CLI's (hip/tests/server/web_page_test.py starts `serve` from the package; host backend).
rc=$(run python3 "$tests/web_page_test.py" "$bin" "$data/tiny-moss")
grep -E '^(PASS|FAIL)' "$work/out.txt" | sed 's/^/     serve: /'
check "serve from the package: the web page, and txt2img gives the CLI's image" \
  "$([[ $rc == 0 ]] || { echo "exit $rc:"; grep -v '^PASS' "$work/out.txt" | tail -5; })"
tiny=(--model "$data/tiny-moss" --prompt 'a red apple on a wooden table' --negative '' --size 96x64 --steps 4
      --cfg 3 --shift 5 --seed 42 --skip-layers 2)
rc=$(run env -u MOSSINFER_BACKEND "$bin" "${tiny[@]}" -o "$work/gpu.png")
check "a GPU run without a device: exit 1, the no-device message, no file" \
  "$([[ $rc == 1 ]] && grep -q 'no HIP devices found' "$work/out.txt" && ! ls "$work" | grep -q 'gpu\.png\|^\.moss-infer-' || { echo "exit $rc:"; head -3 "$work/out.txt"; })"
for sub in self-test bench; do
  rc=$(run "$bin" $sub)
  check "$sub without a device: exit 1, 'no supported device'" \
    "$([[ $rc == 1 ]] && grep -q '^moss-infer-hip: no supported device' "$work/out.txt" || { echo "exit $rc:"; head -3 "$work/out.txt"; })"
done
rc=$(run env MOSSINFER_BACKEND=host "$bin" "${tiny[@]}" -o "$work/apple.png" --latent-out "$work/apple.npy")
check "the tiny model on the host backend" "$([[ $rc == 0 ]] || { echo "exit $rc:"; tail -3 "$work/out.txt"; })"
"$moss_check" cli-output --png "$work/apple.png" --npy "$work/apple.npy" --golden "$data/golden_dit.safetensors" > "$work/golden.txt" 2>&1
check "its PNG and latents against the golden image" "$([[ $? == 0 ]] || tail -3 "$work/golden.txt")"

# ---- where the loader finds libamdhip64.so.7 ----
# A copy in each place, marked by its folder; ldd says which one the binary would load.
found() { env "$@" ldd "$bin" | awk '$1 == "libamdhip64.so.7" { print $3 }'; }
mkdir -p "$work/ldpath" "$pkg/lib" /opt/rocm/lib
for d in "$work/ldpath" "$pkg/lib" /opt/rocm/lib; do
  [[ -e $d/libamdhip64.so.7 ]] && { echo "FAIL: $d/libamdhip64.so.7 exists already"; exit 1; }
  cp "$system_lib" "$d/libamdhip64.so.7"; moved+=("$d/libamdhip64.so.7")
done
check "LD_LIBRARY_PATH first" "$(f=$(found LD_LIBRARY_PATH="$work/ldpath"); [[ $f == "$work/ldpath/libamdhip64.so.7" ]] || echo "$f")"
check "then the package's lib/" "$(f=$(found); [[ $(readlink -f "$f") == $(readlink -f "$pkg/lib/libamdhip64.so.7") ]] || echo "$f")"
rm -f "$pkg/lib/libamdhip64.so.7"
check "then /opt/rocm/lib" "$(f=$(found); [[ $f == /opt/rocm/lib/libamdhip64.so.7 ]] || echo "$f")"
rm -f /opt/rocm/lib/libamdhip64.so.7
check "then the system's paths" "$(f=$(found); [[ $(readlink -f "$f") == "$system_lib" ]] || echo "$f")"
rc=$(run env LD_LIBRARY_PATH="$work/ldpath" "$bin" --version)
check "it starts with the LD_LIBRARY_PATH copy alone" "$([[ $rc == 0 ]] || echo "exit $rc")"
mv "$system_lib" "$hidden"
rm -f "$work/ldpath/libamdhip64.so.7"
rc=$(run "$bin" --version)
check "without the library: the loader's message names it" \
  "$([[ $rc != 0 ]] && grep -q 'libamdhip64.so.7: cannot open shared object file' "$work/out.txt" || { echo "exit $rc:"; head -2 "$work/out.txt"; })"
mv "$hidden" "$system_lib"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
