#!/usr/bin/env bash
# Issue 29's whole stages on the H200, in one device call (session 14): builds the NVIDIA binary
# there (bench/h200_selftest29.sh build-only, from the carried Debian -dev packages), then
#   - `bench --size 1024x1024 --steps 4 --vram-budget 16` native: kernel checks and rates, then the
#     stages (text encoder, DiT step resident and streamed, VAE decode) on random in-memory weights;
#   - the CLI's DiT step on a full-size random model (bench_random_model), native, to set beside
#     bench's resident step (the bar: within 3%);
#   - `self-test` quick, native and portable;
#   - `bench --stages-only` portable (the stages without the kernel checks' 107 s).
# Logs under $OUT. The carried folder (MOSS_CARRY, default .carry/b29) holds the .debs and
# tree.tar (this branch's changed files, laid over the session's checkout):
#   tar -xf .carry/b29/tree.tar && bash bench/h200_bench29.sh
set -u
export MOSS_CARRY=${MOSS_CARRY:-.carry/b29}
log() { echo "== $* ($(date +%T), ${SECONDS} s)"; }
bash bench/h200_selftest29.sh build-only || exit 1
BIN=/tmp/b
export XDG_CACHE_HOME=/tmp/cache
summary() { sed -n '/^```$/,/^```$/p' "$1" | grep -vE '^  (dit|te|vae) '; }

MOSSINFER_KERNELS=native timeout 200 $BIN/moss-infer-hip bench --size 1024x1024 --steps 4 --vram-budget 16 \
  >$OUT/bench-native.log 2>&1
log "bench native: exit $?"
summary $OUT/bench-native.log

model=/tmp/moss-random-full
$BIN/bench_random_model --out $model --tokenizer hip/tests/data/qwen35-tokenizer/tokenizer.json --te-layers 2 \
  >/tmp/model.log 2>&1 || { tail -3 /tmp/model.log; }
log "random model written"
MOSSINFER_KERNELS=native timeout 90 $BIN/moss-infer-hip --model $model --prompt "a photo of a red fox in the snow" \
  --size 1024x1024 --steps 4 --seed 1 --cfg 3 --latent-out /tmp/cli-native.npy >$OUT/cli-native.log 2>&1
log "cli native: exit $?"
grep -E "self-test|memory plan|denoise [0-9]|text encoder" $OUT/cli-native.log
rm -rf $model

for k in native portable; do
  MOSSINFER_KERNELS=$k timeout 60 $BIN/moss-infer-hip self-test >$OUT/selftest-quick-$k.log 2>&1
  log "self-test quick $k: exit $?"
  sed -n '/^self-test summary/,$p' $OUT/selftest-quick-$k.log
done

MOSSINFER_KERNELS=portable timeout 90 $BIN/moss-infer-hip bench --size 1024x1024 --steps 4 --stages-only \
  >$OUT/bench-portable-stages.log 2>&1
log "bench portable --stages-only: exit $?"
summary $OUT/bench-portable-stages.log
