#!/usr/bin/env bash
# Hostile inputs by class (issue 16): instead of listed cases, each class generates its cases
# from a list of targets times a list of mutations, and every case checks the contract of the
# README: the exit status, a message naming the problem, no output and no temporary file left
# behind, and no hang (every run has a timeout; a signal case also bounds the stop).
#
#   special-files  every file the program opens (configs, weights, shard index, shard,
#                  tokenizer), every component folder and the model folder, replaced by each
#                  kind of special file (FIFO, directory, /dev/null, /dev/zero, socket, a
#                  link to a FIFO, ...): refused naming the file and what it is, never a hang.
#   numbers        every numeric flag and MOSSINFER_THREADS with blanks, signs, exponents,
#                  hex, junk, extremes and bounds: refused with exit 2 naming the flag (or
#                  variable); the valid spellings and the bounds themselves are accepted.
#   signals        SIGINT, SIGTERM, SIGHUP and SIGPIPE at every stage boundary, the writes
#                  included (MOSSINFER_TEST_PAUSE): 128 + signal, the message, nothing left.
#   file-size      a file-size limit at each output: a write error (exit 1), nothing left.
#   truncation     a weight file truncated in place while the stage that reads it waits:
#                  exit 1 naming the file, nothing left.
#   outputs        bad output paths for -o and --latent-out: refused (exit 2) before the text
#                  encoder runs.
#   seed           --seed -1 prints the seed it drew (also under --quiet) and the seed
#                  repeats the run bit for bit.
# Prints one PASS/FAIL line per case, a count per class, then "N passed, M failed".
# Usage: property_tests.sh BINARY MODEL_DIR
BIN=$1
MODEL=$2
CASE_TIMEOUT=${CASE_TIMEOUT:-30}  # a tiny run takes about 0.5 s (5 s sanitized): 30 s is a hang
source "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"

TF=transformer/diffusion_pytorch_model.safetensors
TE=text_encoder/model.safetensors
VAE=vae/diffusion_pytorch_model.safetensors
quick=(--prompt "a red apple" --size 32x32 --steps 1 --skip-layers 2)
declare -A class_cases=()
count() { class_cases[$1]=$((${class_cases[$1]:-0} + 1)); }

# ---- special files ---------------------------------------------------------------------------
# make_special KIND PATH: PATH (in a model copy) becomes a special file of KIND; prints the
# phrase the refusal must use for it.
have_python=0
command -v python3 >/dev/null && have_python=1
special_kinds=(fifo directory dev-null dev-zero link-to-fifo link-to-directory)
((have_python)) && special_kinds+=(socket)
make_special() {
  local kind=$1 path=$2
  rm -rf -- "$path"
  case $kind in
    fifo) mkfifo -- "$path" && echo "a FIFO" ;;
    directory) mkdir -- "$path" && echo "a directory" ;;
    dev-null) ln -s /dev/null "$path" && echo "a character device" ;;
    dev-zero) ln -s /dev/zero "$path" && echo "a character device" ;;
    link-to-fifo) mkfifo -- "$CASE/elsewhere.fifo" && ln -s "$CASE/elsewhere.fifo" "$path" && echo "a FIFO" ;;
    link-to-directory) ln -s /tmp "$path" && echo "a directory" ;;
    socket)  # bound by its relative name: a socket's address holds at most 107 bytes
      (cd "$(dirname -- "$path")" &&
        python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$(basename -- "$path")") &&
        echo "a socket" ;;
  esac
}

model_files=(model_index.json transformer/config.json text_encoder/config.json vae/config.json
             scheduler/scheduler_config.json tokenizer/tokenizer.json "$TF" "$TE" "$VAE"
             "$TE.index.json" text_encoder/shard-00001.safetensors)
for file in "${model_files[@]}"; do
  for kind in "${special_kinds[@]}"; do
    name=special-${file//\//-}-$kind
    new_case "$name"
    copy_model
    # The shard is only opened through an index that names it.
    [[ $file == */shard-00001.safetensors ]] &&
      printf '{"weight_map": {"model.language_model.norm.weight": "shard-00001.safetensors"}}' >"$M/$TE.index.json"
    what=$(make_special "$kind" "$M/$file") || { fail "$name" "could not make the special file"; continue; }
    expect "$name" 1 "$(re "$file"): not a regular file \($what\)" -- --model "$M" "${quick[@]}" -o out.png
    count special-files
  done
done
for part in transformer text_encoder vae tokenizer scheduler; do
  for kind in fifo dev-null regular-file; do
    name=special-component-$part-$kind
    new_case "$name"
    copy_model
    rm -rf -- "${M:?}/$part"
    case $kind in
      fifo) mkfifo -- "$M/$part"; what="a FIFO" ;;
      dev-null) ln -s /dev/null "$M/$part"; what="a character device" ;;
      regular-file) : >"$M/$part"; what="a regular file" ;;
    esac
    expect "$name" 1 "component folder '$part' is $what, not a folder" -- --model "$M" "${quick[@]}" -o out.png
    count special-files
  done
