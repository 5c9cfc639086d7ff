#!/usr/bin/env bash
# Bad input against the built binary (issue 9): broken model folders (safetensors headers,
# dtypes, shapes, missing and unexpected tensors, malformed configs, GGUF, quantized files),
# bad prompts and bad output paths, plus inputs that look odd but are valid (empty prompt, a
# prompt longer than --max-seq, an unaligned safetensors header, ...), which must succeed on
# the host backend. Each case checks the exit status, that the message names the file and
# the tensor or key, and that no output or temporary file is left behind.
# The flag-value cases live in tests/cli/cli_tests.sh; this suite builds on them.
# Usage: bad_input_tests.sh BINARY MODEL_DIR
BIN=$1
MODEL=$2
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

TF=transformer/diffusion_pytorch_model.safetensors
TE=text_encoder/model.safetensors
VAE=vae/diffusion_pytorch_model.safetensors
TEP=model.language_model.  # the tiny text encoder's tensor-name prefix
TEP_RE='model\.language_model\.'
TOK=tokenizer/tokenizer.json
quick=(--prompt "a red apple" --size 32x32 --steps 1 --skip-layers 2)

# broken NAME STATUS PATTERN EDIT...: a copy of the model, EDIT run inside it (paths
# relative to the model folder), then a quick request against it.
broken() {
  local name=$1 status=$2 pattern=$3
  shift 3
  new_case "$name"
  copy_model
  (cd "$M" && "$@") || { fail "$name" "could not prepare the broken model"; return; }
  expect "$name" "$status" "$pattern" -- --model "$M" "${quick[@]}" -o out.png
}

# broken_file NAME STATUS FILE MESSAGE EDIT ARGS...: like broken, with the edit `EDIT FILE
# ARGS...`; the message must be FILE (matched literally) followed by the regex MESSAGE, which
# starts with ": " or with the section the message names (" \(text_config\): ").
broken_file() {
  local name=$1 status=$2 file=$3 message=$4 edit=$5
  shift 5
  broken "$name" "$status" "$(re "$file")$message" "$edit" "$file" "$@"
}

# bad_entry NAME STATUS FILE TENSOR MESSAGE EDIT...: TENSOR's header entry in FILE rewritten by
# each EDIT, a sed-expression maker of lib.sh and its value ("set_dtype F16", "set_shape 1,2");
# the message must be "FILE: tensor 'TENSOR'" followed by the regex MESSAGE.
bad_entry() {
  local name=$1 status=$2 file=$3 tensor=$4 message=$5 edit maker value exprs=()
  shift 5
  for edit in "$@"; do
    read -r maker value <<<"$edit"
    exprs+=("$("$maker" "$tensor" "$value")")
  done
  broken_file "$name" "$status" "$file" ": tensor '$(re "$tensor")'$message" st_rewrite "$(IFS=';' && printf '%s' "${exprs[*]}")"
}

# ---- safetensors files ---------------------------------------------------------------------
broken_file st-empty 1 "$TF" ': truncated safetensors file \(0 bytes\)' truncate_file 0
broken_file st-truncated-length 1 "$TE" ': truncated safetensors file \(5 bytes\)' truncate_file 5
broken_file st-truncated-header 1 "$VAE" ': safetensors header length 26656 runs beyond the file \(2000 bytes\)' truncate_file 2000
broken_file st-truncated-data 1 "$TF" ": tensor '[^']+': data_offsets \[[0-9]+, [0-9]+\) lie beyond the file's data \(92072 bytes\)" \
  truncate_file 100000
broken_file st-header-len-beyond 1 "$TF" ': safetensors header length 2477320 runs beyond the file \(2477320 bytes\)' st_set_header_len 2477320
broken_file st-header-len-huge 1 "$TF" ': safetensors header length 18446744073709551615 runs beyond the file' st_set_header_len -1
broken_file st-header-len-short 1 "$TF" ': safetensors header is not valid JSON' st_set_header_len 100
broken_file st-header-not-object 1 "$VAE" ': safetensors header is not a JSON object' st_rewrite 's/.*/[1, 2, 3]/'
broken_file st-header-bad-utf8 1 "$VAE" ': safetensors header is not valid JSON' st_rewrite $'s/bn\\.running_mean/bn.running_\xff\xfe/'
broken_file st-metadata-not-string 1 "$TF" ": __metadata__ value 'format' is not a string" st_rewrite 's/"format":"pt"/"format":7/'
broken_file st-entry-no-dtype 1 "$TF" ": tensor 'final_norm_video\.weight': missing dtype" \
  st_rewrite 's/("final_norm_video\.weight":\{)"dtype":"BF16",/\1/'
