#!/usr/bin/env bash
# The files MOSS-Image users hold (issue 45, docs/model_files.md), on the host backend with the
# tiny model rewritten by model_layouts into every layout: each gives the folder's latents and
# pixels bit for bit (a VAE file without latent statistics: the image of the published FLUX.2
# values, which differs from the folder's); every refusal names file and reason, exits with its
# status and writes nothing; `inspect` says what each file holds.
# Usage: model_files_tests.sh BINARY MODEL_DIR MODEL_LAYOUTS
source "$(dirname "$0")/script_setup.sh" "$@"
LAYOUTS=$(realpath "$3")
export MOSSINFER_BACKEND=host
check() {
  local name=$1
  shift
  if "$@" >/dev/null 2>&1; then ok "$name"; else bad "$name" "$*"; fi
}
L=$WORK/layouts
"$LAYOUTS" --from "$MODEL" --out "$L" >/dev/null || { echo "FAIL model_layouts"; exit 1; }
TOK=$MODEL/tokenizer/tokenizer.json
CFG=(--model-config "$MODEL" --tokenizer "$TOK")
small=(--prompt "a lighthouse at dusk" --negative "blurry" --size 48x32 --steps 2 --skip-layers 2 --seed 5 --quiet)
run() { (cd "$WORK" && "$BIN" "$@"); }
same_image() {  # NAME: NAME.npy and NAME.png equal the folder's
  cmp -s "$WORK/folder.npy" "$WORK/$1.npy" && python3 "$HERE/png_tool.py" same-pixels "$WORK/folder.png" "$WORK/$1.png"
}
# layout NAME ARGS...: the image from ARGS is the folder's, latents and pixels.
layout() {
  local name=$1
  shift
  if run "$@" "${small[@]}" -o "$name.png" --latent-out "$name.npy"; then check "layout-$name" same_image "$name"
  else bad "layout-$name" "run failed"; fi
}

run --model "$MODEL" "${small[@]}" -o folder.png --latent-out folder.npy || { echo "FAIL folder run"; exit 1; }
# Comfy-Org's three files (fused qkv DiT, model.-prefixed text encoder, LDM VAE with 1x1 convs).
layout comfy --diffusion-model "$L/dit_comfy.safetensors" --text-encoder "$L/te_model.safetensors" \
  --vae "$L/vae_ldm.safetensors" "${CFG[@]}"
