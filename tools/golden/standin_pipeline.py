"""A stand-in for the official transformer/pipeline_moss_image.py, so that dump_official.py
can be tested without the official weights: the same three classes (MOSSImagePipeline,
MOSSImageTransformer, MOSSImageScheduler) and the same flow as the official pipeline
(docs/model.md: templated prompt -> Qwen3.5 text model -> CPU-seeded noise -> snapped
schedule -> cond and skip-layer uncond DiT calls with guidance -> Euler steps -> batch-norm
inverse, unpatchify, VAE decode -> 8-bit image), built from shared/reference/moss_ref.py
(DiT, schedule), transformers' Qwen3_5TextModel and diffusers' AutoencoderKLFlux2. It loads
any folder of the diffusers layout, e.g. hip/tests/data/tiny-moss.

moss_ref.py is found through $MOSS_REF, else the repository's copy
(hip/tests/data/reference/moss_ref.py) or ../shared/reference/ beside the repository.
"""
import importlib.util
import json
import os
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_moss_ref():
    for p in (os.environ.get("MOSS_REF"), os.path.join(ROOT, "hip", "tests", "data", "reference", "moss_ref.py"),
              os.path.join(ROOT, "..", "shared", "reference", "moss_ref.py"),
              os.path.join(ROOT, "shared", "reference", "moss_ref.py")):
        if p and os.path.isfile(p):
            return os.path.abspath(p)
    return None


def _load_moss_ref():
    path = find_moss_ref()
    if path is None:
        raise ImportError("moss_ref.py not found: set MOSS_REF")
    spec = importlib.util.spec_from_file_location("moss_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


R = _load_moss_ref()


def _state(folder):
    from safetensors.torch import load_file
    state = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".safetensors"):
            state.update(load_file(os.path.join(folder, name)))
    return state


class MOSSImageTransformer(torch.nn.Module):
    """moss_ref's DiT behind a diffusers-style call: batched [B, C, h, w] latents and [B, T, D]
    text states; returns the velocity as `.sample` or (velocity,)."""

    CONFIG_KEYS = ("dim", "ffn_dim", "num_heads", "num_layers", "text_dim", "freq_dim", "latent_channels", "rope_base")

    def __init__(self, **config):
        super().__init__()
        self.config = types.SimpleNamespace(**config)
        self.dit = R.MossDiT(**config)

    @classmethod
    def from_pretrained(cls, folder, torch_dtype=torch.bfloat16):
        cfg = json.load(open(os.path.join(folder, "config.json")))
        m = cls(**{k: cfg[k] for k in cls.CONFIG_KEYS if k in cfg}).to(torch_dtype)
        state = {k: v for k, v in _state(folder).items() if k != "rope.bands"}
        m.dit.load_state_dict({k: v.to(torch_dtype) for k, v in state.items()})
        return m.eval().requires_grad_(False)

    def forward(self, hidden_states, timestep, encoder_hidden_states, skip_layers=None, return_dict=True):
        t = float(timestep.flatten()[0]) if isinstance(timestep, torch.Tensor) else float(timestep)
        out = torch.stack([self.dit(hidden_states[b], encoder_hidden_states[b], t, skip_layers=tuple(skip_layers or ()))
                           for b in range(hidden_states.shape[0])])
        return types.SimpleNamespace(sample=out) if return_dict else (out,)


class MOSSImageScheduler:
    """moss_ref's snapped schedule and the Euler step, float32."""

    def __init__(self, shift=5.0, num_train_timesteps=1000):
        self.shift, self.num_train_timesteps = shift, num_train_timesteps

    @classmethod
    def from_pretrained(cls, folder):
        cfg = json.load(open(os.path.join(folder, "scheduler_config.json")))
        return cls(shift=cfg.get("shift", 5.0), num_train_timesteps=cfg.get("num_train_timesteps", 1000))

    def set_timesteps(self, num_inference_steps, device=None):
        self.sigmas = R.schedule(num_inference_steps, self.shift).to(device or "cpu")
        self.timesteps = self.sigmas[:-1] * self.num_train_timesteps

    def step(self, model_output, timestep, sample, return_dict=True):
        i = int((self.timesteps == timestep).nonzero()[0])
        prev = sample + model_output * (self.sigmas[i + 1] - self.sigmas[i])
        return types.SimpleNamespace(prev_sample=prev) if return_dict else (prev,)