broken_file st-entry-no-offsets 1 "$TF" ": tensor 'final_norm_video\.weight': missing data_offsets" \
  st_rewrite 's/("final_norm_video\.weight":\{[^}]*),"data_offsets":\[[0-9,]*\]/\1/'
bad_entry st-shape-negative 1 "$TF" final_norm_video.weight ': shape entries must be non-negative integers' "set_shape -128"
bad_entry st-shape-rank5 1 "$TF" final_norm_video.weight ': rank above 4' "set_shape 1,1,1,1,128"
bad_entry st-shape-overflow 1 "$TF" final_norm_video.weight ': shape too large' "set_shape 4294967296,4294967296,4294967296"
bad_entry st-offsets-beyond 1 "$TF" layers.1.norm1.weight ": data_offsets \[99999744, 99999999\) lie beyond the file's data" \
  "set_offsets 99999744,99999999"
bad_entry st-offsets-reversed 1 "$TF" layers.1.norm1.weight ': data_offsets end before they begin' "set_offsets 256,0"
bad_entry st-offsets-negative 1 "$TF" layers.1.norm1.weight ': data_offsets must be non-negative integers' "set_offsets -256,0"
bad_entry st-offsets-size-mismatch 1 "$TF" layers.0.norm1.weight ': byte size 254 does not match BF16 of 128 elements' \
  "set_offsets 33104,33358"
# layers.0.norm2.weight moved onto the bytes of layers.0.norm1.weight: both must be named.
broken st-offsets-overlap 1 "$TF: .*layers\.0\.norm1\.weight.*layers\.0\.norm2\.weight|$TF: .*layers\.0\.norm2\.weight.*layers\.0\.norm1\.weight" \
  st_rewrite "$TF" "$(set_offsets layers.0.norm2.weight 33104,33360)"
# Bytes after the last tensor (the tensors must tile the data section exactly).
broken_file st-trailing-bytes 1 "$TF" ": bytes \[[0-9]+, [0-9]+\) at the end of the data section belong to no tensor" \
  st_rewrite '' 16
bad_entry st-unknown-dtype 1 "$TF" final_norm_video.weight ' has dtype XYZ, expected BF16' "set_dtype XYZ"
make_dir_named() { rm -f -- "$1" && mkdir -- "$1"; }
broken_file st-directory 1 "$VAE" ': not a regular file' make_dir_named
broken st-no-weights 1 "vae: no \.safetensors weights found" rm -f "$VAE"
broken st-dangling-link 1 "$TE: cannot open \(No such file or directory\)" ln -sfn /nonexistent/model.safetensors "$TE"

# ---- sharded folders (*.safetensors.index.json) ----------------------------------------------
# write_index FILE [SHARD_OF_NORM]: FILE.index.json mapping every tensor of FILE to it, except
# the text encoder's final norm, which goes to SHARD_OF_NORM when given.
write_index() {
  local shard norm_shard
  shard=$(basename -- "$1")
  norm_shard=${2:-$shard}
  {
    printf '{"metadata": {}, "weight_map": {'
    st_header "$(readlink -f -- "$1")" | grep -oE '"[^"]+":\{"dtype"' | sed -E "s/:\\{\"dtype\"/:\"$shard\"/" |
      sed -E "s|^(\"${TEP_RE}norm\\.weight\"):.*|\\1:\"$norm_shard\"|" | paste -sd,
    printf '}}'
  } >"$1.index.json"
}
broken shard-index-ok 0 "done:" write_index "$TE"
index_then() { write_index "$TE" && "$@"; }
broken shard-index-malformed 1 "$TE\.index\.json: malformed JSON" index_then truncate_file "$TE.index.json" 100
broken shard-index-no-map 1 "$TE\.index\.json: missing weight_map" replace_file "$TE.index.json" '{"metadata": {}}'
broken shard-missing-file 1 "text_encoder/model-00002-of-00002\.safetensors: cannot open" \
  write_index "$TE" model-00002-of-00002.safetensors
broken shard-path-escape 1 "$TE\.index\.json: shard name '\.\./transformer/diffusion_pytorch_model\.safetensors' is not a plain file name" \
  write_index "$TE" ../transformer/diffusion_pytorch_model.safetensors
