#!/usr/bin/env bash
# Bad input against the built binary (issue 9): broken model folders (safetensors headers,
# dtypes, shapes, missing and unexpected tensors, malformed configs, GGUF, quantized files),
# bad prompts and bad output paths, plus the inputs that look odd but are valid (empty
# prompt, a prompt longer than --max-seq, an unaligned safetensors header, ...), which must
# succeed on the host backend. Each case checks the exit status, that the message names the
# file and the tensor or key, and that no output or temporary file is left behind.
# The flag-value cases live in tests/cli/cli_tests.sh; this suite builds on them.
# Usage: bad_input_tests.sh BINARY MODEL_DIR
BIN=$1
MODEL=$2
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

TF=transformer/diffusion_pytorch_model.safetensors
TE=text_encoder/model.safetensors
VAE=vae/diffusion_pytorch_model.safetensors
TEP=model.language_model.  # the tiny text encoder's tensor-name prefix
quick=(--prompt "a red apple" --size 32x32 --steps 1 --skip-layers 2)

# broken NAME STATUS PATTERN EDIT...: a copy of the model, EDIT run on it (with $M set), then
# a normal quick request against it.
broken() {
  local name=$1 status=$2 pattern=$3
  shift 3
  new_case "$name"
  copy_model
  "$@"
  expect "$name" "$status" "$pattern" -- --model "$M" "${quick[@]}" -o out.png
}
# The same with several edits: EDITS is a function name.
in_model() { (cd "$M" && "$@"); }

# ---- safetensors files ---------------------------------------------------------------------
broken st-empty 1 "$TF: truncated safetensors file \(0 bytes\)" \
  truncate_file "$M/$TF" 0
broken st-truncated-length 1 "$TE: truncated safetensors file \(5 bytes\)" \
  truncate_file "$M/$TE" 5
broken st-truncated-header 1 "$VAE: safetensors header length [0-9]+ runs beyond the file \(2000 bytes\)" \
  truncate_file "$M/$VAE" 2000
broken st-truncated-data 1 "$TF: tensor '[^']+': data_offsets \[[0-9]+, [0-9]+\) lie beyond the file's data" \
  truncate_file "$M/$TF" 100000
broken st-header-len-beyond 1 "$TF: safetensors header length 2477320 runs beyond the file \(2477320 bytes\)" \
  st_set_header_len "$M/$TF" 2477320
broken st-header-len-huge 1 "$TF: safetensors header length 18446744073709551615 runs beyond the file" \
  st_set_header_len "$M/$TF" -1
broken st-header-len-short 1 "$TF: safetensors header is not valid JSON" \
  st_set_header_len "$M/$TF" 100
broken st-header-not-object 1 "$VAE: safetensors header is not a JSON object" \
  st_rewrite "$M/$VAE" 's/.*/[1, 2, 3]/'
broken st-header-bad-utf8 1 "$VAE: safetensors header is not valid JSON" \
  st_rewrite "$M/$VAE" $'s/bn\\.running_mean/bn.running_\xff\xfe/'
broken st-metadata-not-string 1 "$TF: __metadata__ value 'format' is not a string" \
  st_rewrite "$M/$TF" 's/"format":"pt"/"format":7/'
broken st-entry-no-dtype 1 "$TF: tensor 'final_norm_video\.weight': missing dtype" \
  st_rewrite "$M/$TF" 's/"final_norm_video\.weight":\{"dtype":"BF16",/"final_norm_video.weight":{/'
broken st-shape-negative 1 "$TF: tensor 'final_norm_video\.weight': shape entries must be non-negative integers" \
  st_rewrite "$M/$TF" "$(set_shape final_norm_video.weight -128)"
broken st-shape-rank5 1 "$TF: tensor 'final_norm_video\.weight': rank above 4" \
  st_rewrite "$M/$TF" "$(set_shape final_norm_video.weight 1,1,1,1,128)"
broken st-shape-overflow 1 "$TF: tensor 'final_norm_video\.weight': shape too large" \
  st_rewrite "$M/$TF" "$(set_shape final_norm_video.weight 4294967296,4294967296,4294967296)"
broken st-offsets-beyond 1 "$TF: tensor 'layers\.1\.norm1\.weight': data_offsets \[[0-9]+, 99999999\) lie beyond the file's data" \
  st_rewrite "$M/$TF" "$(set_offsets layers.1.norm1.weight 99999744,99999999)"
