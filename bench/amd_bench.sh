#!/usr/bin/env bash
# amd_bench.sh [BIN_DIR] [OUT_DIR] [MODEL_DIR]: the one-command benchmark for a Radeon owner
# (issue 20; docs/amd_kernels.md). From a build with the tools (cmake's default), it runs:
#   1. the devices and the build (moss-infer-hip --version, --list-devices);
#   2. every kernel against its host replay at the real shapes, timed, with its rate and share of
#      the card's peak (moss-check kernels --family dit, te and vae);
#   3. a full-size random-weight model (tools/random_model.sh, about 28 GB on disk) unless
#      MODEL_DIR already holds one (an official MOSS-Image folder works too);
#   4. 4-step runs at 512x512 and 1024x1024, resident (every DiT block on the card that fits) and
#      streamed (--vram-budget 16, or STREAM_BUDGET GiB), the final latents and the decoded image
#      written (streamed must equal resident byte for byte), each run's denoise step times, VAE
#      time and memory plan kept;
# and writes OUT_DIR/amd-bench-<arch>-<date>.txt (the summary to send back) beside the logs.
# Defaults: BIN_DIR build, OUT_DIR amd-bench-results, MODEL_DIR /tmp/moss-random-full.
# CHECK_TIMEOUT (s, default 600) bounds each kernel check. On NVIDIA it runs the same with
# MOSSINFER_KERNELS=portable: the AMD kernels on an H200 (how this script is tested).
set -uo pipefail
bin=${1:-build}
out=${2:-amd-bench-results}
model=${3:-/tmp/moss-random-full}
root=$(cd "$(dirname "$0")/.." && pwd)
data=$root/hip/tests/data
mkdir -p "$out"
for t in moss-infer-hip moss-check bench_random_model; do
  [[ -x $bin/$t ]] || { echo "amd_bench: $bin/$t not found: build with the tools (cmake --build $bin)" >&2; exit 2; }
done
arch=$("$bin/moss-infer-hip" --list-devices 2>/dev/null | grep -oE '(gfx[0-9a-f]+|sm_[0-9]+)' | head -1)
arch=${arch:-unknown}
summary=$out/amd-bench-$arch-$(date +%Y%m%d-%H%M).txt
say() { echo "$@" | tee -a "$summary"; }
: >"$summary"
say "# moss-infer-hip AMD benchmark, $(date -u +%Y-%m-%dT%H:%MZ)"
say "$("$bin/moss-infer-hip" --version 2>&1 | tr '\n' ' ')"
say "MOSSINFER_KERNELS=${MOSSINFER_KERNELS:-native}"
"$bin/moss-infer-hip" --list-devices 2>&1 | sed 's/^/  /' | tee -a "$summary"

# ---- 2. kernels ----
for f in dit te vae; do
  t=kernels-$f
  args=(--family "$f")
  [[ $f == vae ]] && args+=(--data "$data")
  t0=$SECONDS
  timeout "${CHECK_TIMEOUT:-600}" "$bin/moss-check" kernels "${args[@]}" >"$out/$t.log" 2>&1
  rc=$?
  say ""
  say "## moss-check kernels --family $f: exit $rc, $((SECONDS - t0)) s, $(grep -E '[0-9]+ passed' "$out/$t.log" | tail -1)"
  grep -E '^FAIL' "$out/$t.log" | head -10 | tee -a "$summary"
  # The timed table at the end of each check (rate and share of the card's peak).
  awk '/^(time at the|timed cases)/ { on = 1 } on' "$out/$t.log" | tee -a "$summary"
  grep -E 'TFLOP/s|GB/s' "$out/$t.log" | grep -E '^(vae decode|conv2d)' | head -12 | tee -a "$summary"
done

# ---- 3. the model ----
if [[ ! -f $model/transformer/diffusion_pytorch_model.safetensors && ! -f $model/transformer/diffusion_pytorch_model.safetensors.index.json ]]; then
  t0=$SECONDS
  bash "$root/tools/random_model.sh" "$model" "$bin" >"$out/model.log" 2>&1 ||
    { say "writing the random model failed (see $out/model.log)"; exit 1; }
  say ""
  say "random model written to $model in $((SECONDS - t0)) s"
fi

# ---- 4. full-size runs ----
prompt="A photo of a fridge full of fresh vegetables, milk bottles and eggs, soft morning light."
say ""
say "## full-size runs (4 steps, cfg 3; the first step includes warm-up)"
for size in 512 1024; do
  for mode in resident streamed; do
    name=run-$size-$mode
    budget=()
    [[ $mode == streamed ]] && budget=(--vram-budget "${STREAM_BUDGET:-16}")
    t0=$SECONDS
    timeout 900 "$bin/moss-infer-hip" --model "$model" --prompt "$prompt" --size "${size}x$size" --steps 4 --seed 42 \
      "${budget[@]}" --latent-out "$out/$name.npy" -o "$out/$name.png" >"$out/$name.log" 2>&1
    rc=$?
    steps=$(grep -oE '^denoise [0-9]+/[0-9]+ [0-9.]+' "$out/$name.log" | awk '{ print $3 }' | tr '\n' ' ')
    say "$size x $size $mode: exit $rc, $((SECONDS - t0)) s; step seconds: $steps"
    grep -E '^(memory plan|done)' "$out/$name.log" | sed 's/^/    /' | tee -a "$summary"
  done
  # The PNGs' records differ (the budget, the memory plan), so the images compare as pixels.
  if cmp -s "$out/run-$size-resident.npy" "$out/run-$size-streamed.npy"; then
    say "    $size x $size: streamed latents byte-identical to the resident run's"
  else
    say "    $size x $size: streamed latents DIFFER from the resident run's (or a run failed)"
  fi
  if python3 "$root/hip/tests/cli/png_tool.py" same-pixels "$out/run-$size-resident.png" "$out/run-$size-streamed.png"; then
    say "    $size x $size: streamed image's pixels identical to the resident run's"
  else
    say "    $size x $size: streamed image's pixels DIFFER from the resident run's (or a run failed)"
  fi
done
tar -C "$out" -czf "$out/logs.tgz" --exclude='*.npy' --exclude='*.png' --exclude=logs.tgz . 2>/dev/null
say ""
say "summary: $summary; logs: $out/logs.tgz (send both back)"