def _text_model(folder, dtype):
    from transformers import Qwen3_5TextConfig
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextModel
    raw = json.load(open(os.path.join(folder, "config.json")))
    cfg = Qwen3_5TextConfig(**{k: v for k, v in raw.get("text_config", raw).items() if k != "architectures"})
    state = _state(folder)
    prefix = next(p for p in ("model.language_model.", "language_model.") if any(k.startswith(p) for k in state))
    m = Qwen3_5TextModel(cfg)
    m.load_state_dict({k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)})
    return m.to(dtype).eval().requires_grad_(False)


def template(prompt):
    return "<|im_start|>user\n" + prompt.strip() + "<|im_end|>\n<|im_start|>assistant\n<think>\n"


class MOSSImagePipeline:
    def __init__(self, transformer, text_encoder, tokenizer, vae, scheduler):
        self.transformer, self.text_encoder, self.tokenizer = transformer, text_encoder, tokenizer
        self.vae, self.scheduler = vae, scheduler
        self.dtype = next(transformer.parameters()).dtype
        self.device = torch.device("cpu")

    @classmethod
    def from_pretrained(cls, folder, torch_dtype=torch.bfloat16):
        from diffusers import AutoencoderKLFlux2
        from transformers import PreTrainedTokenizerFast
        tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(folder, "tokenizer", "tokenizer.json"))
        return cls(transformer=MOSSImageTransformer.from_pretrained(os.path.join(folder, "transformer"), torch_dtype),
                   text_encoder=_text_model(os.path.join(folder, "text_encoder"), torch_dtype), tokenizer=tok,
                   # low_cpu_mem_usage off: a decoder-only VAE folder (tools/random_model.sh) leaves the
                   # encoder on the meta device otherwise, and .to() cannot move it.
                   vae=AutoencoderKLFlux2.from_pretrained(os.path.join(folder, "vae"), low_cpu_mem_usage=False).eval(),
                   scheduler=MOSSImageScheduler.from_pretrained(os.path.join(folder, "scheduler")))

    def to(self, device):
        self.device = torch.device(device)
        for m in (self.transformer, self.text_encoder, self.vae):
            m.to(self.device)
        return self

    def encode_prompt(self, prompt, max_sequence_length):
        enc = self.tokenizer(template(prompt), return_tensors="pt", truncation=True, max_length=max_sequence_length,
                             add_special_tokens=False)
        out = self.text_encoder(input_ids=enc.input_ids.to(self.device), use_cache=False)
        return out.last_hidden_state.to(self.dtype)

    def decode(self, latents):
        vae = self.vae
        bn = vae.bn
        z = latents.to(next(vae.parameters()).dtype)
        z = z * torch.sqrt(bn.running_var + bn.eps).view(1, -1, 1, 1) + bn.running_mean.view(1, -1, 1, 1)
        b, c, h, w = z.shape
        z = z.reshape(b, c // 4, 2, 2, h, w).permute(0, 1, 4, 2, 5, 3).reshape(b, c // 4, 2 * h, 2 * w)
        return vae.decode(z).sample

    def __call__(self, prompt, negative_prompt="", height=1024, width=1024, num_inference_steps=50,
                 guidance_scale=3.0, generator=None, uncond_skip_layers=(22,), max_sequence_length=4096,
                 output_type="pil"):
        from PIL import Image
        cond = self.encode_prompt(prompt, max_sequence_length)
        uncond = self.encode_prompt(negative_prompt, max_sequence_length) if guidance_scale != 1.0 else None
        channels = self.transformer.config.latent_channels
        noise = torch.randn((1, channels, height // 16, width // 16), generator=generator, dtype=torch.float32)
        x = noise.to(self.device)
        self.scheduler.set_timesteps(num_inference_steps, device=self.device)
        for t in self.scheduler.timesteps:
            xin = x.to(self.dtype)
            v = self.transformer(xin, t, cond, return_dict=False)[0].float()
            if uncond is not None:
                vu = self.transformer(xin, t, uncond, skip_layers=uncond_skip_layers, return_dict=False)[0].float()
                v = vu + guidance_scale * (v - vu)
            x = self.scheduler.step(v, t, x, return_dict=False)[0]
        image = self.decode(x)[0].float()
        u8 = ((image / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8)
        if output_type == "pt":
            return types.SimpleNamespace(images=[u8])
        return types.SimpleNamespace(images=[Image.fromarray(u8.permute(1, 2, 0).cpu().numpy())])
