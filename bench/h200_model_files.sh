#!/usr/bin/env bash
# Issue 45's closing measurement on a GPU machine: the full-size random-weight model loaded from
# its diffusers folder and from the same weights as Comfy-Org's single files (fused-qkv DiT,
# model.-prefixed text encoder, LDM-named VAE; written by model_layouts --comfy-only), built-in
# configurations: wall time, the record's stage times (text encoder, DiT load) and peak host
# memory (/usr/bin/time's maximum resident set) of each, and the latents compared bit for bit.
# Each layout runs RUNS times alternately after one warm-up of each (the page cache then holds
# both copies, so the comparison is of the loading code, not of the disk).
# Usage: bench/h200_model_files.sh BIN_DIR OUT_DIR [MODEL_DIR] [STEPS]   (SIZE=WxH, RUNS=N;
# a quick try on the tiny model: MOSSINFER_BACKEND=host SIZE=32x32 EXTRA="--skip-layers 2"
# FILES_EXTRA="--model-config DIR")
set -uo pipefail
BIN=$1
OUT=$2
MODEL=${3:-/tmp/moss-random-full}
STEPS=${4:-4}
RUNS=${RUNS:-2}
LAYOUTS=$OUT/layouts
mkdir -p "$OUT"
log() { echo "$@" | tee -a "$OUT/model_files.txt"; }
[[ -x /usr/bin/time ]] || { log "FAIL /usr/bin/time is missing (apt-get install time)"; exit 2; }
if [[ ! -f $MODEL/transformer/diffusion_pytorch_model.safetensors ]]; then
  tools/random_model.sh "$MODEL" "$BIN" >"$OUT/model.log" 2>&1 || { log "FAIL writing the random model"; exit 1; }
fi
if [[ ! -f $LAYOUTS/vae_ldm.safetensors ]]; then
  "$BIN/model_layouts" --from "$MODEL" --out "$LAYOUTS" --comfy-only >"$OUT/layouts.log" 2>&1 ||
    { log "FAIL model_layouts: $(tail -1 "$OUT/layouts.log")"; exit 1; }
fi
# Both layouts' files written back to the disk before any run: dirty pages of the files just
# written would otherwise be flushed during the timed runs of one layout and not the other.
sync
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
one folder 0 "${folder[@]}"
one files 0 "${files[@]}"
for i in $(seq 1 "$RUNS"); do
  one folder "$i" "${folder[@]}"
  one files "$i" "${files[@]}"
done
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
    return seconds, rss, r["text_encoder"], r["dit_load"]
rows = {}
for name in ("folder", "files"):
    m = [measure(name, i) for i in range(1, runs + 1)]
    rows[name] = [statistics.median(c) for c in zip(*m)]
    w, rss, te, dl = rows[name]
    print(f"{name:7s} wall {w:7.2f} s  peak host RSS {rss:6.2f} GiB  text encoder {te:6.2f} s  dit load {dl:6.2f} s (median of {runs})")
    for i in range(0, runs + 1):
        t = record(f"{out}/{name}-{i}.png")["timings_s"]
        print(f"  {name}-{i}: wall {measure(name, i)[0]:.2f} s, " + ", ".join(f"{k} {v:.3f}" for k, v in t.items() if isinstance(v, (int, float))))
for k, label in ((0, "wall"), (1, "peak RSS"), (3, "dit load")):
    a, b = rows["folder"][k], rows["files"][k]
    print(f"files / folder {label}: {b / a:.3f}" + ("" if abs(b / a - 1) <= 0.10 else "  (more than 10% apart)"))
PY
same=1
for i in $(seq 0 "$RUNS"); do cmp -s "$OUT/folder-0.npy" "$OUT/files-$i.npy" || same=0; done
log "$([[ $same == 1 ]] && echo PASS || echo FAIL) latents from the single files equal the folder's bit for bit"
log "device: $(grep -m1 '^device' "$OUT/folder-1.log")"
log "$(grep -m1 '^memory plan' "$OUT/files-1.log")"
[[ $same == 1 ]]
