#!/usr/bin/env bash
# Downloads MOSS-Image from Hugging Face, checks the files and prints the command that uses them.
#
#   scripts/get_model.sh [sft|base|comfy] DIR       download (resumable: run it again to go on), check
#   scripts/get_model.sh --check-only [sft|base|comfy] DIR   check a folder already there (no network)
#
#   sft    OpenMOSS-Team/MOSS-Image-SFT, the official bf16 diffusers folder (the default; the
#          fine-tuned model for prompts as people write them), about 27 GiB
#   base   OpenMOSS-Team/MOSS-Image-Base, the same layout, the pre-trained model
#   comfy  Comfy-Org's single files (Comfy-Org/moss-image: the SFT DiT, the Qwen3.5 text encoder
#          and the FLUX.2 VAE, bf16; docs/model_files.md), with the official folder's tokenizer.json
#          beside them (single files carry none)
#
# The download uses the huggingface_hub Python package; when python3 cannot import it, it is
# installed with pip into a private folder (MOSSINFER_HF_PYTHON, default
# ~/.cache/moss-infer-hip/python), never into the system. HF_TOKEN is used when set. The checks
# (scripts/lib/check_model.py): every file the program opens is there, every weight file's
# safetensors header reads and the file is as long as the header says.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
say() { echo "get_model: $*"; }
usage() { sed -n '4,5p' "$0" | sed 's/^# *//' >&2; exit 2; }

check_only=0
if [[ ${1:-} == --check-only ]]; then check_only=1; shift; fi
variant=sft
if [[ ${1:-} == sft || ${1:-} == base || ${1:-} == comfy ]]; then variant=$1; shift; fi
[[ $# -eq 1 && -n $1 && $1 != -* ]] || usage
dir=$1

case $variant in
  sft) repo=OpenMOSS-Team/MOSS-Image-SFT gib=27 patterns="" kind=diffusers ;;
  base) repo=OpenMOSS-Team/MOSS-Image-Base gib=27 patterns="" kind=diffusers ;;
  comfy) repo=Comfy-Org/moss-image gib=28 kind=files
    patterns="*diffusion_models/moss_image_sft_bf16.safetensors *text_encoders/qwen3.5_9b_bf16.safetensors *vae/flux2-vae.safetensors" ;;
esac

if ((!check_only)); then
  mkdir -p "$dir"
  free_kib=$(df -Pk "$dir" | awk 'NR == 2 {print $4}')
  have=$(du -sk "$dir" | cut -f1)
  if (((free_kib + have) / 1048576 < gib + 1)); then
    say "$dir: $((free_kib / 1048576)) GiB free; $repo needs about $gib GiB (and 1 to spare)"
    exit 1
  fi
  py=${MOSSINFER_HF_PYTHON:-$HOME/.cache/moss-infer-hip/python}
  if ! PYTHONPATH="$py${PYTHONPATH:+:$PYTHONPATH}" python3 -c 'import huggingface_hub' 2>/dev/null; then
    say "installing huggingface_hub into $py (a private folder)"
    python3 -m pip install -q --target "$py" huggingface_hub ||
      { say "pip failed: install python3-pip (sudo apt-get install python3-pip) and run this again"; exit 1; }
  fi
  say "downloading $repo into $dir (about $gib GiB; run this again to resume after an interruption)"
  PYTHONPATH="$py${PYTHONPATH:+:$PYTHONPATH}" python3 - "$repo" "$dir" $patterns <<'PY'
import sys
from huggingface_hub import snapshot_download
repo, folder, patterns = sys.argv[1], sys.argv[2], sys.argv[3:]
snapshot_download(repo_id=repo, local_dir=folder, allow_patterns=patterns or None)
PY
  if [[ $kind == files ]]; then
    say "downloading the tokenizer (tokenizer/tokenizer.json of OpenMOSS-Team/MOSS-Image-SFT) into $dir"
    PYTHONPATH="$py${PYTHONPATH:+:$PYTHONPATH}" python3 - OpenMOSS-Team/MOSS-Image-SFT "$dir" <<'PY'
import sys
from huggingface_hub import snapshot_download
snapshot_download(repo_id=sys.argv[1], local_dir=sys.argv[2], allow_patterns=["tokenizer/tokenizer.json"])
PY
  fi
fi

say "checking $dir"
report=$(python3 "$here/lib/check_model.py" "$kind" "$dir") || { say "$dir is not a complete $variant folder (above); run scripts/get_model.sh $variant $dir to fetch what is missing"; exit 1; }
echo "$report"
blocks=$(sed -n 's/^blocks //p' <<<"$report")
skip=""
# The default --skip-layers is 22: a model with fewer blocks (the tiny test model) needs its own.
if [[ -n $blocks ]] && ((blocks <= 22)); then skip=" --skip-layers $((blocks / 2))"; fi
bin=moss-infer-hip
[[ -x $here/../build/moss-infer-hip ]] && bin=build/moss-infer-hip
if [[ $kind == diffusers ]]; then
  say "ready: $bin --model $dir --prompt \"a lighthouse on a cliff at dusk\"$skip -o first.png"
else
  # Where the files landed (Comfy-Org repositories may keep them under split_files/).
  found() { find "$dir" -name "$1" -print -quit 2>/dev/null; }
  dit=$(found 'moss_image_*_bf16.safetensors') te=$(found 'qwen3.5_9b_bf16.safetensors')
  vae=$(found 'flux2-vae*.safetensors') tok=$(found tokenizer.json)
  if [[ -n $dit && -n $te && -n $vae && -n $tok ]]; then
    say "ready: $bin --diffusion-model $dit --text-encoder $te --vae $vae --tokenizer $tok --prompt \"a lighthouse on a cliff at dusk\"$skip -o first.png"
  else
    say "files checked; give them to $bin with --diffusion-model, --text-encoder, --vae and --tokenizer (docs/model_files.md)"
  fi
fi