# Single files overriding a folder's components (its configs and tokenizer).
layout prefixed-split-dit --model "$MODEL" --diffusion-model "$L/dit_prefixed_split.safetensors"
layout te-language-model --model "$MODEL" --text-encoder "$L/te_language_model.safetensors"
layout te-model-language-model --model "$MODEL" --llm "$L/te_model_language_model.safetensors"
layout te-no-prefix --model "$MODEL" --text-encoder "$L/te_none.safetensors"
layout vae-diffusers-file --model "$MODEL" --vae "$MODEL/vae/diffusion_pytorch_model.safetensors"
layout all-in-one --model "$L/all_in_one.safetensors" "${CFG[@]}"
layout all-in-one-dit-overridden --model "$L/all_in_one.safetensors" --diffusion-model "$L/dit_prefixed_split.safetensors" "${CFG[@]}"
# A VAE file without statistics decodes with the published FLUX.2 values: the same latents, the
# image of a file holding those values, not the folder's (whose own statistics differ).
run --model "$MODEL" --vae "$L/vae_ldm_nostats.safetensors" "${small[@]}" -o nostats.png --latent-out nostats.npy
run --model "$MODEL" --vae "$L/vae_ldm_builtin_stats.safetensors" "${small[@]}" -o builtin.png
check builtin-stats-latents cmp -s "$WORK/folder.npy" "$WORK/nostats.npy"
check builtin-stats-image python3 "$HERE/png_tool.py" same-pixels "$WORK/builtin.png" "$WORK/nostats.png"
check builtin-stats-differ-from-file-stats bash -c "! python3 '$HERE/png_tool.py' same-pixels '$WORK/folder.png' '$WORK/nostats.png'"
gen=$(python3 "$HERE/png_tool.py" text "$WORK/nostats.png" generation)
check builtin-stats-recorded grep -q 'built-in FLUX.2' <<<"$gen"
# The record names each component's file and a short hash; another file, another hash.
gen=$(python3 "$HERE/png_tool.py" text "$WORK/comfy.png" generation)
check record-files python3 -c '
import json, sys
f = json.loads(sys.argv[1])["model_files"]
assert [x["file"] for x in f] == ["dit_comfy.safetensors", "te_model.safetensors", "vae_ldm.safetensors"], f
assert all(len(x["hash"]) == 12 for x in f), f' "$gen"
check record-hash-differs python3 -c '
import json, sys
a = json.loads(sys.argv[1])["model_files"][2]["hash"]; b = json.loads(sys.argv[2])["model_files"][2]["hash"]
assert a != b, (a, b)' "$gen" "$(python3 "$HERE/png_tool.py" text "$WORK/nostats.png" generation)"
check record-model-hash grep -q 'Model hash: ' <<<"$(python3 "$HERE/png_tool.py" text "$WORK/comfy.png" parameters)"
# --from-png says when the files differ from the record's (and not when they are the same).
warn=$(run --from-png comfy.png --model "$MODEL" -o replay-folder.png 2>&1)
check replay-other-files grep -q "the record's diffusion model is dit_comfy.safetensors ([0-9a-f]*), this run's is transformer/diffusion_pytorch_model.safetensors" <<<"$warn"
check replay-other-files-same-image python3 "$HERE/png_tool.py" same-pixels "$WORK/comfy.png" "$WORK/replay-folder.png"
warn=$(run --from-png folder.png --model "$MODEL" -o replay-same.png 2>&1)
check replay-same-files bash -c "! grep -q \"the record's\" <<<\"\$1\"" _ "$warn"
# A jobs file takes the component flags as its defaults.
printf '{"prompt": "a lighthouse at dusk", "negative_prompt": "blurry", "width": 48, "height": 32, "steps": 2, "seed": 5, "output": "job.png"}\n' >"$WORK/jobs.jsonl"
run --diffusion-model "$L/dit_comfy.safetensors" --model "$MODEL" --jobs jobs.jsonl --skip-layers 2 --quiet
check jobs-component-files python3 "$HERE/png_tool.py" same-pixels "$WORK/folder.png" "$WORK/job.png"
# A line naming the checkpoint as a server on these files lists it (its DiT file's name) is accepted.
printf '{"prompt": "a lighthouse at dusk", "negative_prompt": "blurry", "width": 48, "height": 32, "steps": 2, "seed": 5, "output": "job2.png", "override_settings": {"sd_model_checkpoint": "dit_comfy.safetensors"}}\n' >"$WORK/jobs2.jsonl"
run --diffusion-model "$L/dit_comfy.safetensors" --text-encoder "$L/te_model.safetensors" --vae "$L/vae_ldm.safetensors" \
  "${CFG[@]}" --jobs jobs2.jsonl --skip-layers 2 --quiet
check jobs-single-files-checkpoint-name python3 "$HERE/png_tool.py" same-pixels "$WORK/folder.png" "$WORK/job2.png"

# serve takes the component flags too: its image is the folder's, its info names the DiT's hash
# (in builds with the server).
if "$BIN" serve --help >/dev/null 2>&1; then
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$BIN" serve --port "$port" --diffusion-model "$L/dit_comfy.safetensors" --text-encoder "$L/te_model.safetensors" \
  --vae "$L/vae_ldm.safetensors" "${CFG[@]}" --skip-layers 2 >"$WORK/serve.log" 2>&1 &
serve_pid=$!
check serve-component-files python3 - "$port" "$WORK/served.png" "$WORK/comfy.png" <<'PY'
import base64, json, sys, time, urllib.request
port, out, comfy = sys.argv[1:]
base = f"http://127.0.0.1:{port}"
for _ in range(100):
    try:
        urllib.request.urlopen(base + "/health", timeout=1); break
    except Exception:
        time.sleep(0.1)
body = {"prompt": "a lighthouse at dusk", "negative_prompt": "blurry", "width": 48, "height": 32, "steps": 2, "seed": 5}
req = urllib.request.Request(base + "/sdapi/v1/txt2img", json.dumps(body).encode(), {"Content-Type": "application/json"})
reply = json.loads(urllib.request.urlopen(req, timeout=60).read())
open(out, "wb").write(base64.b64decode(reply["images"][0]))
info = json.loads(reply["info"])
files = info["generation"][0]["model_files"]
assert files[0]["file"] == "dit_comfy.safetensors" and info["sd_model_hash"] == files[0]["hash"], info
models = json.loads(urllib.request.urlopen(base + "/sdapi/v1/sd-models", timeout=5).read())
assert models[0]["model_name"] == "dit_comfy.safetensors", models
PY
kill "$serve_pid" 2>/dev/null
wait "$serve_pid" 2>/dev/null
check serve-same-pixels python3 "$HERE/png_tool.py" same-pixels "$WORK/folder.png" "$WORK/served.png"
fi

