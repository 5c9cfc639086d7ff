#!/usr/bin/env python3
"""One text-to-image generation through PyTorch, from process start to a written PNG, in a
process of its own (run_bench.py's first_image phase starts it and times the whole process).

DiffSynth 2.1.12 has a MOSS-Image pipeline class (diffsynth.pipelines.moss_image), but it
cannot load the benchmark's model folders: it recognises each safetensors file by a hash of
the official checkpoint's key names and shapes, builds its text encoder from a hard-coded
full-size config, reads the chat template from a tokenizer_config.json the folders do not
have, and importing it imports the whole library (modelscope, imageio, pandas, accelerate, peft,
none of which the GPU machine has). So this script walks the same code path with the pieces
the benchmark already uses, in the pipeline's order and dtypes:
  load           the DiT (--impl diffsynth: DiffSynth's MOSSImageDiT; --impl compiled: moss_ref's
                 MossDiT under torch.compile, whole model), transformers' Qwen3_5TextModel and
                 diffusers' AutoencoderKLFlux2, all bf16, all resident on the device
  text encoder   the prompt and the negative prompt, each templated and encoded on its own
                 (DiffSynth encodes them separately)
  denoise        --steps Euler steps of the shifted flow-matching schedule: per step a cond and
                 an uncond forward (skipping --skip-layers), guidance and the update in fp32;
                 with --impl compiled the compile happens in the first step and is included
                 (the timestep is a tensor input, so the later steps reuse its graphs)
  decode         batch-norm inverse, unpatchify, VAE decode, 8-bit image
  png            PIL writes the PNG
The last stdout line is `FIRST_IMAGE {json}` with each part's seconds (after CUDA syncs)."""
import time

T_START = time.monotonic()  # before the heavy imports: their time is a part of their own

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

MARK = "FIRST_IMAGE "


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=["diffsynth", "compiled"], required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, help="the PNG to write")
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--negative", default="")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--cfg", type=float, default=3.0)
    ap.add_argument("--shift", type=float, default=5.0, help="the schedule's shift (DiffSynth's sigma_shift)")
    ap.add_argument("--skip-layers", default="22")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--moss-ref", help="moss_ref.py (--impl compiled)")
    ap.add_argument("--compile-mode", default="default")
    ap.add_argument("--wheels", help="folder of wheels to unpack onto sys.path")
    return ap.parse_args(argv)


def sigmas(steps, shift):
    """The flow-matching schedule: steps sigmas from 1 down, shifted (s*x / (1 + (s-1)*x)),
    then 0. The step's cost does not depend on the values."""
    out = []
    for i in range(steps):
        x = 1.0 - i / steps
        out.append(shift * x / (1 + (shift - 1) * x))
    return out + [0.0]


class Clock:
    """Seconds of each part, each closed after a device sync so queued work is counted where
    it was issued."""

    def __init__(self, device):
        self.device, self.parts, self.t = device, {}, time.monotonic()

    def lap(self, name):
        from mossbench.baselines import sync
        sync(self.device)
        now = time.monotonic()
        self.parts[name] = self.parts.get(name, 0.0) + now - self.t
        self.t = now


def load(a, device):
    import torch
    from mossbench import baselines as B
    from mossbench import torch_models as M
    state = M.load_dit_state(a.model, device)
    if a.impl == "diffsynth":
        dit, version = M.build_diffsynth_dit(a.model, state, device)
    else:
        dit = M.build_moss_ref_dit(M.import_moss_ref(a.moss_ref), a.model, state)
        dit = B.compile_moss_ref(dit, "model", a.compile_mode)
        version = None
    state = None
    te = M.build_qwen_text_model(a.model, device, torch.bfloat16)
    vae = M.build_diffusers_vae(a.model, device, torch.bfloat16)  # the pipeline's torch_dtype
    return dit, te, vae, version


def encode(te, tok, prompt, device):
    import torch
    from mossbench.prompts import templated_ids
    ids = torch.tensor([templated_ids(tok, prompt)], device=device)
    return te(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).last_hidden_state.to(torch.bfloat16)