broken shard-missing-tensor 1 "$TE: missing tensor '${TEP_RE}extra\.weight' listed in .*$TE\.index\.json" \
  index_then sed -i "s/\"weight_map\": {/&\"${TEP}extra.weight\":\"model.safetensors\",/" "$TE.index.json"

# ---- tensors against the configs ---------------------------------------------------------------
bad_entry dtype-f16-for-bf16 1 "$TF" layers.0.proj.q.weight ' has dtype F16, expected BF16$' "set_dtype F16"
bad_entry dtype-i32-for-f32 1 "$VAE" decoder.conv_in.weight ' has dtype I32, expected F32' "set_dtype I32"
bad_entry dtype-f32-te-matrix 1 "$TE" "${TEP}layers.0.mlp.up_proj.weight" ' has dtype F32, expected BF16$' "set_dtype F32" "set_shape 256,256"
bad_entry quantized-f8 2 "$TF" layers.0.proj.k.weight ' has dtype F8_E4M3, expected BF16 \(quantized weights are not supported\)' \
  "set_dtype F8_E4M3" "set_shape 128,256"
bad_entry quantized-i8 2 "$TE" "${TEP}embed_tokens.weight" ' has dtype I8, expected BF16 \(quantized' "set_dtype I8" "set_shape 12288,512"
bad_entry quantized-q4k 2 "$TF" layers.1.proj.v.weight ' has dtype Q4_K, expected BF16 \(quantized' "set_dtype Q4_K"
broken_file quantized-extra-scale 2 "$TF" ": tensor 'layers\.0\.proj\.q\.weight_scale' \(F32\) is quantized" \
  st_add layers.0.proj.q.weight_scale F32 1 4
# missing_tensor NAME FILE TENSOR: TENSOR dropped from FILE's header; the message names the
# component (the folder of FILE) and the tensor.
missing_tensor() { broken "$1" 1 "${2%%/*}: missing tensor '$(re "$3")'" st_drop "$2" "$3"; }
missing_tensor missing-tensor-dit "$TF" layers.0.norm2.weight
missing_tensor missing-tensor-te "$TE" "${TEP}layers.3.self_attn.q_norm.weight"
missing_tensor missing-tensor-vae "$VAE" decoder.conv_out.bias
broken missing-embed-te 1 "text_encoder: no 'language_model\.embed_tokens\.weight'" st_drop "$TE" "${TEP}embed_tokens.weight"
broken missing-optional-rope-bands 0 "done:" st_drop "$TF" rope.bands
broken_file unexpected-tensor-dit 1 "$TF" ": unexpected tensor 'layers\.4\.norm1\.weight'" st_add layers.4.norm1.weight BF16 128 256
broken_file unexpected-tensor-vae 1 "$VAE" ": unexpected tensor 'decoder\.extra\.weight'" st_add decoder.extra.weight F32 64 256
broken ignored-tensor-te-mtp 0 "done:" st_add "$TE" mtp.layers.0.norm.weight BF16 128 256
broken ignored-tensor-vae-encoder 0 "done:" st_add "$VAE" encoder.extra_in.bias F32 32 128
bad_entry shape-header-dit 1 "$TF" final_linear_video.weight ' has shape \[64, 256\], the config implies \[128, 128\]' "set_shape 64,256"
# shape_from_config NAME FILE TENSOR SHAPE IMPLIED CONFIG SED_EXPR: CONFIG edited (sed -E) so
# that it implies the shape IMPLIED for TENSOR of FILE, which holds SHAPE: the message names both.
shape_from_config() {
  broken "$1" 1 "$(re "$2"): tensor '$(re "$3")' has shape \[$4\], the config implies \[$5\]" json_edit "$6" "$7"
}
shape_from_config shape-config-dit "$TF" layers.0.proj.ffn_down.weight '128, 256' '128, 320' \
  transformer/config.json 's/"ffn_dim": 256/"ffn_dim": 320/'
shape_from_config shape-config-te "$TE" "${TEP}layers.0.mlp.down_proj.weight" '256, 512' '256, 1024' \
  text_encoder/config.json 's/"intermediate_size": 512/"intermediate_size": 1024/'
shape_from_config shape-config-vae "$VAE" bn.running_mean 128 64 vae/config.json 's/"latent_channels": 32/"latent_channels": 16/'
# A header whose length is not a multiple of 8 leaves the tensors unaligned; the files are
# still valid and must run (the sanitized build checks no misaligned load happens).
misalign_all() { st_rewrite "$TF" '' 0 1 && st_rewrite "$VAE" '' 0 2 && st_rewrite "$TE" '' 0 3; }
broken unaligned-header 0 "done:" misalign_all

