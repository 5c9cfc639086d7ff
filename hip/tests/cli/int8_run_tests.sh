#!/usr/bin/env bash
# An INT8 ConvRot DiT from the command line (docs/int8_convrot.md, "Running INT8 files"), on the
# host backend: the tiny model quantized at group 64, then generations with --diffusion-model
# over the folder's other components and with the file given alone beside --model-config (exit
# 0, the same latents twice, not the bf16 run's latents, the record naming the format); `inspect`
# shows the format, group, quantized-layer count and bytes; a file in another comfy_quant format
# is refused with exit 2 and no output. (The numbers against the PyTorch reference, streaming and
# every refusal: unit tests Int8Dit.*.) A diffusers folder whose transformer is the INT8 file
# runs as --diffusion-model runs it (the same latents, the folder's copy with a float8 record
# refused by name), and `moss-check official --stages dit` runs its DiT on such a folder (a dump
# from the tiny goldens; the INT8 DiT's latent is not the bf16 golden's, so only that it runs).
# LoRAs beside the quantized layers through a jobs file: set, none (restored bit for bit), set.
# Usage: int8_run_tests.sh BINARY MODEL_DIR MOSS_CHECK TEST_DATA
source "$(dirname "$0")/script_setup.sh" "$@"
check=$(realpath "$3")
data=$(realpath "$4")
export MOSSINFER_BACKEND=host  # the GPU backends' int8 kernels are another test's

int8=$WORK/tiny_int8.safetensors
"$BIN" quantize --model "$MODEL" --out "$int8" --group-size 64 >/dev/null || { echo "FAIL: quantize"; exit 1; }
small=(--prompt "a lighthouse at dusk" --negative "blurry" --size 48x32 --steps 2 --skip-layers 2 --seed 5 --quiet)
run() {  # NAME ARGS...: a generation into $WORK/NAME.png and NAME.npy
  local name=$1
  shift
  (cd "$WORK" && "$BIN" "$@" "${small[@]}" -o "$name.png" --latent-out "$name.npy") >"$WORK/$name.out" 2>&1
}

run bf16 --model "$MODEL" || bad "bf16 run: $(cat "$WORK/bf16.out")"
if run int8 --model "$MODEL" --diffusion-model "$int8"; then ok "int8 run"; else bad "int8 run: $(cat "$WORK/int8.out")"; fi
[[ -s $WORK/int8.png ]] || bad "no int8.png"
run int8-again --model "$MODEL" --diffusion-model "$int8" || bad "int8 run again"
if cmp -s "$WORK/int8.npy" "$WORK/int8-again.npy"; then ok "same latents twice"; else bad "int8 latents differ between runs"; fi
if cmp -s "$WORK/int8.npy" "$WORK/bf16.npy"; then bad "int8 latents equal the bf16 run's"; else ok "not the bf16 latents"; fi
run int8-alone --diffusion-model "$int8" --text-encoder "$MODEL/text_encoder/model.safetensors" \
  --vae "$MODEL/vae/diffusion_pytorch_model.safetensors" --model-config "$MODEL" \
  --tokenizer "$MODEL/tokenizer/tokenizer.json" || bad "int8 file beside --model-config: $(cat "$WORK/int8-alone.out")"
if cmp -s "$WORK/int8.npy" "$WORK/int8-alone.npy"; then ok "the file alone gives the same latents"; else bad "int8-alone latents differ"; fi
# The folder: the tiny model with its transformer file replaced by the INT8 one.
folder=$WORK/int8-folder
cp -r "$MODEL" "$folder" && cp "$int8" "$folder/transformer/diffusion_pytorch_model.safetensors" ||
  bad "could not make the INT8 folder"
if run int8-folder --model "$folder"; then ok "INT8 folder run"; else bad "INT8 folder run: $(cat "$WORK/int8-folder.out")"; fi
if cmp -s "$WORK/int8.npy" "$WORK/int8-folder.npy"; then ok "the folder gives --diffusion-model's latents"; else bad "INT8 folder latents differ"; fi
record=$(python3 "$(dirname "$0")/png_tool.py" text "$WORK/int8-folder.png" generation 2>&1)
grep -q "\"file\":\"transformer/diffusion_pytorch_model.safetensors\",\"hash\":\"[0-9a-f]*\",\"note\":\"int8 ConvRot, group 64, 16 layers quantized\"" <<<"$record" &&
  ok "the folder's record names the format" || bad "folder record: $record"
dump=$WORK/official-dump.safetensors
"$check" official-fixture --data "$data" --out "$dump" >"$WORK/fixture.out" 2>&1 || bad "official-fixture: $(cat "$WORK/fixture.out")"
out=$("$check" official --dump "$dump" --model "$folder" --stages dit 2>&1)
rc=$?
# Exit 1 is the verdict against the bf16 golden (the INT8 DiT's own error); a refusal is exit 2.
if [[ $rc == 0 || $rc == 1 ]] && grep -qE "^[a-zA-Z]+ [^ ]*final_latent" <<<"$out" && ! grep -q "quantized" <<<"$out"; then
  ok "moss-check official --stages dit on the INT8 folder"
else
  bad "moss-check official on the INT8 folder -> $rc: $out"
fi

record=$(python3 "$(dirname "$0")/png_tool.py" text "$WORK/int8.png" generation 2>&1)
grep -q "\"file\":\"tiny_int8.safetensors\",\"hash\":\"[0-9a-f]*\",\"note\":\"int8 ConvRot, group 64, 16 layers quantized\"" <<<"$record" &&
  ok "the record names the format" || bad "record: $record"

