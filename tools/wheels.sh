#!/usr/bin/env bash
# Downloads into ./.whl (git-ignored) the Python wheels the GPU machine lacks for the speed
# benchmark (bench/run_bench.py) and the official-golden dump (tools/golden/dump_official.py):
#   diffusers  AutoencoderKLFlux2 (VAE baseline; the official pipeline's base classes)
#   diffsynth  DiffSynth-Studio's MOSSImageDiT (DiT baseline)
# Both are pure Python. Nothing else is needed there: diffusers' requirements (huggingface-hub
# >= 1.32, safetensors >= 0.8, numpy, regex, requests, Pillow, filelock) are on the image,
# and the benchmark imports diffsynth's DiT module alone (torch and einops), not the package
# with its long list of requirements.
#
#   tools/wheels.sh            # then carry `.whl` (about 7.3 MiB)
# On the GPU machine either let the scripts unpack them (their --wheels option, default .whl)
# or install them:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
set -euo pipefail
cd "$(dirname "$0")/.."
DIFFUSERS_VERSION="${DIFFUSERS_VERSION:-0.42.1}"
DIFFSYNTH_VERSION="${DIFFSYNTH_VERSION:-2.1.12}"
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
  "diffusers==${DIFFUSERS_VERSION}" "diffsynth==${DIFFSYNTH_VERSION}"
ls -l .whl
du -sh .whl