def denoise_fn(a, dit, cond, uncond, skip):
    """f(x fp32 [1, C, h, w], sigma) -> the guided velocity (fp32), as the impl's pipeline calls it."""
    import torch
    if a.impl == "diffsynth":
        cm = torch.ones(cond.shape[:2], dtype=torch.bool, device=cond.device)
        um = torch.ones(uncond.shape[:2], dtype=torch.bool, device=uncond.device)

        def v(x, sigma):
            t = torch.tensor([sigma * 1000.0], dtype=torch.float32, device=x.device)
            xin = x.to(torch.bfloat16)
            vc = dit(hidden_states=xin, timestep=t, encoder_hidden_states=cond, encoder_attention_mask=cm).float()
            if a.cfg == 1.0:
                return vc
            vu = dit(hidden_states=xin, timestep=t, encoder_hidden_states=uncond, encoder_attention_mask=um,
                     skip_layers=skip).float()
            return vu + a.cfg * (vc - vu)
        return v

    def v(x, sigma):
        # The timestep goes in as a 0-d float32 tensor (DiffSynth's pipeline passes a tensor too):
        # a Python float is specialised under dynamic=False, so every step would recompile.
        t = torch.tensor(sigma * 1000.0, dtype=torch.float32)
        xin = x[0].to(torch.bfloat16)
        vc = dit(xin, cond[0], t)
        if a.cfg == 1.0:
            return vc[None]
        vu = dit(xin, uncond[0], t, skip_layers=skip)
        return (vu + a.cfg * (vc - vu))[None]
    return v


def main(argv=None):
    a = parse_args(argv)
    out = {"impl": a.impl, "size": a.size, "steps": a.steps}
    clock = Clock("cpu")
    clock.t = T_START
    if a.wheels:
        from mossbench.torch_models import add_wheels
        add_wheels(a.wheels)
    if a.impl == "compiled":
        from mossbench.baselines import compile_counters
    import torch
    from PIL import Image
    from mossbench import torch_models as M
    from mossbench.prompts import load_tokenizer
    # the libraries' own imports belong to the import part, not to the load
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextModel  # noqa: F401
    from diffusers import AutoencoderKLFlux2  # noqa: F401
    if a.impl == "diffsynth":
        M.import_diffsynth_dit()
    clock.lap("import_s")
    clock.device = a.device
    dit, te, vae, version = load(a, a.device)
    out["diffsynth"] = version
    clock.lap("load_s")
    tok = load_tokenizer(os.path.join(a.model, "tokenizer", "tokenizer.json"))
    skip = tuple(int(x) for x in a.skip_layers.split(",") if x.strip())
    with torch.inference_mode():
        cond = encode(te, tok, a.prompt, a.device)
        uncond = encode(te, tok, a.negative, a.device)
        out["tokens"] = [cond.shape[1], uncond.shape[1]]
        clock.lap("text_encoder_s")
        c = M.dit_config(a.model)["latent_channels"]
        g = torch.Generator().manual_seed(a.seed)
        x = torch.randn(1, c, a.size // 16, a.size // 16, generator=g).to(a.device)
        v = denoise_fn(a, dit, cond, uncond, skip)
        sig = sigmas(a.steps, a.shift)
        for i in range(a.steps):
            x = x + v(x, sig[i]) * (sig[i + 1] - sig[i])
            if i == 0:
                clock.lap("first_step_s")  # the compile, for --impl compiled
        clock.lap("later_steps_s")
        img = M.vae_decode_fn(vae)(x)
        clock.lap("decode_s")
        Image.fromarray(img[0].permute(1, 2, 0).cpu().numpy()).save(a.out)
    clock.lap("png_s")
    parts = clock.parts
    parts["denoise_s"] = parts["first_step_s"] + parts.get("later_steps_s", 0.0)
    parts["total_s"] = time.monotonic() - T_START
    out["parts"] = parts
    if a.impl == "compiled":
        out["compile"] = compile_counters()
    print(MARK + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
