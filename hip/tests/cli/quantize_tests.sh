#!/usr/bin/env bash
# `moss-infer-hip quantize` from the command line (docs/int8_convrot.md section 6), on the tiny
# model: the run at group 64 (exit 0, its summary line, a safetensors file), --help, and every
# refusal with its exit status and message: group sizes (the default 256 does not divide the
# width 128, not powers of 4, not integers), formats, missing, repeated, unknown and value-less
# flags, an output path in a folder that does not exist, a DiT that is already quantized; a
# SIGTERM just before the rename (exit 143). No refused or stopped run leaves a file or a
# temporary. (What the file holds: unit tests QuantizeDit.* and bench/tests/test_int8_convrot_ref.py.)
source "$(dirname "$0")/script_setup.sh" "$@"

expect() {  # expected exit status, regex the output must match, quantize's arguments
  local want=$1 re=$2
  shift 2
  local out rc
  out=$("$BIN" quantize "$@" 2>&1)
  rc=$?
  verdict "quantize $*" "$(mismatch "$want" "$re" "$rc" "$out")" "$out"
}

good=$WORK/tiny_int8.safetensors
expect 0 "16 layers quantized \(int8-convrot, group 64\), 59 tensors copied" --model "$MODEL" --out "$good" --group-size 64
[[ -s $good ]] || bad "no $good"
expect 0 "usage: moss-infer-hip quantize --model DIR --out FILE" --help

bad=$WORK/refused.safetensors
expect 2 "group-size 256 does not divide the input width 128 of layers.0.proj.qkv" --model "$MODEL" --out "$bad"
for g in 1 2 8 32 128 48; do
  expect 2 "group-size $g: the rotation group must be a power of 4" --model "$MODEL" --out "$bad" --group-size $g
done
expect 2 "group-size 'x': not an integer" --model "$MODEL" --out "$bad" --group-size x
expect 2 "group-size '0': must be between 1 and" --model "$MODEL" --out "$bad" --group-size 0
expect 2 "group-size '-64': must be between 1 and" --model "$MODEL" --out "$bad" --group-size=-64
expect 2 "format 'fp8': unknown quantization format \(supported: int8-convrot\)" --model "$MODEL" --out "$bad" --format fp8
expect 2 "quantize: --model DIR is required" --out "$bad"
expect 2 "quantize: --out FILE is required" --model "$MODEL"
expect 2 "quantize: --out needs a value" --model "$MODEL" --out
expect 2 "quantize: --group-size given twice" --model "$MODEL" --out "$bad" --group-size 64 --group-size 16
expect 2 "quantize: unknown argument '--bogus'" --model "$MODEL" --out "$bad" --bogus
expect 2 "^moss-infer-hip: --out" --model "$MODEL" --out "$WORK/no/such/dir/x.safetensors" --group-size 64
expect 2 "model $WORK/nowhere: not a folder" --model "$WORK/nowhere" --out "$bad" --group-size 64

again=$WORK/again
mkdir -p "$again/transformer"
cp "$MODEL/transformer/config.json" "$again/transformer/"
cp "$good" "$again/transformer/diffusion_pytorch_model.safetensors"
expect 2 "layers.0.proj.ffn_down.comfy_quant: this DiT is already quantized" --model "$again" --out "$bad" --group-size 64

# A signal once the whole temporary is written (MOSSINFER_TEST_PAUSE, util/test_pause.h): exit
# 128 + 15, and neither the output nor the temporary is left.
stopped=$WORK/stopped
mkdir -p "$stopped"
MOSSINFER_TEST_PAUSE=write:20 "$BIN" quantize --model "$MODEL" --out "$stopped/int8.safetensors" --group-size 64 \
  2>"$WORK/stopped.err" >/dev/null &
pid=$!
for _ in $(seq 200); do grep -q "pause at write" "$WORK/stopped.err" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
if [[ $rc != 143 || -n $(ls -A "$stopped") ]]; then
  bad "SIGTERM at the write pause" "exit $rc, left: $(ls -A "$stopped") $(cat "$WORK/stopped.err")"
else
  ok "SIGTERM at the write pause -> 143, nothing left"
fi

left=$(cd "$WORK" && ls -A | grep -v -x -e tiny_int8.safetensors -e again -e stopped -e stopped.err)
if [[ -n $left ]]; then
  bad "refused runs left" "$left"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