done
for kind in fifo dev-null dev-zero; do
  new_case "special-model-folder-$kind"
  make_special "$kind" "$CASE/model" >/dev/null
  expect "special-model-folder-$kind" 2 "--model .*model: not a folder" -- --model "$CASE/model" "${quick[@]}" -o out.png
  count special-files
done

# ---- numbers ---------------------------------------------------------------------------------
# Every numeric flag, with a valid value to mutate. --size is mutated on either side.
declare -A valid=([--steps]=8 [--width]=32 [--height]=32 [--cfg]=3 [--shift]=5 [--seed]=7 [--max-seq]=64
                  [--vram-budget]=4 [--device]=1 [--skip-layers]=2 [--size-w]=32 [--size-h]=32)
# mutations V: every spelling that is not a plain number of the flag's kind, NUL-separated
# (values may hold newlines). No flag takes negative values, so "-V" is refused too.
mutations() {
  local v=$1
  printf '%s\0' " $v" "$v " $'\t'"$v" "$v"$'\n' "+$v" "-$v" " -$v" "--$v" "- $v" "${v}abc" "${v}x" "${v}.5.5" "0x$v" \
    "${v}e0" "1e1" "${v}e" "" "-" "." "+" " " "1,000" "１" "٣" "99999999999999999999999" "-99999999999999999999999" \
    inf -inf nan NaN infinity 0b1 "$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v$v"
}
# Mutations that are valid spellings for one flag: the comma list of --skip-layers trims
# blanks around its entries ("1,000" is the list 1, 0; " " the empty list); --device takes a
# list too.
still_valid() {
  local flag=$1 v=$2
  case $flag in
    --skip-layers) [[ $v == " 2" || $v == "2 " || $v == " " || $v == "" || $v == "1,000" ]] ;;
    --device) [[ $v == "1,000" ]] ;;  # the device list 1, 0 (README "Several devices")
    *) false ;;
  esac
}
for flag in "${!valid[@]}"; do
  while IFS= read -r -d '' bad; do
    still_valid "$flag" "$bad" && continue
    shown=$(printf '%q' "$bad")
    name="number${flag}-${shown//\//_}"
    case $flag in
      --size-w) args=(--size "${bad}x32"); named=--size ;;
      --size-h) args=(--size "32x${bad}"); named=--size ;;
      --skip-layers) args=(--skip-layers "$bad"); named=--skip-layers ;;
      *) args=("$flag" "$bad"); named=$flag ;;
    esac
    # The full request without the flag's default: a value that got through would run.
    base=(--model "$MODEL" --prompt "a red apple")
    [[ $named != --size && $named != --width && $named != --height ]] && base+=(--size 32x32)
    [[ $named != --steps ]] && base+=(--steps 1)
    [[ $named != --skip-layers ]] && base+=(--skip-layers 2)
    expect "$name" 2 "^moss-infer-hip: $named '" -- "${base[@]}" "${args[@]}" -o out.png
    count numbers
  done < <(mutations "${valid[$flag]}")
done
# Bounds and extremes: the last value inside a range is accepted, the first outside refused
# (parsing only: --version runs after every flag is checked).
accepted=("--steps 1" "--steps 1000" "--steps 0008" "--width 4096" "--height 16" "--size 16x4096"
          "--cfg 0" "--cfg 100" "--cfg 3." "--cfg .5" "--cfg 100.000" "--shift 1000" "--shift 0.001"
          "--seed 0" "--seed 18446744073709551615" "--seed -1" "--max-seq 1" "--max-seq 32768"
          "--vram-budget 4096" "--vram-budget 0.5" "--device 255" "--device 0,1,255" "--device all"
          "--skip-layers 0,1023")
refused=("--steps 0" "--steps 1001" "--steps -1" "--width 4112" "--width 0" "--height 8" "--size 16x4112"
         "--cfg -0.001" "--cfg -0" "--cfg 100.001" "--shift 0" "--shift -1" "--shift 1000.01"
         "--shift 0.000000000000000000000000000000000000000000000001"
         "--seed 18446744073709551616" "--seed -2" "--seed -0" "--seed -1.0" "--max-seq 0" "--max-seq 32769"
         "--vram-budget 0" "--vram-budget 4096.5" "--device -1" "--device 256" "--device 0,0" "--device 0,,1" "--device 1,"
         "--device ALL" "--skip-layers 1024"
         "--skip-layers -1" "--steps 9223372036854775808" "--steps -9223372036854775809")