out=$("$BIN" inspect "$int8" "$MODEL" 2>&1)
rc=$?
if [[ $rc == 0 ]] && grep -qE "diffusion model: Comfy-Org \(fused qkv\), int8 ConvRot; BF16/F32/I8" <<<"$out" &&
  grep -qE "tiny_int8.safetensors \([0-9a-f]{12}\), .*BF16/F32/I8, 1.2[0-9] M parameters, [0-9]+ bytes, .*; int8 ConvRot, group 64, 16 layers quantized" <<<"$out"; then
  ok "inspect"
else
  bad "inspect -> $rc: $out"
fi

# LoRAs beside the INT8 layers (docs/loras.md): the PyTorch reference's two LoRA files (PEFT low
# rank on block 0's fused qkv, block 1's o and a text embedder layer; LyCORIS LoHa and full deltas;
# hip/tests/data/int8_lora_reference.safetensors, whose numbers the unit tests Int8Dit.Loras*
# check) written out; a jobs file keeps one engine: the set, none, the set again. The set changes
# the image, none gives the LoRA-free run's pixels bit for bit, the set again its own image; the
# record lists the LoRAs with their hashes.
python3 - "$data/int8_lora_reference.safetensors" "$WORK" <<'PY' || bad "could not write the LoRA files"
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, body = json.loads(raw[8:8 + n]), raw[8 + n:]
for i in (0, 1):
    prefix, out, blobs, off = f"lora{i}.", {}, [], 0
    for k, v in header.items():
        if k.startswith(prefix) and k != prefix + "weight":
            a, b = v["data_offsets"]
            out[k[len(prefix):]] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [off, off + b - a]}
            blobs.append(body[a:b])
            off += b - a
    h = json.dumps(out).encode()
    h += b" " * (-len(h) % 8)
    open(f"{sys.argv[2]}/lora{i}.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
prompts='"prompt": "a lighthouse at dusk", "negative_prompt": "blurry"'  # small's, which --jobs takes from the lines
set_line="$prompts, \"lora\": [\"$WORK/lora0.safetensors:0.8\", \"$WORK/lora1.safetensors:-0.6\"]"
printf '%s\n' "{$set_line, \"output\": \"$WORK/job0.png\"}" "{$prompts, \"output\": \"$WORK/job1.png\"}" \
  "{$set_line, \"output\": \"$WORK/job2.png\"}" >"$WORK/loras.jsonl"
if (cd "$WORK" && "$BIN" --model "$MODEL" --diffusion-model "$int8" --jobs "$WORK/loras.jsonl" "${small[@]:4}") \
  >"$WORK/loras.out" 2>&1; then
  ok "a jobs file with LoRAs on the INT8 DiT runs"
else
  bad "LoRA jobs: $(tail -5 "$WORK/loras.out")"
fi
png=(python3 "$(dirname "$0")/png_tool.py")
"${png[@]}" same-pixels "$WORK/job1.png" "$WORK/int8.png" && ok "no LoRA after a set: the LoRA-free image bit for bit" ||
  bad "job1 is not the LoRA-free image"
"${png[@]}" same-pixels "$WORK/job0.png" "$WORK/job2.png" && ok "the set again: its image bit for bit" ||
  bad "job2 is not job0's image"
"${png[@]}" same-pixels "$WORK/job0.png" "$WORK/job1.png" 2>/dev/null && bad "the LoRAs changed nothing" ||
  ok "the LoRAs change the image"
record=$("${png[@]}" text "$WORK/job0.png" generation 2>&1)
grep -qE '"loras":\[\{"name":"lora0","path":"[^"]*lora0.safetensors","weight":0.8[0-9]*,"hash":"[0-9a-f]{12}"\},\{"name":"lora1",' <<<"$record" &&
  ok "the record lists the LoRAs" || bad "LoRA record: $record"

# Another format: the same file with one record saying float8_e4m3fn (same length, so the bytes
# are edited in place).
f8=$WORK/tiny_f8.safetensors
python3 - "$int8" "$f8" <<'PY' || bad "could not write the float8 file"
import sys
data = open(sys.argv[1], "rb").read()
old = b'{"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 64}'
new = b'{"format": "float8_e4m3fn", "convrot": false, "convrot_groupsize": 64} '
assert len(old) == len(new) and old in data
open(sys.argv[2], "wb").write(data.replace(old, new, 1))
PY
out=$(cd "$WORK" && "$BIN" --model "$MODEL" --diffusion-model "$f8" "${small[@]}" -o f8.png 2>&1)
rc=$?
if [[ $rc == 2 ]] && grep -q "tiny_f8.safetensors: quantized weights, format 'float8_e4m3fn'" <<<"$out" && [[ ! -e $WORK/f8.png ]]; then
  ok "float8 refused"
else
  bad "float8 -> $rc: $out"
fi
# The folder's transformer in another comfy_quant format: refused by name, as the file is.
cp "$f8" "$folder/transformer/diffusion_pytorch_model.safetensors" || bad "could not copy the float8 file"
out=$(cd "$WORK" && "$BIN" --model "$folder" "${small[@]}" -o f8-folder.png 2>&1)
rc=$?
if [[ $rc == 2 ]] && grep -q "diffusion_pytorch_model.safetensors: quantized weights, format 'float8_e4m3fn'" <<<"$out" &&
  [[ ! -e $WORK/f8-folder.png ]]; then
  ok "float8 folder refused"
else
  bad "float8 folder -> $rc: $out"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
