#!/usr/bin/env bash
# CLI behaviour of the built binary: exit statuses, the option named in each refusal, and no
# output file left behind. Usage: cli_tests.sh BINARY MODEL_DIR
source "$(dirname "$0")/script_setup.sh" "$@"

# expect NAME STATUS PATTERN -- ARGS...: runs the binary, checks the exit status, that the
# combined output matches PATTERN (grep -E), and that neither output file exists afterwards.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  rm -f "$WORK/out.png" "$WORK/out.npy"
  local out rc
  out=$(cd "$WORK" && env ${EXPECT_ENV:-} "$BIN" "$@" 2>&1)
  rc=$?
  local why
  why=$(mismatch "$status" "$pattern" "$rc" "$out")
  [[ -z $why && $status -ne 0 && ( -e $WORK/out.png || -e $WORK/out.npy ) ]] && why="left an output file"
  [[ -z $why && $status -ne 0 ]] && ls -a "$WORK" | grep -q '^\.moss-infer-' && why="left a temporary file"
  verdict "$name" "$why" "$out"
}

base=(--model "$MODEL" --prompt "a red apple")
expect help 0 'usage: moss-infer-hip' -- --help
expect version 0 '^moss-infer-hip [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]+|unknown\)' -- --version
expect version-archs 0 '^architectures: ' -- --version
expect list-devices 0 '(no HIP devices|device 0:)' -- --list-devices
expect unknown-option 2 "unknown option '--frobnicate'.*" -- "${base[@]}" -o out.png --frobnicate 1
expect usage-line-on-unknown 2 'usage: moss-infer-hip' -- --frobnicate
expect missing-model 2 '--model is required' -- --prompt x -o out.png
expect missing-prompt 2 '--prompt is required' -- --model "$MODEL" -o out.png
expect missing-output 2 '-o FILE.png or --latent-out' -- "${base[@]}"
expect missing-value 2 '--steps needs a value' -- "${base[@]}" -o out.png --steps
expect twice 2 '--seed given twice' -- "${base[@]}" -o out.png --seed 1 --seed 2
expect png-name 2 "-o 'out.jpg'" -- "${base[@]}" -o out.jpg
expect npy-name 2 "--latent-out 'out.bin'" -- "${base[@]}" --latent-out out.bin
for bad in 0 -5 abc 1001 1.5; do expect "steps-$bad" 2 "--steps '$bad'" -- "${base[@]}" -o out.png --steps "$bad"; done
for bad in 100x100 1024 0x16 16x4112 axb 4096x4096; do expect "size-$bad" 2 "--size|size" -- "${base[@]}" -o out.png --size "$bad"; done
expect width-odd 2 "--width '1000'" -- "${base[@]}" -o out.png --width 1000
expect height-big 2 "--height '8192'" -- "${base[@]}" -o out.png --height 8192
expect size-and-width 2 '--size and --width' -- "${base[@]}" -o out.png --size 64x64 --width 64
for bad in nan inf -1 x 101; do expect "cfg-$bad" 2 "--cfg '$bad'" -- "${base[@]}" -o out.png --cfg "$bad"; done
for bad in 0 -1 x; do expect "shift-$bad" 2 "--shift '$bad'" -- "${base[@]}" -o out.png --shift "$bad"; done
for bad in -2 x 1.5 18446744073709551616; do expect "seed-$bad" 2 "--seed '$bad'" -- "${base[@]}" -o out.png --seed "$bad"; done
for bad in "1,,2" "a" "-1"; do expect "skip-$bad" 2 "--skip-layers '$bad'" -- "${base[@]}" -o out.png --skip-layers "$bad"; done
for bad in 0 x 100000; do expect "max-seq-$bad" 2 "--max-seq '$bad'" -- "${base[@]}" -o out.png --max-seq "$bad"; done
for bad in 0 -3 x; do expect "vram-$bad" 2 "--vram-budget '$bad'" -- "${base[@]}" -o out.png --vram-budget "$bad"; done
expect device-bad 2 "--device 'x'" -- "${base[@]}" -o out.png --device x
expect tier 2 '--tier turbo: not supported' -- "${base[@]}" -o out.png --tier turbo
for bad in dpm LMS; do
  expect "sampler-$bad" 2 "^moss-infer-hip: --sampler '$bad': unknown sampler \\(known: euler, euler_ancestral" -- "${base[@]}" -o out.png --sampler "$bad"
done
expect scheduler-bad 2 "^moss-infer-hip: --scheduler 'uniform': unknown scheduler \\(known: moss" -- "${base[@]}" -o out.png --scheduler uniform
for opt in --sampling-method --lora-model-dir --loras --init-image --init-img --image -i --mask \
           --strength --hires-fix --hires-steps --control-net --control-image --ref-image --reference -r \
           --max-vram --stream-layers --offload-to-cpu --cpu-offload --vae-tiling --teacache --type; do
  expect "refuse$opt" 2 "^moss-infer-hip: $opt: not supported" -- "${base[@]}" -o out.png "$opt" x
done
expect refuse-equals 2 '--init-image: not supported' -- "${base[@]}" -o out.png --init-image=x.png
expect lora-missing 2 '--lora style.safetensors: no such file' -- "${base[@]}" -o out.png --lora=style.safetensors:0.5
expect lora-dir-missing 2 "--lora-dir '$WORK/nope': not a folder" -- "${base[@]}" -o out.png --lora-dir "$WORK/nope"
expect no-model-folder 2 "--model $WORK/nope: not a folder" -- --model "$WORK/nope" --prompt x -o out.png
mkdir -p "$WORK/gguf"; echo GGUF > "$WORK/gguf/moss.gguf"
expect gguf-folder 2 'GGUF model files are not supported' -- --model "$WORK/gguf" --prompt x -o out.png
expect out-missing-dir 2 'does not exist' -- "${base[@]}" -o "$WORK/no/such/dir/out.png"
mkdir -p "$WORK/dir.npy"
expect out-is-dir 2 'is a directory' -- "${base[@]}" --latent-out "$WORK/dir.npy"
mkdir -p "$WORK/ro"; chmod 555 "$WORK/ro"
if [[ $(id -u) -ne 0 ]]; then
  expect out-unwritable 2 'not writable' -- "${base[@]}" -o "$WORK/ro/out.png"
fi
expect skip-beyond-model 2 'block 99 does not exist' -- "${base[@]}" -o out.png --skip-layers 99
printf -v badutf '\xff\xfe'
expect invalid-utf8 2 'UTF-8' -- --model "$MODEL" --prompt "$badutf" --skip-layers 2 -o out.png
EXPECT_ENV=MOSSINFER_BACKEND=cuda expect env-backend 2 "MOSSINFER_BACKEND=cuda" -- "${base[@]}" --skip-layers 2 -o out.png

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
