#!/usr/bin/env bash
# Issue 45's closing measurement on a GPU machine: the full-size random-weight model loaded from
# its diffusers folder and from the same weights as Comfy-Org's single files (fused-qkv DiT,
# model.-prefixed text encoder, LDM-named VAE; written by model_layouts --comfy-only), built-in
# configurations: wall time, the record's stage times (text encoder, DiT load), the opening
# (the `model files:` line's "opened and checked in"), the time outside the stages (wall less
# the record's total: process start, opening, exit) and peak host memory (/usr/bin/time's
# maximum resident set) of each, and the latents compared bit for bit.
#
# Both layouts must reach the loader alike, or the comparison measures the files' history
# instead of the loading code. Reading a mapping costs page faults, and their cost depends on
# the page cache's folio size, which depends on how and where the file was written: on the GPU
# machines' kernel a file written in 2 MiB pieces is mapped 2 MiB a fault (copies from it at
# 12 GB/s, unmapped at 0.01 s a GiB), one written through a pipe 4 KiB a fault (4 GB/s, 0.07 s a
# GiB; bench/NOTES.md, 2026-12-07). So the layouts are written beside the model (the same file
# system; LAYOUTS=DIR overrides), and before the runs every weights file of both is dropped from
# the page cache (posix_fadvise DONTNEED, after sync) and read back by the same reader, in the
# same order. The file systems and the page cache's huge-folio counters are logged.
# Each layout runs RUNS times after one warm-up of each, the order alternating (folder first in
# odd rounds, files first in even ones).
# Usage: bench/h200_model_files.sh BIN_DIR OUT_DIR [MODEL_DIR] [STEPS]   (SIZE=WxH, RUNS=N;
# a quick try on the tiny model: MOSSINFER_BACKEND=host SIZE=32x32 EXTRA="--skip-layers 2"
# FILES_EXTRA="--model-config DIR")
source "$(dirname "$0")/h200_setup.sh" model_files.txt "$@"
STEPS=${4:-4}
RUNS=${RUNS:-2}
LAYOUTS_GIVEN=${LAYOUTS:-}
LAYOUTS=${LAYOUTS:-${MODEL%/}-layouts}
[[ -x /usr/bin/time ]] || { log "FAIL /usr/bin/time is missing (apt-get install time)"; exit 2; }
random_model
# Beside the model when its disk holds a second copy (26 GB), else under OUT_DIR, said in the log:
# then the two layouts may sit on file systems that map them differently (see above).
if [[ -z ${LAYOUTS_GIVEN:-} && ! -f $LAYOUTS/vae_ldm.safetensors ]]; then
  need=$(( $(du -scb "$MODEL"/{transformer,text_encoder,vae}/*.safetensors | tail -1 | cut -f1) + (2 << 30) ))
  avail=$(df -B1 --output=avail "$(dirname "$LAYOUTS")" | tail -1)
  if (( avail < need )); then
    log "WARNING: $(dirname "$LAYOUTS") has $(( avail >> 30 )) GiB free, the layouts need $(( need >> 30 )): written under $OUT"
    LAYOUTS=$OUT/layouts
  fi
fi
if [[ ! -f $LAYOUTS/vae_ldm.safetensors ]]; then
  "$BIN/model_layouts" --from "$MODEL" --out "$LAYOUTS" --comfy-only >"$OUT/layouts.log" 2>&1 ||
    { log "FAIL model_layouts: $(tail -1 "$OUT/layouts.log")"; exit 1; }
fi
# Both layouts' files written back to the disk, dropped from the page cache and read back alike
# (above). Dirty pages would otherwise be flushed during the timed runs of one layout only.
sync
# How each DiT file maps, as its pages came into the cache: one thread copying its first 4 GiB
# out of a fresh mapping, the huge-folio mappings that made (FilePmdMapped), and the unmapping.
# Run before and after the read-back: the evidence for or against the folio-size account.
mapping_speed() {
  python3 - "$1" "$MODEL"/transformer/diffusion_pytorch_model.safetensors "$LAYOUTS"/dit_comfy.safetensors <<'PY' |
import mmap, os, sys, time
def pmd():
    for line in open("/proc/meminfo"):
        if line.startswith("FilePmdMapped:"): return int(line.split()[1]) >> 10
for path in sys.argv[2:]:
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size; n = min(size, 4 << 30)
    before = pmd()
    m = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ)
    view, buf = memoryview(m), bytearray(16 << 20)  # a slice assigned in place: one memcpy each
    t = time.perf_counter()
    for o in range(0, n, len(buf)):
        k = min(len(buf), n - o); buf[:k] = view[o:o + k]
    copy = time.perf_counter() - t; mapped = pmd() - before
    view.release()
    t = time.perf_counter(); m.close(); unmap = time.perf_counter() - t
    os.close(fd)
    print(f"mapping {sys.argv[1]}: {path}: {n / copy / 1e9:.1f} GB/s from a fresh mapping, "
          f"{mapped} MiB of it in huge folios, unmapped in {unmap:.3f} s")
PY
    tee -a "$OUT/model_files.txt"
}
mapping_speed "as written"
weights=("$MODEL"/transformer/*.safetensors "$MODEL"/text_encoder/*.safetensors "$MODEL"/vae/*.safetensors
         "$LAYOUTS"/dit_comfy.safetensors "$LAYOUTS"/te_model.safetensors "$LAYOUTS"/vae_ldm.safetensors)
python3 - "${weights[@]}" <<'PY' | tee -a "$OUT/model_files.txt"
import os, sys, time
for path in sys.argv[1:]:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    t = time.perf_counter(); n = 0
    while True:
        b = os.read(fd, 16 << 20)
        if not b: break
        n += len(b)
    os.close(fd)
    print(f"page cache: {path} dropped and read back, {n / 2**30:.2f} GiB in {time.perf_counter() - t:.2f} s")
PY
mapping_speed "read back"
log "file systems: model $(stat -f -c %T "$MODEL"), layouts $(stat -f -c %T "$LAYOUTS")"
log "$(grep -E '^(MemTotal|Cached|FileHugePages)' /proc/meminfo | tr -s ' ' | tr '\n' ';')" \
    "THP $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
common=(--prompt "$prompt" --size "${SIZE:-1024x1024}" --steps "$STEPS" --seed 7 ${EXTRA:-})
folder=(--model "$MODEL")
files=(--diffusion-model "$LAYOUTS/dit_comfy.safetensors" --text-encoder "$LAYOUTS/te_model.safetensors"
       --vae "$LAYOUTS/vae_ldm.safetensors" --tokenizer "$MODEL/tokenizer/tokenizer.json" ${FILES_EXTRA:-})
"$BIN/moss-infer-hip" inspect "$LAYOUTS"/*.safetensors --tokenizer "$MODEL/tokenizer/tokenizer.json" ${FILES_EXTRA:-} |
  tee "$OUT/inspect.txt" >/dev/null || { log "FAIL inspect: $(tail -1 "$OUT/inspect.txt")"; exit 1; }

# one NAME I ARGS...: a run, its wall time, peak RSS and record times into $OUT/NAME-I.*
one() {
  local name=$1 i=$2
  shift 2
  /usr/bin/time -v -o "$OUT/$name-$i.time" "$BIN/moss-infer-hip" "$@" "${common[@]}" \
    -o "$OUT/$name-$i.png" --latent-out "$OUT/$name-$i.npy" >"$OUT/$name-$i.log" 2>&1 ||
    { log "FAIL $name run $i: $(tail -1 "$OUT/$name-$i.log")"; exit 1; }
}
run_folder() { one folder "$1" "${folder[@]}"; }
run_files() { one files "$1" "${files[@]}"; }
run_folder 0
run_files 0
for i in $(seq 1 "$RUNS"); do alternate "$i" run_folder run_files; done
python3 - "$OUT" "$RUNS" <<'PY' | tee -a "$OUT/model_files.txt"
import json, re, statistics, struct, sys, zlib
out, runs = sys.argv[1], int(sys.argv[2])
def record(png):
    data = open(png, "rb").read(); pos = 8
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4]); kind = data[pos + 4:pos + 8]; body = data[pos + 8:pos + 8 + n]
        if kind == b"tEXt" and body.startswith(b"generation\0"): return json.loads(body.split(b"\0", 1)[1])
        pos += 12 + n
def measure(name, i):
    t = open(f"{out}/{name}-{i}.time").read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", t)
    h, m, s = wall.groups(); seconds = int(h or 0) * 3600 + int(m) * 60 + float(s)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1048576
    r = record(f"{out}/{name}-{i}.png")["timings_s"]
    opened = re.search(r"opened and checked in ([\d.]+) s", open(f"{out}/{name}-{i}.log").read())
    return seconds, rss, r["text_encoder"], r["dit_load"], float(opened.group(1)) if opened else float("nan"), seconds - r["total"]
rows = {}
for name in ("folder", "files"):
    m = [measure(name, i) for i in range(1, runs + 1)]
    rows[name] = [statistics.median(c) for c in zip(*m)]
    w, rss, te, dl, op, outside = rows[name]
    print(f"{name:7s} wall {w:7.2f} s  peak host RSS {rss:6.2f} GiB  text encoder {te:6.2f} s  dit load {dl:6.2f} s  "
          f"opening {op:6.3f} s  outside the stages {outside:5.2f} s (median of {runs})")
    for i in range(0, runs + 1):
        t = record(f"{out}/{name}-{i}.png")["timings_s"]
        print(f"  {name}-{i}: wall {measure(name, i)[0]:.2f} s, " + ", ".join(f"{k} {v:.3f}" for k, v in t.items() if isinstance(v, (int, float))))
for k, label in ((0, "wall"), (1, "peak RSS"), (2, "text encoder"), (3, "dit load")):
    a, b = rows["folder"][k], rows["files"][k]
    print(f"files / folder {label}: {b / a:.3f}" + ("" if abs(b / a - 1) <= 0.10 else "  (more than 10% apart)"))
PY
same=1
for i in $(seq 0 "$RUNS"); do cmp -s "$OUT/folder-0.npy" "$OUT/files-$i.npy" || same=0; done
log "$([[ $same == 1 ]] && echo PASS || echo FAIL) latents from the single files equal the folder's bit for bit"
log "device: $(grep -m1 '^device' "$OUT/folder-1.log")"
log "$(grep -m1 '^memory plan' "$OUT/files-1.log")"
[[ $same == 1 ]]