# expect_refusal NAME STATUS PATTERN ARGS...: exits STATUS, says PATTERN, writes nothing.
expect_refusal() {
  local name=$1 status=$2 pattern=$3
  shift 3
  rm -rf "$WORK/refused" && mkdir -p "$WORK/refused"
  local out rc
  out=$(cd "$WORK/refused" && "$BIN" "$@" "${small[@]}" -o out.png --latent-out out.npy 2>&1 </dev/null)
  rc=$?
  if [[ $rc -ne $status ]]; then bad "$name" "exit $rc, expected $status: $(head -2 <<<"$out")"
  elif ! grep -qE -- "$pattern" <<<"$out"; then bad "$name" "output does not match /$pattern/: $(head -2 <<<"$out")"
  elif [[ -n $(ls -A "$WORK/refused") ]]; then bad "$name" "left files: $(ls -A "$WORK/refused")"
  else ok "$name"; fi
}
dit() { echo --model "$MODEL" --diffusion-model "$L/$1.safetensors"; }
# shellcheck disable=SC2046
{
expect_refusal refuse-missing-tensor 1 "bad_missing.safetensors.*missing tensor 'layers.1.proj.o.weight'" $(dit bad_missing)
expect_refusal refuse-duplicated-tensor 1 "bad_duplicated.safetensors.*'layers.0.proj.q.weight'.*given twice" $(dit bad_duplicated)
expect_refusal refuse-unplaced-tensor 1 "bad_unplaced.safetensors.*could not place.*lora_up" $(dit bad_unplaced)
expect_refusal refuse-quantized 2 "bad_quantized.safetensors: quantized weights, format 'float8_e4m3fn'" $(dit bad_quantized)
expect_refusal refuse-flux 2 "bad_flux.safetensors: not a MOSS-Image file: it looks like a FLUX" $(dit bad_flux)
expect_refusal refuse-qwen-image 2 "bad_qwen_image.safetensors: not a MOSS-Image file: it looks like a Qwen-Image" $(dit bad_qwen_image)
expect_refusal refuse-other-text-encoder 2 "bad_other_te.safetensors: not a MOSS-Image file: its text encoder has no Gated DeltaNet" \
  --model "$MODEL" --text-encoder "$L/bad_other_te.safetensors"
head -c 100000 "$L/dit_comfy.safetensors" >"$WORK/truncated.safetensors"
expect_refusal refuse-truncated 1 "truncated.safetensors: tensor .* beyond the file" --model "$MODEL" --diffusion-model "$WORK/truncated.safetensors"
# A GGUF header (gguf.md): version 3, three tensors (two Q4_K, one BF16), general.architecture.
python3 - "$WORK/model.gguf" <<'PY'
import struct, sys
s = lambda t: struct.pack("<Q", len(t)) + t.encode()
kv = s("general.architecture") + struct.pack("<I", 8) + s("moss_image")
tensors = b"".join(s(n) + struct.pack("<IQI Q".replace(" ", ""), 1, 256, t, 0) for n, t in (("a", 12), ("b", 12), ("c", 30)))
open(sys.argv[1], "wb").write(b"GGUF" + struct.pack("<IQQ", 3, 3, 1) + kv + tensors + bytes(64))
PY
cp "$WORK/model.gguf" "$WORK/gguf_named.safetensors"
head -c 40 "$WORK/model.gguf" >"$WORK/cut.gguf"
expect_refusal refuse-gguf-name 2 "model.gguf: GGUF files are not supported \(GGUF v3, architecture 'moss_image', 3 tensors: 2 Q4_K, 1 BF16\)" \
  --model "$MODEL" --diffusion-model "$WORK/model.gguf"
expect_refusal refuse-gguf-magic 2 "gguf_named.safetensors: GGUF files are not supported \(GGUF v3" --model "$MODEL" --diffusion-model "$WORK/gguf_named.safetensors"
expect_refusal refuse-gguf-cut 2 "cut.gguf: GGUF files are not supported \(an unreadable GGUF header\)" --model "$MODEL" --vae "$WORK/cut.gguf"
expect_refusal refuse-shape-vs-built-in-config 1 "dit_comfy.safetensors: tensor '.*' has shape .*the config implies" \
  --diffusion-model "$L/dit_comfy.safetensors" --text-encoder "$L/te_model.safetensors" --vae "$L/vae_ldm.safetensors" --tokenizer "$TOK"
expect_refusal refuse-no-tokenizer 2 "no tokenizer: give --tokenizer" \
  --diffusion-model "$L/dit_comfy.safetensors" --text-encoder "$L/te_model.safetensors" --vae "$L/vae_ldm.safetensors"
expect_refusal refuse-no-vae 2 "no VAE: give --vae FILE" \
  --diffusion-model "$L/dit_comfy.safetensors" --text-encoder "$L/te_model.safetensors" "${CFG[@]}"
expect_refusal refuse-wrong-component 2 "--vae .*dit_comfy.safetensors: holds no MOSS-Image VAE \(it holds the diffusion model\)" \
  --model "$MODEL" --vae "$L/dit_comfy.safetensors"
expect_refusal refuse-missing-model-file 2 "--model .*nothing.safetensors: not a folder or a .safetensors file \\(it does not exist\\)" --model "$WORK/nothing.safetensors"
expect_refusal refuse-llm-and-text-encoder 2 "--text-encoder given twice" \
  --model "$MODEL" --llm "$L/te_none.safetensors" --text-encoder "$L/te_none.safetensors"
expect_refusal refuse-model-config-not-folder 2 "--model-config .*: not a folder" \
  --model "$L/all_in_one.safetensors" --model-config "$WORK/none" --tokenizer "$TOK"
}