for a in "${accepted[@]}"; do
  read -r -a args <<<"$a"
  expect "number-accepted${args[0]}-${args[1]}" 0 "^moss-infer-hip" -- "${args[@]}" --version
  count numbers
done
for a in "${refused[@]}"; do
  read -r -a args <<<"$a"
  expect "number-refused${args[0]}-${args[1]}" 2 "^moss-infer-hip: ${args[0]} '" -- "${args[@]}" --version
  count numbers
done
# MOSSINFER_THREADS: the same mutations, refused with exit 2 before any compute; 0 refused,
# a huge count capped with a warning (and the run succeeds).
while IFS= read -r -d '' bad; do
  [[ -z $bad ]] && continue  # empty means unset
  shown=$(printf '%q' "$bad")
  EXTRA_ENV=("MOSSINFER_THREADS=$bad")  # an array cannot prefix a command: set, run, reset
  expect "number-threads-${shown//\//_}" 2 "^moss-infer-hip: MOSSINFER_THREADS='" -- --model "$MODEL" "${quick[@]}" -o out.png
  count numbers
done < <(mutations 2)
EXTRA_ENV=("MOSSINFER_THREADS=0")
expect number-threads-0 2 "MOSSINFER_THREADS='0': must be between 1 and" -- --model "$MODEL" "${quick[@]}" -o out.png
EXTRA_ENV=("MOSSINFER_THREADS=100000")
expect number-threads-capped 0 "warning: MOSSINFER_THREADS=100000: capped to [0-9]+" \
  -- --model "$MODEL" "${quick[@]}" --quiet -o out.png
EXTRA_ENV=("MOSSINFER_THREADS=1")
expect number-threads-1 0 "\(1 threads" -- --model "$MODEL" "${quick[@]}" -o out.png
EXTRA_ENV=()
count numbers; count numbers; count numbers

# ---- signals at every stage boundary ---------------------------------------------------------
# signal_at (lib.sh): a signal while the run waits at a named point.
declare -A signal_status=([INT]=130 [TERM]=143 [HUP]=129 [PIPE]=141)
for point in start model text-encoder dit denoise vae write rename; do
  for sig in INT TERM HUP PIPE; do
    signal_at "signal-$point-$sig" "$point" "$sig" "${signal_status[$sig]}" \
      --model "$MODEL" "${quick[@]}" -o out.png --latent-out out.npy
    count signals
  done
done
# A real SIGPIPE: stderr is a pipe whose reader is gone, so the progress line raises it.
new_case signal-real-pipe
RC=$(cd "$CASE" && {
  MOSSINFER_BACKEND=host MOSSINFER_TEST_PAUSE=start:1 timeout -k 5 "$CASE_TIMEOUT" "$BIN" --model "$MODEL" \
    "${quick[@]}" -o out.png 2>&1 | true
  echo "${PIPESTATUS[0]}"
})
OUT=""
why=$( ((RC == 141)) || echo "exit $RC, expected 141")
[[ -z $why ]] && why=$(run_problems 141 -o out.png)
if [[ -z $why ]]; then pass signal-real-pipe; else fail signal-real-pipe "$why"; fi
count signals

# ---- a file-size limit (ulimit -f, KiB) at each output -----------------------------------------
# The .npy of a 32x32 run has 2176 bytes, the PNG about 3.3 KB: a 3 KiB limit lets the latents
# through and stops the image, which must take the finished latents with it.
for limit in 1 3; do
  for outs in "-o out.png" "--latent-out out.npy" "-o out.png --latent-out out.npy"; do
    read -r -a o <<<"$outs"
    [[ $limit == 3 && $outs == "--latent-out out.npy" ]] && continue  # fits: not a failure case
    CASE_FSIZE_KB=$limit expect "file-size-${limit}k-${o[0]#--}-${#o[@]}" 1 "write failed \(File too large\)" \
      -- --model "$MODEL" "${quick[@]}" "${o[@]}"
    count file-size
  done
done

# ---- a weight file truncated while the stage that reads it waits -------------------------------
# truncated_at NAME POINT FILE SIZE: a private copy of FILE, truncated in place to SIZE ("0" or
# "half") while the run pauses at POINT; the run must stop naming the file.
truncated_at() {
  local name=$1 point=$2 file=$3 size=$4
  new_case "$name"
  copy_model
  own "$M/$file"
  [[ $size == half ]] && size=$(($(stat -c %s -- "$M/$file") / 2))
  local outputs=(-o out.png --latent-out out.npy)
  start_bin MOSSINFER_TEST_PAUSE="$point:2" timeout -k 5 "$CASE_TIMEOUT" "$BIN" --model "$M" "${quick[@]}" "${outputs[@]}"
  wait_for_line "^pause at $point$" "the pause at $point" "$CASE_TIMEOUT"
  truncate -s "$size" -- "$M/$file"  # in place: the same inode the run has mapped
  # The pause ends after 2 s and the stage reads the lost pages; the timeout bounds the rest.
  reap_bin $((CASE_TIMEOUT + 10)) "the truncation"
  judge_bin "$name" 1 "$file: changed or truncated while in use" "no message naming $file" "${outputs[@]}"
}