# ---- GGUF ----------------------------------------------------------------------------------------
gguf_file() { rm -f -- "$1" && { printf 'GGUF\x03\x00\x00\x00'; head -c 56 /dev/zero; } >"$1"; }
broken_file gguf-in-component 2 transformer/diffusion_pytorch_model.gguf ': GGUF model files are not supported' gguf_file
broken_file gguf-as-safetensors 2 "$TF" ': GGUF files are not supported' gguf_file

# ---- configs -------------------------------------------------------------------------------------
for cfg in model_index.json transformer/config.json text_encoder/config.json vae/config.json \
           scheduler/scheduler_config.json "$TOK"; do
  tag=${cfg%.json}
  tag=${tag//\//-}
  broken "malformed-$tag" 1 "$cfg: malformed JSON" truncate_file "$cfg" half
  broken "missing-$tag" 1 "$cfg: missing file" rm -f "$cfg"
done
DIT_CFG=transformer/config.json
TE_CFG=text_encoder/config.json
TE_SECTION=' \(text_config\)'  # the text encoder's config messages name the section too
VAE_CFG=vae/config.json
broken_file empty-transformer-config 1 "$DIT_CFG" ': malformed JSON' truncate_file 0
broken_file config-not-object 1 "$DIT_CFG" ": missing key 'dim'" replace_file '[128]'
broken_file config-missing-key 1 "$DIT_CFG" ": missing key 'num_heads'" json_edit '/"num_heads"/d'
broken_file config-key-string 1 "$DIT_CFG" ": key 'num_layers' must be an integer" json_edit 's/"num_layers": 4/"num_layers": "4"/'
broken_file config-key-negative 1 "$DIT_CFG" ": key 'dim' is -[0-9]+, outside 1\.\." json_edit 's/"dim": 128/"dim": -128/'
broken_file config-heads-not-dividing 1 "$DIT_CFG" ": key 'num_heads' must divide 'dim'" json_edit 's/"num_heads": 4/"num_heads": 3/'
broken_file config-te-missing-key 1 "$TE_CFG" "$TE_SECTION: missing key 'hidden_size'" json_edit '/"hidden_size"/d'
broken_file config-te-layer-type 1 "$TE_CFG" "$TE_SECTION: key 'layer_types' has unknown layer type 'sliding_attention'" \
  json_edit '0,/"linear_attention",/s//"sliding_attention",/'
broken_file config-te-rotary 1 "$TE_CFG" "$TE_SECTION: key 'partial_rotary_factor'" \
  json_edit 's/"partial_rotary_factor": 0\.25/"partial_rotary_factor": 1e300/'
broken_file config-te-act 2 "$TE_CFG" "$TE_SECTION: key 'hidden_act' is \"gelu\"; only silu is supported" \
  json_edit 's/"hidden_act": "silu"/"hidden_act": "gelu"/'
broken_file config-vae-kind 2 "$VAE_CFG" ": key 'act_fn' is \"relu\"; only silu is supported" json_edit 's/"act_fn": "silu"/"act_fn": "relu"/'
broken_file config-vae-groups 1 "$VAE_CFG" ': decoder width 24 is not a multiple of norm_num_groups \(16\)' \
  json_edit 's/"norm_num_groups": 8/"norm_num_groups": 16/'
broken_file config-index-class 1 model_index.json ": _class_name 'StableDiffusionPipeline' is not a MOSS-Image pipeline" \
  json_edit 's/"MOSSImagePipeline"/"StableDiffusionPipeline"/'
broken missing-component 1 "missing component folder 'vae'" rm -rf vae
# Absurd sizes must be refused by the config check, naming the key, not by running out of
# memory or time.
broken_file config-dit-huge-layers 1 "$DIT_CFG" ": key 'num_layers'" json_edit 's/"num_layers": 4/"num_layers": 4000000000000/'
broken_file config-dit-huge-dim 1 "$DIT_CFG" ": key '(dim|ffn_dim)'" \
  json_edit 's/"dim": 128/"dim": 4611686018427387904/; s/"ffn_dim": 256/"ffn_dim": 4611686018427387904/'
broken_file config-te-huge-layers 1 "$TE_CFG" "$TE_SECTION: key 'num_hidden_layers'" \
  json_edit '/"layer_types"/,/\]/d; s/"num_hidden_layers": 8/"num_hidden_layers": 4000000000000/'
broken_file config-vae-huge-layers 1 "$VAE_CFG" ": key 'layers_per_block'" \
  json_edit 's/"layers_per_block": 2/"layers_per_block": 4000000000000/'

# ---- tokenizer.json ------------------------------------------------------------------------------
broken_file tokenizer-not-object 1 "$TOK" ": malformed JSON at line 1, column 1: expected '\{'" replace_file '[]'
broken_file tokenizer-no-model 1 "$TOK" ': no "model" section' replace_file '{"version": "1.0"}'
broken_file tokenizer-bad-merge 1 "$TOK" ': model\.merges\[0\]: token "zzzq" is not in the vocabulary' \
  json_edit '/"merges": \[/{n;n;s/"[^"]*"/"zzzq"/}'
broken_file tokenizer-vocab-id 1 "$TOK" ': model\.vocab: the id of "!" is not a number' json_edit '/"vocab": \{/{n;s/: [0-9]+/: "x"/}'
broken_file tokenizer-wordpiece 1 "$TOK" ': unsupported tokenizer: model type "WordPiece"' json_edit 's/"type": "BPE"/"type": "WordPiece"/'
broken_file tokenizer-bad-regex 1 "$TOK" ': pre-tokenizer regex does not compile' json_edit 's/"Regex": "\(\?i:/"Regex": "((?i:/'
broken_file tokenizer-bad-utf8 1 "$TOK" ': not valid UTF-8' json_edit $'s/"<\\|endoftext\\|>"/"<|end\xc3(|>"/'

# ---- prompts -------------------------------------------------------------------------------------
run=(--model "$MODEL" --size 32x32 --steps 1 --skip-layers 2)
expect prompt-empty 0 "done:" -- "${run[@]}" --prompt "" -o out.png
expect prompt-spaces-only 0 "done:" -- "${run[@]}" --prompt $' \t\n\u3000\u00a0 ' --latent-out out.npy
expect prompt-added-tokens 0 "done:" -- "${run[@]}" --prompt '<|im_end|><|im_start|>system <think>' -o out.png
printf -v controls 'a\x01\x02\x1b[31mred\x7f apple'
expect prompt-control-chars 0 "done:" -- "${run[@]}" --prompt "$controls" -o out.png
printf -v bad_tail 'caf\xc3'
expect utf8-truncated-sequence 2 "--prompt: not valid UTF-8 \(byte 3\)" -- "${run[@]}" --prompt "$bad_tail" -o out.png
printf -v overlong 'a \xc0\xaf b'
expect utf8-overlong 2 "--prompt: not valid UTF-8 \(byte 2\)" -- "${run[@]}" --prompt "$overlong" -o out.png
printf -v surrogate 'x\xed\xa0\x80y'
expect utf8-surrogate 2 "--prompt: not valid UTF-8 \(byte 1\)" -- "${run[@]}" --prompt "$surrogate" -o out.png
printf -v beyond 'x\xf4\x90\x80\x80'
expect utf8-beyond-u10ffff 2 "--prompt: not valid UTF-8 \(byte 1\)" -- "${run[@]}" --prompt "$beyond" -o out.png
printf -v bad_negative 'blurry \xff'
expect utf8-negative 2 "--negative.*not valid UTF-8" -- "${run[@]}" --prompt ok --negative "$bad_negative" -o out.png
# The longest prompt one argument can carry (MAX_ARG_STRLEN: 128 KiB with its NUL). A 1 MB
# prompt cannot reach any program through argv: execve refuses it with E2BIG.
long_text() {  # long_text UNIT: UNIT repeated, cut to 131071 bytes
  local s=$1
  while ((${#s} < 131071)); do s+=$s; done
  printf '%s' "${s:0:131071}"
}
cut_warning="warning: the prompt has [0-9]{5,} tokens after templating; cut to --max-seq 16"
words=$(long_text 'a photo of a fridge full of fresh vegetables, ')
expect prompt-128k-words 0 "$cut_warning" -- "${run[@]}" --max-seq 16 --prompt "$words" -o out.png
expect prompt-128k-one-word 0 "$cut_warning" -- "${run[@]}" --max-seq 16 --prompt "$(long_text a)" -o out.png
expect prompt-128k-spaces-inside 0 "warning: the prompt has [0-9]+ tokens" \
  -- "${run[@]}" --max-seq 8 --prompt "x$(long_text ' ' | head -c 131000)y" -o out.png
# 43690 three-byte characters (131070 bytes), cut on a character boundary.
cjk=$(LC_ALL=C.UTF-8 bash -c 'printf "%s" "${1:0:43690}"' _ "$(long_text '冰箱里装满了新鲜蔬菜')")
expect prompt-128k-cjk 0 "$cut_warning" -- "${run[@]}" --max-seq 16 --prompt "$cjk" -o out.png
expect negative-128k-quiet 0 "warning: the negative prompt has [0-9]+ tokens after templating; cut to --max-seq 16" \
  -- "${run[@]}" --max-seq 16 --prompt "an apple" --negative "$words" --quiet -o out.png
new_case prompt-1mb
if "$BIN" --prompt "$(long_text 'abcdefgh')$(long_text 'abcdefgh')" --version >/dev/null 2>&1; then
  fail prompt-1mb "a 256 KiB argument reached the program: this kernel has no MAX_ARG_STRLEN limit; add a 1 MB case"
else
  pass prompt-1mb-refused-by-execve
fi

# ---- outputs -------------------------------------------------------------------------------------
expect latent-missing-dir 2 "--latent-out .*/no/such/dir/out\.npy: directory .*/no/such/dir does not exist" \
  -- "${run[@]}" --prompt x --latent-out "$WORK/no/such/dir/out.npy"
expect both-outputs-one-bad 2 "--latent-out .*/missing/out\.npy: directory .*/missing does not exist" \
  -- "${run[@]}" --prompt x -o out.png --latent-out "$WORK/missing/out.npy"
new_case parent-is-file
: >"$CASE/file.txt"
expect parent-is-file 2 "-o .*/file\.txt/out\.png: .*file\.txt" -- "${run[@]}" --prompt x -o "$CASE/file.txt/out.png"
# An unwritable directory. Root may write anywhere, so as root the run drops to nobody.
# The checkout may sit in a folder nobody cannot enter (a CI clone in a 0700 temp folder), so as
# root the binary and the read-only folder go to a fresh folder nobody can reach; the output
# path is checked before the model is opened, so the model stays where it is.
new_case unwritable-dir
as_nobody=""
ro_parent=$CASE
if [[ $(id -u) -eq 0 ]]; then
  as_nobody="setpriv --reuid=65534 --regid=65534 --clear-groups"
  ro_parent=$(mktemp -d /tmp/moss-unwritable.XXXXXX)
  chmod 755 "$ro_parent"
  cp "$BIN" "$ro_parent/moss-infer-hip"
fi
mkdir -m 555 "$ro_parent/ro"
BIN_SAVED=$BIN
[[ -n $as_nobody ]] && BIN=$ro_parent/moss-infer-hip
RUN_AS=$as_nobody expect unwritable-dir 2 "-o .*/ro/out\.png: directory .*/ro is not writable" \
  -- "${run[@]}" --prompt x -o "$ro_parent/ro/out.png"
BIN=$BIN_SAVED
[[ $ro_parent != "$CASE" ]] && rm -rf "$ro_parent"
expect unwritable-proc-self 2 "-o /proc/self/out\.png: directory /proc/self is not writable" \
  -- "${run[@]}" --prompt x -o /proc/self/out.png
# /proc passes access() for root but takes no new files: the up-front check makes a temporary
# there as the commit would (issue 35), so the refusal still comes before any compute.
if [[ $(id -u) -eq 0 ]]; then
  expect unwritable-late 2 "/proc/out\.png: directory /proc cannot hold a new file" -- "${run[@]}" --prompt x -o /proc/out.png
  expect unwritable-late-npy 2 "/proc/out\.npy: directory /proc cannot hold a new file" -- "${run[@]}" --prompt x --latent-out /proc/out.npy
fi
# A failed run leaves an existing output as it was.
new_case keeps-old-output
printf 'old image' >"$CASE/old.png"
copy_model
truncate_file "$M/$TF" 5
run_bin --model "$M" "${quick[@]}" -o old.png
if ((RC == 1)) && [[ $(cat "$CASE/old.png") == 'old image' ]]; then
  pass keeps-old-output
else
  fail keeps-old-output "exit $RC; old.png now starts with: $(head -c 16 "$CASE/old.png" | od -An -c | head -1)" "$OUT"
fi

finish