broken st-offsets-reversed 1 "$TF: tensor 'layers\.1\.norm1\.weight': data_offsets end before they begin" \
  st_rewrite "$M/$TF" "$(set_offsets layers.1.norm1.weight 256,0)"
broken st-offsets-negative 1 "$TF: tensor 'layers\.1\.norm1\.weight': data_offsets must be non-negative integers" \
  st_rewrite "$M/$TF" "$(set_offsets layers.1.norm1.weight -256,0)"
broken st-offsets-size-mismatch 1 "$TF: tensor 'layers\.0\.norm1\.weight': byte size 254 does not match BF16 of 128 elements" \
  st_rewrite "$M/$TF" "$(set_offsets layers.0.norm1.weight 33104,33358)"
# Two tensors claiming the same bytes: the message must name both.
overlap() {
  local begin_end
  begin_end=$(st_offsets "$M/$TF" layers.0.norm1.weight)
  st_rewrite "$M/$TF" "$(set_offsets layers.0.norm2.weight "${begin_end/ /,}")"
}
broken st-offsets-overlap 1 "$TF: .*'layers\.0\.norm1\.weight'.*'layers\.0\.norm2\.weight'|$TF: .*'layers\.0\.norm2\.weight'.*'layers\.0\.norm1\.weight'" \
  overlap
broken st-unknown-dtype 1 "$TF: tensor 'final_norm_video\.weight' has dtype XYZ, expected BF16" \
  st_rewrite "$M/$TF" "$(set_dtype final_norm_video.weight XYZ)"
broken st-directory 1 "$VAE: not a regular file" \
  eval 'rm -f "$M/$VAE" && mkdir "$M/$VAE"'
broken st-no-weights 1 "vae: no \.safetensors weights found" \
  rm -f "$M/$VAE"
broken st-unreadable-link 1 "$TE: cannot open" \
  ln -sfn /nonexistent/model.safetensors "$M/$TE"

# ---- sharded folders (model.safetensors.index.json) ----------------------------------------
index_of() {  # index_of FOLDER_FILE: an index mapping every tensor of the file to it
  local f=$1 shard
  shard=$(basename -- "$f")
  { printf '{"metadata":{},"weight_map":{'
    st_header "$(readlink -f -- "$M/$f")" | grep -oE '"[^"]+":\{"dtype"' | sed -E "s/:\\{\"dtype\"/:\"$shard\"/" | paste -sd,
    printf '}}'; } >"$M/$f.index.json"
}
broken shard-index-ok 0 "done:" index_of "$TE"
broken shard-index-malformed 1 "$TE\.index\.json: malformed JSON" \
  eval 'index_of "$TE"; truncate_file "$M/$TE.index.json" 100'
broken shard-index-no-map 1 "$TE\.index\.json: missing weight_map" \
  eval 'echo "{\"metadata\":{}}" >"$M/$TE.index.json"'
broken shard-missing-file 1 "text_encoder/model-00002-of-00002\.safetensors: cannot open" \
  eval 'index_of "$TE"; sed -i "s/\"model.language_model.norm.weight\":\"model.safetensors\"/\"model.language_model.norm.weight\":\"model-00002-of-00002.safetensors\"/" "$M/$TE.index.json"'
broken shard-missing-tensor 1 "$TE: missing tensor 'model\.language_model\.extra\.weight' listed in .*$TE\.index\.json" \
  eval 'index_of "$TE"; sed -i "s/^{\"metadata\":{},\"weight_map\":{/&\"model.language_model.extra.weight\":\"model.safetensors\",/" "$M/$TE.index.json"'
broken shard-path-escape 1 "$TE\.index\.json: shard name '\.\./\.\./transformer/diffusion_pytorch_model\.safetensors' is not a plain file name" \
  eval 'index_of "$TE"; sed -i "s#\"model.language_model.norm.weight\":\"model.safetensors\"#\"model.language_model.norm.weight\":\"../../transformer/diffusion_pytorch_model.safetensors\"#" "$M/$TE.index.json"'

# ---- tensors against the configs -------------------------------------------------------------
broken dtype-f16-for-bf16 1 "$TF: tensor 'layers\.0\.proj\.q\.weight' has dtype F16, expected BF16" \
  st_rewrite "$M/$TF" "$(set_dtype layers.0.proj.q.weight F16)"