# inspect: exit 0 when a generation could run from the paths, 2 otherwise, naming what it found.
inspect_case() {  # NAME STATUS PATTERN PATHS...
  local name=$1 status=$2 pattern=$3
  shift 3
  local out rc
  out=$("$BIN" inspect "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $status ]]; then bad "$name" "exit $rc, expected $status: $(tail -1 <<<"$out")"
  elif ! grep -qE -- "$pattern" <<<"$out"; then bad "$name" "output does not match /$pattern/: $out"
  else ok "$name"; fi
}
inspect_case inspect-comfy 0 "diffusion model: Comfy-Org \(fused qkv\); BF16/F32" \
  "$L/dit_comfy.safetensors" "$L/te_model.safetensors" "$L/vae_ldm.safetensors" "${CFG[@]}"
inspect_case inspect-comfy-te 0 "text encoder: Qwen3.5, prefix 'model.'.*3 unused" \
  "$L/dit_comfy.safetensors" "$L/te_model.safetensors" "$L/vae_ldm.safetensors" "${CFG[@]}"
inspect_case inspect-ldm-vae 0 "VAE: LDM \(BFL / ComfyUI\)" \
  "$L/dit_comfy.safetensors" "$L/te_model.safetensors" "$L/vae_ldm.safetensors" "${CFG[@]}"
inspect_case inspect-built-in-stats 0 "latent statistics: built-in FLUX.2" \
  "$L/dit_comfy.safetensors" "$L/te_none.safetensors" "$L/vae_ldm_nostats.safetensors" "${CFG[@]}"
inspect_case inspect-prefixed-split 2 "official \(split q, k, v\), prefix 'model.diffusion_model.'" "$L/dit_prefixed_split.safetensors"
inspect_case inspect-te-language-model 2 "prefix 'language_model.'" "$L/te_language_model.safetensors"
inspect_case inspect-te-model-language-model 2 "prefix 'model.language_model.'" "$L/te_model_language_model.safetensors"
inspect_case inspect-all-in-one 0 "generation: possible" "$L/all_in_one.safetensors" "${CFG[@]}"
inspect_case inspect-all-in-one-built-in 2 "not possible: .*all_in_one.safetensors: tensor '.*' has shape .*the config implies" "$L/all_in_one.safetensors" --tokenizer "$TOK"
inspect_case inspect-folder 0 "generation: possible: MOSS-Image tiny-moss" "$MODEL"
inspect_case inspect-folder-components 0 "diffusion model: transformer/diffusion_pytorch_model.safetensors \([0-9a-f]{12}\), diffusers folder; BF16/F32, 1.23 M parameters, [0-9]+ bytes, config .*transformer/config.json" "$MODEL"
inspect_case inspect-comfy-config 0 "VAE: vae_ldm.safetensors \([0-9a-f]{12}\), LDM \(BFL / ComfyUI\); F32/I64, .* parameters, [0-9]+ bytes, config .*vae/config.json" \
  "$L/dit_comfy.safetensors" "$L/te_model.safetensors" "$L/vae_ldm.safetensors" "${CFG[@]}"
inspect_case inspect-unplaced 2 "could not place 1 tensor\(s\): 'layers.0.proj.lora_up.weight'" "$L/bad_unplaced.safetensors"
inspect_case inspect-quantized 2 "refused: .*float8_e4m3fn" "$L/bad_quantized.safetensors"
inspect_case inspect-missing-component 2 "not possible: no VAE" "$L/dit_comfy.safetensors" "$L/te_model.safetensors" "${CFG[@]}"

echo "model_files: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
