#!/usr/bin/env bash
# Issue 33 on the H200 (session 15): the portable path (what the AMD build runs) before and after
# the kernel work, one device call per phase (each fits the 10-minute limit). The carried folder
# (MOSS_CARRY, default .carry/i33) holds Debian 12's -dev packages the machine's image lacks, and
# the bundles the earlier phases returned:
#   before  builds the tree (main before the change), returns its binaries as $OUT/bundle-old.tar.xz,
#           then the portable kernel checks of the DiT family (with their timings) and one op
#           profile of the portable 1024x1024 step (MOSSINFER_PROFILE=1) on a full-size random model.
#   checks  builds the tree (the change), returns $OUT/bundle-new.tar.xz, and runs the kernel checks
#           and GPU golden stages on both kernel paths.
#   timing  (bundles.tar.xz carried: old/bin and new/bin, from the two bundles) old and new alternately at 1024 on both paths
#           (bench/h200_before_after.sh: step times, latents and pixels compared), then the op
#           profiles of old and new, portable.
# Logs under $OUT.
set -u
phase=${1:?before, checks or timing}
S=${MOSS_CARRY:-.carry/i33}
B=/tmp/b
root=$(pwd)
log() { echo "== $* ($(date +%T), ${SECONDS} s)"; }

if [[ $phase != timing ]]; then
mkdir -p /tmp/deb && for f in "$S"/*.deb; do dpkg -x "$f" /tmp/deb; done
D=/tmp/deb/usr
cmake -S hip -B $B -G Ninja -DHIP_TARGET=nvidia -DMOSSINFER_STATIC_DEPS=ON -DMOSSINFER_TESTS=OFF \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH=$D \
  -DCMAKE_LIBRARY_PATH=$D/lib/x86_64-linux-gnu -DCMAKE_CXX_FLAGS="-isystem $D/include" \
  -DCMAKE_CUDA_FLAGS="-isystem $D/include" >"$OUT/cmake.log" 2>&1 || { tail -20 "$OUT/cmake.log"; exit 1; }
timeout 400 ninja -C $B moss-infer-hip moss-check bench_random_model >"$OUT/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$OUT/build.log" | head -40; exit 1; }
log "built"
mkdir -p /tmp/new/bin && cp $B/moss-infer-hip $B/moss-check $B/bench_random_model /tmp/new/bin/ && strip /tmp/new/bin/*
else
  # old/bin and new/bin in one xz stream whose dictionary spans both (the binaries share most bytes:
  # 5 MB instead of 14, under the call's size limit)
  tar -C /tmp -xJf "$S/bundles.tar.xz" || exit 2
fi

export XDG_CACHE_HOME=/tmp/cache
model=/tmp/moss-random-full
/tmp/new/bin/bench_random_model --out $model --tokenizer hip/tests/data/qwen35-tokenizer/tokenizer.json \
  --te-layers 2 >"$OUT/model.log" 2>&1 || { tail -3 "$OUT/model.log"; exit 1; }
log "random full-size model written"
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
profile() {  # NAME BIN_DIR: the portable 1024 step by op, 6 steps
  MOSSINFER_KERNELS=portable MOSSINFER_PROFILE=1 timeout 120 "$2/moss-infer-hip" --model $model --prompt "$prompt" \
    --size 1024x1024 --steps 6 --seed 42 --cfg 3 --latent-out /tmp/$1.npy >"$OUT/profile-$1.log" 2>&1
  log "profile $1: exit $?"
  grep -E "^denoise [0-9]" "$OUT/profile-$1.log" | tail -2
}

if [[ $phase == before ]]; then
  tar -C /tmp/new -cf - bin | xz -T0 -6 >"$OUT/bundle-old.tar.xz"
  ls -la "$OUT/bundle-old.tar.xz"
  MOSSINFER_KERNELS=portable CHECK_TIMEOUT=150 bash bench/h200_checks.sh /tmp/new/bin "$OUT/checks-portable" \
    kernels-dit 2>&1 | tail -4
  profile old-portable /tmp/new/bin
  exit 0
fi

if [[ $phase == checks ]]; then
  tar -C /tmp/new -cf - bin | xz -T0 -6 >"$OUT/bundle-new.tar.xz"
  for k in portable native; do
    MOSSINFER_KERNELS=$k CHECK_TIMEOUT=150 bash bench/h200_checks.sh /tmp/new/bin "$OUT/checks-$k" \
      kernels-runtime kernels-dit kernels-te kernels-vae dit e2e >"$OUT/checks-$k.out" 2>&1
    log "checks $k"
    grep -E '^moss-check' "$OUT/checks-$k.out"
    grep -hE '^FAIL|first bad' "$OUT/checks-$k"/checks-*.log | head -20
  done
  exit 0
fi
PATHS="portable native" SIZES=1024 RUNS=2 bash bench/h200_before_after.sh /tmp/old/bin /tmp/new/bin $model /tmp/ba \
  >/dev/null 2>&1
cp /tmp/ba/before-after.txt "$OUT/"
cat "$OUT/before-after.txt"
profile old-portable /tmp/old/bin
profile new-portable /tmp/new/bin
# The new portable kernels' timed cases at the DiT's shapes (the before call ran the old ones')
MOSSINFER_KERNELS=portable timeout 150 /tmp/new/bin/moss-check kernels --family dit >"$OUT/new-portable-kernels-dit.log" 2>&1
log "kernels dit portable (new): exit $?"
grep -E "T4173|ffn_up_gate +4160|ffn_up_gate portable.*4160x3072x16384 x:bf16 |q/k/v/o portable 128x64.*x:bf16 " \
  "$OUT/new-portable-kernels-dit.log" | head -12