broken dtype-i32-for-f32 1 "$VAE: tensor 'decoder\.conv_in\.weight' has dtype I32, expected F32" \
  st_rewrite "$M/$VAE" "$(set_dtype decoder.conv_in.weight I32)"
broken dtype-f32-te 1 "$TE: tensor '${TEP//./\\.}layers\.0\.mlp\.up_proj\.weight' has dtype F32, expected BF16" \
  eval 'st_rewrite "$M/$TE" "$(set_dtype ${TEP}layers.0.mlp.up_proj.weight F32)$(echo ";")$(set_shape ${TEP}layers.0.mlp.up_proj.weight 256,256)"'
broken quantized-f8 2 "$TF: tensor 'layers\.0\.proj\.k\.weight' has dtype F8_E4M3, expected BF16 \(quantized weights are not supported\)" \
  eval 'st_rewrite "$M/$TF" "$(set_dtype layers.0.proj.k.weight F8_E4M3);$(set_shape layers.0.proj.k.weight 128,256)"'
broken quantized-q4k 2 "$TF: tensor 'layers\.1\.proj\.v\.weight' has dtype Q4_K, expected BF16 \(quantized" \
  st_rewrite "$M/$TF" "$(set_dtype layers.1.proj.v.weight Q4_K)"
broken quantized-extra-scales 2 "$TF: tensor 'layers\.0\.proj\.q\.weight_scale' \(F32\) is quantized" \
  eval 'st_rewrite "$M/$TF" "$(add_tensor layers.0.proj.q.weight_scale "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[$(st_data_size "$M/$TF"),$(($(st_data_size "$M/$TF") + 4))]}")" 4'
broken missing-tensor-dit 1 "transformer: missing tensor 'layers\.0\.norm2\.weight'" \
  st_rewrite "$M/$TF" "$(drop_tensor layers.0.norm2.weight)"
broken missing-tensor-te 1 "text_encoder: missing tensor '${TEP//./\\.}layers\.3\.self_attn\.q_norm\.weight'" \
  st_rewrite "$M/$TE" "$(drop_tensor ${TEP}layers.3.self_attn.q_norm.weight)"
broken missing-tensor-vae 1 "vae: missing tensor 'decoder\.conv_out\.bias'" \
  st_rewrite "$M/$VAE" "$(drop_tensor decoder.conv_out.bias)"
broken missing-embed-te 1 "text_encoder: no 'language_model\.embed_tokens\.weight'" \
  st_rewrite "$M/$TE" "$(drop_tensor ${TEP}embed_tokens.weight)"
broken missing-optional-rope-bands 0 "done:" \
  st_rewrite "$M/$TF" 's/"rope\.bands":\{[^}]*\},//'
extra() {  # extra FILE NAME: a 256-byte BF16 tensor NAME appended to FILE
  local ds
  ds=$(st_data_size "$(readlink -f -- "$M/$1")")
  st_rewrite "$M/$1" "$(add_tensor "$2" "{\"dtype\":\"BF16\",\"shape\":[128],\"data_offsets\":[$ds,$((ds + 256))]}")" 256
}
broken unexpected-tensor-dit 1 "$TF: unexpected tensor 'layers\.4\.norm1\.weight'" \
  extra "$TF" layers.4.norm1.weight
broken unexpected-tensor-vae 1 "$VAE: unexpected tensor 'decoder\.extra\.weight'" \
  extra "$VAE" decoder.extra.weight
broken ignored-tensor-te-mtp 0 "done:" \
  extra "$TE" mtp.layers.0.norm.weight
broken ignored-tensor-vae-encoder 0 "done:" \
  extra "$VAE" encoder.conv_in.bias
broken shape-header-dit 1 "$TF: tensor 'final_linear_video\.weight' has shape \[64, 256\], the config implies \[128, 128\]" \
  st_rewrite "$M/$TF" "$(set_shape final_linear_video.weight 64,256)"
broken shape-config-dit 1 "$TF: tensor '[^']+' has shape \[[0-9, ]+\], the config implies \[[0-9, ]*320[0-9, ]*\]" \
  json_edit "$M/transformer/config.json" 's/"ffn_dim": 256/"ffn_dim": 320/'
broken shape-config-te 1 "$TE: tensor '[^']+' has shape \[[0-9, ]+\], the config implies \[[0-9, ]*1024[0-9, ]*\]" \
  json_edit "$M/text_encoder/config.json" 's/"intermediate_size": 512/"intermediate_size": 1024/'
