#!/usr/bin/env bash
# h200_gemm_sustain.sh: ours' GEMMs against cuBLAS at the clock the power cap leaves, in one call
# (issue 19). For each bundle given (packed by bench/make_carry.sh, under .carry/), `moss-check
# kernels --family dit --filter FILTER --sustain SECONDS`; then bench/gemm_reference.py (cuBLAS
# through PyTorch) at the same shapes, as long. The SM clock and the power are sampled throughout,
# and every timed row gets the mean clock of its own window, so a rate can be read per MHz too.
# Everything lands in $OUT/gemm-sustain/; the summary (summary.txt) is printed last.
#   bench/h200_gemm_sustain.sh BUNDLE... (names under .carry/, e.g. bundle.tar.xz bundle-old.tar.xz)
#   SUSTAIN (seconds, default 2), FILTER (default gemm; any group of the dit family, e.g. attention),
#   REFERENCE (default 1: run cuBLAS too; 0 for a group that is not GEMMs)
# Durations on the H200 at SUSTAIN=2: the gemm group about 175 s a bundle (and `gemm` also selects
# gemm_skinny, about 110 s more), gemm_gated_unit about 16 s, cuBLAS about 65 s: one device call
# (600 s at most) holds cuBLAS and the gemm group of one bundle, or gemm_gated_unit of several.
# (Its first run, with the gemm filter on two bundles, ran out of time before cuBLAS.)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -ge 1 ]] || { echo "usage: h200_gemm_sustain.sh BUNDLE..." >&2; exit 2; }
secs=${SUSTAIN:-2}
out=${OUT:-/tmp/out}/gemm-sustain
work=/tmp/gemm-sustain
mkdir -p "$out" "$work"
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }

(while :; do
   printf '%s %s\n' "$(date +%s.%N)" "$(nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits)"
   sleep 0.1
 done) >"$out/clocks.txt" 2>/dev/null &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT

for b in "$@"; do
  name=${b%.tar.xz}
  mkdir -p "$work/$name"
  tar -C "$work/$name" -xJf "$root/.carry/$b" || { echo "cannot unpack .carry/$b" >&2; exit 2; }
  echo "== $name: moss-check kernels --family dit --filter ${FILTER:-gemm} --sustain $secs"
  LD_LIBRARY_PATH=$work/$name/lib stdbuf -oL "$work/$name/bin/moss-check" kernels --family dit \
    --filter "${FILTER:-gemm}" --sustain "$secs" 2>&1 | stamp >"$out/ours-$name.log"
  tail -n 1 "$out/ours-$name.log"
done
if [[ ${REFERENCE:-1} == 1 ]]; then
  echo "== cuBLAS: bench/gemm_reference.py --seconds $secs"
  python3 "$root/bench/gemm_reference.py" --seconds "$secs" --json "$out/cublas.json" 2>&1 | stamp >"$out/cublas.log"
fi
kill $sampler 2>/dev/null

# An ours row is printed right after its timed run: its window is the SUSTAIN seconds before its
# line (the warm-up and the host's check replay come earlier); cuBLAS prints its own window. The
# clock and power of a row are the means of the samples inside its window.
python3 - "$out" "$secs" "$@" <<'EOF' | tee "$out/summary.txt"
import re, sys, os
out, secs = sys.argv[1], float(sys.argv[2])
clocks = []
for line in open(f"{out}/clocks.txt"):
    p = line.replace(",", " ").split()
    try:
        clocks.append((float(p[0]), float(p[1]), float(p[2])))
    except (IndexError, ValueError):
        pass
def window(t0, t1):
    s = [c for c in clocks if t0 <= c[0] <= t1]
    if not s:
        return "-", "-"
    return f"{sum(c[1] for c in s) / len(s):.0f}", f"{sum(c[2] for c in s) / len(s):.0f}"
print(f"{'source':14s} {'kernel':44s} {'shape':30s} {'ms':>9s} {'TFLOP/s':>8s} {'MHz':>5s} {'W':>4s} {'TF/GHz':>7s}")
def row(src, kernel, shape, ms, tf, t0, t1):
    mhz, w = window(t0, t1)
    per = f"{tf / (float(mhz) / 1000):.0f}" if mhz != "-" else "-"
    print(f"{src:14s} {kernel:44s} {shape:30s} {ms:9.4f} {tf:8.1f} {mhz:>5s} {w:>4s} {per:>7s}")
for b in sys.argv[3:]:
    name = b[:-len(".tar.xz")] if b.endswith(".tar.xz") else b
    for line in open(f"{out}/ours-{name}.log"):
        t, _, text = line.partition(" ")
        # "<case> <shape> <max diff> <tolerance> <ms> <N>TF/s". The shape: a GEMM's MxKxN and what
        # follows it (a long case name leaves one space before it), else what follows the case's
        # first run of 2+ spaces (an attention's "T4173 h24x128 bi ...").
        m = re.match(r"(\S.*?)\s+\S+\s+\S+\s+([0-9.]+)\s+([0-9]+)TF/s", text)
        if m:
            left = m.group(1).strip()
            g = re.search(r"\s(\d+x\d+x\d+\b.*)$", left)
            case, shape = (left[:g.start()], g.group(1)) if g else (re.split(r"\s{2,}", left, maxsplit=1) + [""])[:2]
            row(name, case.strip()[:44], shape[:30], float(m.group(2)), float(m.group(3)), float(t) - secs, float(t))
if os.path.exists(f"{out}/cublas.log"):
    for line in open(f"{out}/cublas.log"):
        m = re.search(r"cublas (.+?)\s+(\d+x\d+x\d+)\s+([0-9.]+) ms\s+([0-9.]+) TFLOP/s\s+window ([0-9.]+) ([0-9.]+)", line)
        if m:
            row("cublas", m.group(1), m.group(2), float(m.group(3)), float(m.group(4)), float(m.group(5)), float(m.group(6)))
EOF