# ---- output paths, refused before the text encoder ---------------------------------------------
long_name() { printf 'a%.0s' $(seq 1 $(($1 - 4))); printf '%s' "$2"; }
deep_path() { local p=$CASE; while ((${#p} < 4200)); do p+=/abcdefghijklmnopqrstuvwxyz; done; printf '%s' "$p/$1"; }
for flag in -o --latent-out; do
  ext=.png
  [[ $flag == --latent-out ]] && ext=.npy
  other=.npy
  [[ $ext == .npy ]] && other=.png
  for problem in name-256 name-1000 path-4200 missing-dir parent-is-file target-is-dir wrong-ext no-ext empty \
                 ext-only-dir dev-full-dir; do
    name=output$flag-$problem
    new_case "$name"
    case $problem in
      name-256) path=$(long_name 256 "$ext"); pattern="the file name has 256 bytes" ;;
      name-1000) path=$(long_name 1000 "$ext"); pattern="the file name has 1000 bytes" ;;
      path-4200) path=$(deep_path "out$ext"); pattern="the path has [0-9]+ bytes, the system allows 4095" ;;
      missing-dir) path=no/such/dir/out$ext; pattern="directory no/such/dir does not exist" ;;
      parent-is-file) : >"$CASE/file"; path=file/out$ext; pattern="file is not a directory \(a regular file\)" ;;
      target-is-dir) mkdir "$CASE/out$ext"; path=out$ext; pattern="is a directory" ;;
      wrong-ext) path=out$other; pattern="give a \\$ext file name" ;;
      no-ext) path=out; pattern="give a \\$ext file name" ;;
      empty) path=""; pattern="give a \\$ext file name|empty path" ;;
      ext-only-dir) mkdir "$CASE/d"; path=d/; pattern="give a \\$ext file name" ;;
      dev-full-dir) path=/dev/null/out$ext; pattern="/dev/null is not a directory \(a character device\)" ;;
    esac
    expect "$name" 2 "^moss-infer-hip: $flag.*($pattern)" -- --model "$MODEL" "${quick[@]}" "$flag" "$path"
    if grep -q "^text encoder" <<<"$OUT"; then fail "$name-before-compute" "refused only after the text encoder ran"; fi
    count outputs
  done
done
new_case output-name-255
expect output-name-255 0 "done:" -- --model "$MODEL" "${quick[@]}" -o "$(long_name 255 .png)" --latent-out "$(long_name 255 .npy)"
count outputs

for t in "text-encoder $TE 0" "text-encoder $TE half" "dit $TF 0" "denoise $TF 0" "denoise $TF half" "vae $VAE 0" \
         "vae $VAE half"; do
  read -r point file size <<<"$t"
  truncated_at "truncated-$point-${file%%/*}-$size" "$point" "$file" "$size"
  count truncation
done

# ---- the seed of --seed -1 -----------------------------------------------------------------------
new_case seed-drawn-quiet
run_bin --model "$MODEL" "${quick[@]}" --seed -1 --quiet --no-metadata --latent-out first.npy
seed=$(sed -nE 's/^seed: ([0-9]+) \(drawn at random\)$/\1/p' <<<"$OUT")
if ((RC == 0)) && [[ -n $seed && $(wc -l <<<"$OUT") == 1 ]]; then pass seed-drawn-quiet; else
  fail seed-drawn-quiet "exit $RC; expected exactly one 'seed: N (drawn at random)' line" "$OUT"; fi
count seed
if [[ -n $seed ]]; then
  run_bin --model "$MODEL" "${quick[@]}" --seed "$seed" --quiet --latent-out again.npy
  if ((RC == 0)) && cmp -s "$CASE/first.npy" "$CASE/again.npy"; then pass seed-repeats; else
    fail seed-repeats "exit $RC; --seed $seed did not give the same latents" "$OUT"; fi
  count seed
fi
new_case seed-drawn-progress
run_bin --model "$MODEL" "${quick[@]}" --seed -1 --latent-out out.npy
seed=$(sed -nE 's/^seed: ([0-9]+) \(drawn at random\)$/\1/p' <<<"$OUT")
if ((RC == 0)) && [[ -n $seed ]] && grep -q "; seed $seed;" <<<"$OUT"; then pass seed-drawn-progress; else
  fail seed-drawn-progress "exit $RC; the drawn seed line and the done: line disagree" "$OUT"; fi
count seed

for c in "${!class_cases[@]}"; do echo "class $c: ${class_cases[$c]} cases"; done | sort
finish