broken shape-config-vae 1 "$VAE: tensor '[^']+' has shape \[[0-9, ]+\], the config implies \[[0-9, ]*16[0-9, ]*\]" \
  json_edit "$M/vae/config.json" 's/"latent_channels": 32/"latent_channels": 16/'
broken unaligned-header 0 "done:" \
  eval 'st_rewrite "$M/$TF" "s/\$/ /" 0 1; st_rewrite "$M/$VAE" "s/\$/   /" 0 1; st_rewrite "$M/$TE" "s/\$/     /" 0 1'

# ---- GGUF and other kinds of files ------------------------------------------------------------
gguf_bytes() { printf 'GGUF\x03\x00\x00\x00'; head -c 56 /dev/zero; }
broken gguf-in-component 2 "transformer/diffusion_pytorch_model\.gguf: GGUF model files are not supported" \
  eval 'gguf_bytes >"$M/transformer/diffusion_pytorch_model.gguf"'
broken gguf-as-safetensors 2 "$TF: GGUF files are not supported" \
  eval 'rm -f "$M/$TF"; gguf_bytes >"$M/$TF"'

# ---- configs -----------------------------------------------------------------------------------
for cfg in model_index.json transformer/config.json text_encoder/config.json vae/config.json \
           scheduler/scheduler_config.json tokenizer/tokenizer.json; do
  tag=${cfg//\//-}
  tag=${tag%.json}
  broken "malformed-$tag" 1 "$cfg: (malformed JSON|expected|unexpected|unterminated)" \
    truncate_file "$M/$cfg" 200
  broken "missing-$tag" 1 "$cfg: missing file|$cfg: cannot open" \
    rm -f "$M/$cfg"
done
broken "empty-transformer-config" 1 "transformer/config\.json: malformed JSON" \
  truncate_file "$M/transformer/config.json" 0
broken config-not-object 1 "transformer/config\.json: missing key 'dim'" \
  eval 'rm -f "$M/transformer/config.json"; echo "[128]" >"$M/transformer/config.json"'
broken config-missing-key 1 "transformer/config\.json: missing key 'num_heads'" \
  json_edit "$M/transformer/config.json" '/"num_heads"/d'
broken config-key-string 1 "transformer/config\.json: key 'num_layers' must be an integer" \
  json_edit "$M/transformer/config.json" 's/"num_layers": 4/"num_layers": "4"/'
broken config-key-negative 1 "transformer/config\.json: key 'dim' must be positive" \
  json_edit "$M/transformer/config.json" 's/"dim": 128/"dim": -128/'
broken config-heads-not-dividing 1 "transformer/config\.json: key 'num_heads' must divide 'dim'" \
  json_edit "$M/transformer/config.json" 's/"num_heads": 4/"num_heads": 3/'
broken config-te-missing-key 1 "text_encoder/config\.json \(text_config\): missing key 'hidden_size'" \
  json_edit "$M/text_encoder/config.json" '/"hidden_size"/d'
broken config-te-layer-types 1 "text_encoder/config\.json \(text_config\): key 'layer_types' has unknown layer type 'sliding_attention'" \
  json_edit "$M/text_encoder/config.json" '0,/"linear_attention",/s//"sliding_attention",/'
broken config-te-rotary 1 "text_encoder/config\.json \(text_config\): key 'partial_rotary_factor'" \
  json_edit "$M/text_encoder/config.json" 's/"partial_rotary_factor": 0\.25/"partial_rotary_factor": 1e300/'
broken config-te-act 2 "text_encoder/config\.json \(text_config\): key 'hidden_act' is \"gelu\"; only silu is supported" \
  json_edit "$M/text_encoder/config.json" 's/"hidden_act": "silu"/"hidden_act": "gelu"/'
broken config-vae-kind 2 "vae/config\.json: key 'act_fn' is \"relu\"; only silu is supported" \
  json_edit "$M/vae/config.json" 's/"act_fn": "silu"/"act_fn": "relu"/'
broken config-vae-groups 1 "vae/config\.json: decoder width 24 is not a multiple of norm_num_groups \(16\)" \
  json_edit "$M/vae/config.json" 's/"norm_num_groups": 8/"norm_num_groups": 16/'
broken config-index-class 1 "model_index\.json: _class_name 'StableDiffusionPipeline' is not a MOSS-Image pipeline" \
  json_edit "$M/model_index.json" 's/"MOSSImagePipeline"/"StableDiffusionPipeline"/'
broken missing-component 1 "missing component folder 'vae'" \
  rm -rf "$M/vae"
# Absurd sizes must be refused by the config check, not by running out of memory or time.
broken config-dit-huge-layers 1 "transformer/config\.json: key 'num_layers'" \
  json_edit "$M/transformer/config.json" 's/"num_layers": 4/"num_layers": 4000000000000/'
broken config-dit-huge-dim 1 "transformer/config\.json: key '(dim|ffn_dim)'" \
  json_edit "$M/transformer/config.json" 's/"dim": 128/"dim": 4611686018427387904/; s/"ffn_dim": 256/"ffn_dim": 4611686018427387904/'
broken config-te-huge-layers 1 "text_encoder/config\.json \(text_config\): key 'num_hidden_layers'" \
  json_edit "$M/text_encoder/config.json" '/"layer_types"/,/\]/d; s/"num_hidden_layers": 8/"num_hidden_layers": 4000000000000/'
broken config-vae-huge-layers 1 "vae/config\.json: key 'layers_per_block'" \
  json_edit "$M/vae/config.json" 's/"layers_per_block": 2/"layers_per_block": 4000000000000/'

# ---- tokenizer.json ------------------------------------------------------------------------------
TOK=tokenizer/tokenizer.json
broken tokenizer-not-object 1 "$TOK: expected '\{'" \
  eval 'rm -f "$M/$TOK"; echo "[]" >"$M/$TOK"'
broken tokenizer-no-model 1 "$TOK: no \"model\" section" \
  eval 'rm -f "$M/$TOK"; echo "{\"version\": \"1.0\"}" >"$M/$TOK"'
broken tokenizer-bad-merge 1 "$TOK: model\.merges\[0\]: token \"zzzq\" is not in the vocabulary" \
  json_edit "$M/$TOK" '0,/"merges": \[/{/"merges": \[/{n;s/"[^"]*"/"zzzq r"/}}'
broken tokenizer-vocab-id 1 "$TOK: model\.vocab: the id of \"[^\"]+\" is not a number" \
  json_edit "$M/$TOK" '0,/"vocab": \{/{/"vocab": \{/{n;s/: [0-9]+/: "x"/}}'
broken tokenizer-wordpiece 1 "$TOK: unsupported tokenizer: model type \"WordPiece\"" \
  json_edit "$M/$TOK" 's/"type": "BPE"/"type": "WordPiece"/'
broken tokenizer-bad-regex 1 "$TOK: pre-tokenizer regex does not compile" \
  json_edit "$M/$TOK" 's/"Regex": "\(\?i:/"Regex": "((?i:/'
broken tokenizer-bad-utf8 1 "$TOK: not valid UTF-8" \
  json_edit "$M/$TOK" $'0,/"<|endoftext|>"/s//"<|end\xc3(|>"/'

# ---- prompts ---------------------------------------------------------------------------------------
run=(--model "$MODEL" --size 32x32 --steps 1 --skip-layers 2)
expect prompt-empty 0 "done:" -- "${run[@]}" --prompt "" -o out.png
expect prompt-spaces-only 0 "done:" -- "${run[@]}" --prompt $' \t\n\u3000 ' --latent-out out.npy
printf -v bad_tail 'caf\xc3'
expect utf8-truncated-sequence 2 "prompt is not valid UTF-8 \(byte 3\)" -- "${run[@]}" --prompt "$bad_tail" -o out.png
printf -v overlong 'a \xc0\xaf b'
expect utf8-overlong 2 "not valid UTF-8 \(byte 2\)" -- "${run[@]}" --prompt "$overlong" -o out.png
printf -v surrogate 'x\xed\xa0\x80y'
expect utf8-surrogate 2 "not valid UTF-8 \(byte 1\)" -- "${run[@]}" --prompt "$surrogate" -o out.png
printf -v bad_neg 'blurry \xff'
expect utf8-negative 2 "negative.*not valid UTF-8|not valid UTF-8.*negative" -- "${run[@]}" --prompt ok --negative "$bad_neg" -o out.png
expect utf8-negative-cfg1 0 "done:" -- "${run[@]}" --prompt ok --negative "$bad_neg" --cfg 1 -o out.png
expect prompt-added-tokens 0 "done:" -- "${run[@]}" --prompt '<|im_end|><|im_start|>system\n<think>' -o out.png
# The longest prompt the kernel passes as one argument (MAX_ARG_STRLEN: 128 KiB with its NUL);
# a 1 MB prompt cannot reach a program through argv at all.
long_prompt() {  # long_prompt UNIT: UNIT repeated to 131071 bytes
  local s=$1
  while ((${#s} < 131071)); do s+=$s; done
  printf '%s' "${s:0:131071}"
}
words=$(long_prompt 'a photo of a fridge full of fresh vegetables, ')
expect prompt-128k-words 0 "warning: the prompt has [0-9]+ tokens after templating; cut to --max-seq 16" \
  -- "${run[@]}" --max-seq 16 --prompt "$words" -o out.png
expect prompt-128k-one-word 0 "warning: the prompt has [0-9]+ tokens after templating; cut to --max-seq 16" \
  -- "${run[@]}" --max-seq 16 --prompt "$(long_prompt a)" -o out.png
cjk=$(LC_ALL=C.UTF-8 bash -c 'printf "%s" "${1:0:43690}"' _ "$(long_prompt '冰箱里装满了新鲜蔬菜')")
expect prompt-128k-cjk 0 "warning: the prompt has [0-9]+ tokens after templating; cut to --max-seq 16" \
  -- "${run[@]}" --max-seq 16 --prompt "$cjk" -o out.png
expect negative-128k-warning 0 "warning: the negative prompt has [0-9]+ tokens after templating; cut to --max-seq 16" \
  -- "${run[@]}" --max-seq 16 --prompt "an apple" --negative "$words" --quiet -o out.png
printf -v nul_like 'a\x01\x02\x1b[31mred\x7f apple'
expect prompt-control-chars 0 "done:" -- "${run[@]}" --prompt "$nul_like" -o out.png

# ---- outputs ---------------------------------------------------------------------------------------
expect latent-missing-dir 2 "--latent-out .*/no/such/dir/out\.npy: directory .*/no/such/dir does not exist" \
  -- "${run[@]}" --prompt x --latent-out "$WORK/no/such/dir/out.npy"
new_case parent-is-file
: >"$CASE/file.txt"
expect parent-is-file 2 "-o .*/file\.txt/out\.png: .*file\.txt" -- "${run[@]}" --prompt x -o "$CASE/file.txt/out.png"
expect both-outputs-one-bad 2 "--latent-out .*/missing/out\.npy: directory .* does not exist" \
  -- "${run[@]}" --prompt x -o out.png --latent-out "$WORK/missing/out.npy"
# An unwritable directory. Root writes anywhere, so as root the run drops to nobody.
new_case unwritable-dir
mkdir -m 555 "$CASE/ro"
if [[ $(id -u) -eq 0 ]]; then
  RUN_AS="setpriv --reuid=65534 --regid=65534 --clear-groups" \
    expect unwritable-dir 2 "-o .*/ro/out\.png: directory .*/ro is not writable" -- "${run[@]}" --prompt x -o "$CASE/ro/out.png"
else
  expect unwritable-dir 2 "-o .*/ro/out\.png: directory .*/ro is not writable" -- "${run[@]}" --prompt x -o "$CASE/ro/out.png"
fi
expect unwritable-proc-self 2 "-o /proc/self/out\.png: directory /proc/self is not writable" \
  -- "${run[@]}" --prompt x -o /proc/self/out.png
# /proc passes the up-front check for root (access() says writable) but refuses new files:
# the failure comes after the compute, when the image is written.
if [[ $(id -u) -eq 0 ]]; then
  expect unwritable-late 1 "/proc/out\.png: cannot create a file in /proc" -- "${run[@]}" --prompt x -o /proc/out.png
fi
# A failed run leaves an existing output as it was.
new_case keeps-old-output
printf 'old image' >"$CASE/old.png"
bad_model=$CASE/model
copy_model
truncate_file "$M/$TF" 5
run_bin --model "$bad_model" "${quick[@]}" -o old.png
if ((RC == 1)) && [[ $(cat "$CASE/old.png") == 'old image' ]]; then pass keeps-old-output; else fail keeps-old-output "exit $RC; old.png: $(head -c 20 "$CASE/old.png")" "$OUT"; fi

finish
