#!/usr/bin/env bash
# Issue 29 on the H200, from the session's checkout plus .carry/st29/ (this branch's changed files
# as tree.tar and Debian 12's -dev packages of PCRE2, utf8proc, libpng, zlib and nlohmann-json,
# which the machine's image lacks): builds the NVIDIA binary there (16 cores), then runs
# `self-test` (quick and --full) and `bench` on both kernel paths and the CLI's DiT step on a
# full-size random model for comparison. Logs under $OUT.
#   build:   tar -xf .carry/st29/tree.tar && bash bench/h200_selftest29.sh build
#   measure: tar -xf .carry/st29/tree.tar && bash bench/h200_selftest29.sh measure   (bundle from build)
#   verify:  build, then the quick self-test, bench (native) and two CLI runs (the second passes the
#            self-test gate from its cache)
#   build-only: the build alone, the binaries left in /tmp/b (bench/h200_bench29.sh runs its own
#            measurements after it)
# MOSS_CARRY names the carried folder (default .carry/st29).
set -u
phase=${1:?build, build-only, measure or verify}
S=${MOSS_CARRY:-.carry/st29}
B=/tmp/b
log() { echo "== $* ($(date +%T))"; }
if [[ $phase != measure ]]; then
  mkdir -p /tmp/deb && for f in $S/*.deb; do dpkg -x "$f" /tmp/deb; done
  D=/tmp/deb/usr
  t0=$SECONDS
  cmake -S hip -B $B -G Ninja -DHIP_TARGET=nvidia -DMOSSINFER_STATIC_DEPS=ON -DMOSSINFER_TESTS=OFF \
    -DMOSSINFER_HIP_TOOLS=OFF -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH=$D \
    -DCMAKE_LIBRARY_PATH=$D/lib/x86_64-linux-gnu -DCMAKE_CXX_FLAGS="-isystem $D/include" \
    -DCMAKE_CUDA_FLAGS="-isystem $D/include" >$OUT/cmake.log 2>&1 || { tail -20 $OUT/cmake.log; exit 1; }
  timeout 480 ninja -C $B moss-infer-hip bench_random_model >$OUT/build.log 2>&1 || { grep -E "error|FAILED" -A3 $OUT/build.log | head -40; exit 1; }
  log "built in $((SECONDS - t0)) s"
  [[ $phase == build-only ]] && exit 0
  mkdir -p /tmp/stage && cp $B/moss-infer-hip $B/bench_random_model /tmp/stage/ && strip /tmp/stage/*
  tar -C /tmp/stage -cf - . | xz -T0 -6 >$OUT/bundle.tar.xz
  ls -la $OUT/bundle.tar.xz
  BIN=$B
  [[ $phase == verify ]] && rm $OUT/bundle.tar.xz
else
  mkdir -p /tmp/bin && tar -C /tmp/bin -xJf $S/bundle.tar.xz
  BIN=/tmp/bin
fi
export XDG_CACHE_HOME=/tmp/cache
st() {  # NAME ENV ARGS...: one self-test, its time and summary
  local name=$1 env=$2; shift 2
  local t0=$SECONDS
  env $env timeout 300 $BIN/moss-infer-hip self-test "$@" >$OUT/$name.log 2>&1
  local rc=$?
  log "$name: exit $rc in $((SECONDS - t0)) s"
  sed -n '/^self-test summary/,$p' $OUT/$name.log
}
if [[ $phase == verify ]]; then  # after a change: the build, bench's summary, the gate's cache
  st selftest-quick-native MOSSINFER_KERNELS=native
  timeout 240 $BIN/moss-infer-hip bench --size 1024x1024 --steps 4 >$OUT/bench-native.log 2>&1
  log "bench native: exit $?"
  sed -n '/^```$/,/^```$/p' $OUT/bench-native.log | grep -vE '^  dit  (gemm|rms|add|gated|rope|copy|norm|unpack)'
  $BIN/bench_random_model --out /tmp/m --tokenizer hip/tests/data/qwen35-tokenizer/tokenizer.json --te-layers 2 >/dev/null 2>&1
  for run in 1 2; do
    timeout 100 $BIN/moss-infer-hip --model /tmp/m --prompt "a red fox" --size 512x512 --steps 2 --latent-out /tmp/x.npy \
      >$OUT/cli-run$run.log 2>&1
    log "cli run $run: exit $?"; grep -E "self-test|denoise [0-9]" $OUT/cli-run$run.log
  done
  ls -la $XDG_CACHE_HOME/moss-infer-hip; cat $XDG_CACHE_HOME/moss-infer-hip/self-test-passed.txt
  exit 0
fi
if [[ $phase == build ]]; then
  st selftest-quick-native MOSSINFER_KERNELS=native
  st selftest-quick-portable MOSSINFER_KERNELS=portable
  st selftest-full-native MOSSINFER_KERNELS=native --full
  exit 0
fi
st selftest-full-portable MOSSINFER_KERNELS=portable --full
for k in native portable; do
  t0=$SECONDS
  MOSSINFER_KERNELS=$k timeout 240 $BIN/moss-infer-hip bench --size 1024x1024 --steps 4 >$OUT/bench-$k.log 2>&1
  log "bench $k: exit $? in $((SECONDS - t0)) s"
  sed -n '/^```$/,/^```$/p' $OUT/bench-$k.log | grep -vE '^  (dit|te|vae) ' | head -20
done
model=/tmp/moss-random-full
t0=$SECONDS
$BIN/bench_random_model --out $model --tokenizer hip/tests/data/qwen35-tokenizer/tokenizer.json --te-layers 2 \
  >/tmp/model.log 2>&1 || { tail -3 /tmp/model.log; exit 1; }
log "random model in $((SECONDS - t0)) s"
for k in native portable; do
  MOSSINFER_KERNELS=$k timeout 150 $BIN/moss-infer-hip --model $model --prompt "a photo of a red fox in the snow" \
    --size 1024x1024 --steps 4 --seed 1 --cfg 3 --latent-out /tmp/cli-$k.npy >$OUT/cli-$k.log 2>&1
  log "cli $k: exit $?"
  grep -E "self-test|denoise [0-9]" $OUT/cli-$k.log
done
