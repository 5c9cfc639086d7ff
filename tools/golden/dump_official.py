#!/usr/bin/env python3
"""Dump what the official MOSS-Image pipeline computes, stage by stage, for the golden case
(prompt "A photo of a fridge full of fresh vegetables", seed 42, 1024x1024, the pipeline's
defaults otherwise) and a few more, so that moss-infer-hip's numerics can be checked against
the official code by anyone holding the official weights (docs/model.md section 8).

The official code ships with the weights as transformer/pipeline_moss_image.py. It is run
as it is: this script only observes it, through forward hooks on the text encoder's token
embedding, the text encoder and the transformer, and thin wrappers around the scheduler's
set_timesteps/step, the VAE's decode and torch.randn (each restored afterwards). No file of
the official folder is modified.

Output: one safetensors file in the golden format (hip/tests/data/README.md): tensors under
`case<N>.` plus a JSON `__metadata__` ("cases": the settings, the call and what was captured
where; "meta": pipeline, versions, device). Per case:
  cond.ids, uncond.ids          int32 [T]      templated token ids the text encoder read
  cond.hidden, uncond.hidden    float32 [T, D] text states as the transformer received them
  noise                         float32 [C, h, w]  the initial noise (torch.randn's output)
  sigmas                        float32 [n+1]  the scheduler's sigmas, final 0 included
  timesteps                     float32 [n]    the timestep of each step as the DiT got it
  step0.latent_in               float32 [C, h, w]  the DiT's latent input at step 0
  step0.v_cond, step0.v_uncond  float32 [C, h, w]  the DiT's step-0 outputs (uncond: skip layers)
  step<i>.latent                float32 [C, h, w]  latents after step i (0 and the last always;
                                                   every step with --all-steps)
  final_latent                  float32 [C, h, w]  the latents handed to the VAE
  image                         float32 [3, H, W]  the VAE decoder's output
  image_u8                      uint8 [3, H, W]    the pipeline's returned image
No uncond.* / v_uncond when the run has no guidance (cfg 1).
Each case's metadata also says "reference" (the run's precision: "fp32" for --dtype float32)
and "captured.settings" (prompt, negative, seed, cfg, skip_layers, shift, steps, max_seq as the
call used them): the engine's readers (hip/tools/check/official_dump.h) take the settings from there.

usage:
  python3 tools/golden/dump_official.py --model /path/MOSS-Image-Base --out official.safetensors
  python3 tools/golden/dump_official.py --model DIR --cases golden --steps 4      # quick look
  python3 tools/golden/dump_official.py --model DIR --prompt "..." --seed 7 --height 768 --width 1344
Options --pipeline-module (a stand-in module, for tests), --device, --dtype, --offload,
--vae-dtype, --wheels: see --help. Needs torch, transformers and diffusers.
"""
import argparse
import glob
import importlib
import importlib.util
import inspect
import json
import os
import platform
import sys
import tempfile
import time
import zipfile

GOLDEN_PROMPT = "A photo of a fridge full of fresh vegetables"

# The golden case takes the pipeline's own defaults for everything it does not name.
CASES = [
    {"name": "golden", "prompt": GOLDEN_PROMPT, "seed": 42, "height": 1024, "width": 1024},
    {"name": "chinese", "prompt": "一只橘色的猫坐在窗台上，阳光洒在它的毛上。", "seed": 7, "height": 1024, "width": 1024},
    {"name": "wide_negative", "prompt": "A poster with the title \"MOSS\" in bold red letters above a mountain lake",
     "negative": "blurry, low quality", "seed": 123, "height": 768, "width": 1344},
    {"name": "long_layout", "prompt": ("{\"summary\": {\"caption\": \"A poster for a spring tea festival\"}, "
                                       "\"items\": [{\"text\": \"Spring Tea Festival\", \"bbox\": [-400, -300, 400, -150]}, "
                                       "{\"text\": \"April 12-14\", \"bbox\": [-200, 200, 200, 280]}]}\n"
                                       "Soft watercolor, cherry blossoms, a teapot in the center."),
     "seed": 2026, "height": 1024, "width": 1024},
]

# Parameter names the pipeline's __call__ may use for each setting, first match wins.
PARAM_NAMES = {
    "prompt": ("prompt",),
    "negative": ("negative_prompt", "negative"),
    "height": ("height",),
    "width": ("width",),
    "steps": ("num_inference_steps", "steps"),
    "cfg": ("guidance_scale", "cfg_scale", "cfg", "guidance"),
    "shift": ("shift", "sigma_shift"),
    "skip_layers": ("uncond_skip_layers", "skip_layers", "negative_skip_layers"),
    "max_seq": ("max_sequence_length", "max_seq_len", "max_length"),
}


def log(msg):
    print(f"[dump {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def add_wheels(wheel_dir):
    """Pure-Python wheels (diffusers, for a machine without it) unpacked onto sys.path."""
    wheels = sorted(glob.glob(os.path.join(wheel_dir, "*.whl"))) if wheel_dir and os.path.isdir(wheel_dir) else []
    if wheels:
        site = tempfile.mkdtemp(prefix="dump-official-site-")
        for w in wheels:
            zipfile.ZipFile(w).extractall(site)
        sys.path.insert(0, site)


def load_module(path):
    """The official pipeline file (or a stand-in) as a module. It is registered under its own
    name and as `moss_image`, the library name model_index.json gives its classes, so that
    diffusers' loader finds them."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    sys.modules.setdefault("moss_image", mod)
    return mod


def assemble_pipeline(mod, model_dir, dtype):
    """Builds the pipeline from its components as model_index.json lists them, for when the
    pipeline class cannot load the folder by itself."""
    index = json.load(open(os.path.join(model_dir, "model_index.json")))
    parts = {}
    for name, spec in index.items():
        if name.startswith("_") or not isinstance(spec, list) or len(spec) != 2:
            continue
        library, cls_name = spec
        cls = getattr(mod, cls_name, None) if library in ("moss_image", mod.__name__) or hasattr(mod, cls_name) else None
        if cls is None:
            cls = getattr(importlib.import_module(library), cls_name)
        sub = os.path.join(model_dir, name)
        if not hasattr(cls, "from_pretrained"):
            parts[name] = cls()
        elif "tokenizer" in name or "scheduler" in name:
            parts[name] = cls.from_pretrained(sub)
        elif cls.__module__.startswith("transformers"):
            parts[name] = cls.from_pretrained(sub, dtype=dtype)
        else:
            # low_cpu_mem_usage off: parts a folder lacks (a decoder-only VAE's encoder) are initialised
            # instead of left on the meta device, where .to() cannot move them.
            parts[name] = cls.from_pretrained(sub, torch_dtype=dtype, low_cpu_mem_usage=False)
    accepted = inspect.signature(mod.MOSSImagePipeline.__init__).parameters
    return mod.MOSSImagePipeline(**{k: v for k, v in parts.items() if k in accepted}), sorted(parts)


def load_pipeline(mod, model_dir, dtype):
    try:
        return mod.MOSSImagePipeline.from_pretrained(model_dir, torch_dtype=dtype), "MOSSImagePipeline.from_pretrained"
    except Exception as e:  # fall back to loading the components one by one
        log(f"MOSSImagePipeline.from_pretrained failed ({type(e).__name__}: {e}); assembling from model_index.json")
        pipe, parts = assemble_pipeline(mod, model_dir, dtype)
        return pipe, f"assembled from model_index.json ({', '.join(parts)}) after: {type(e).__name__}: {e}"


def first_tensor(o):
    """The main tensor of a module's output: the tensor itself, `.sample`, `.prev_sample`,
    `.last_hidden_state`, or element 0 of a tuple."""
    import torch
    if isinstance(o, torch.Tensor):
        return o
    for attr in ("sample", "prev_sample", "last_hidden_state"):
        v = getattr(o, attr, None)
        if isinstance(v, torch.Tensor):
            return v
    if isinstance(o, (tuple, list)) and o and isinstance(o[0], torch.Tensor):
        return o[0]
    if isinstance(o, dict):
        for v in o.values():
            if isinstance(v, torch.Tensor):
                return v
    return None


def cpu32(t):
    return t.detach().to("cpu", copy=True).float()


class Recorder:
    """Everything observed during one pipeline call."""

    def __init__(self, keep_all_steps):
        self.keep_all_steps = keep_all_steps
        self.te_ids, self.te_masks, self.te_out = [], [], []
        self.dit = []            # per DiT call at step 0: dict(rows)
        self.dit_timesteps = []  # distinct timesteps in order of first appearance
        self.sigmas = None
        self.step_latents = []
        self.randn = []
        self.vae_in = self.vae_out = None
        self.undo = []

    def step_index(self, t):
        if not self.dit_timesteps or self.dit_timesteps[-1] != t:
            if t in self.dit_timesteps:
                return self.dit_timesteps.index(t)
            self.dit_timesteps.append(t)
        return len(self.dit_timesteps) - 1

    def close(self):
        for fn in reversed(self.undo):
            fn()
        self.undo.clear()


def token_embedding(text_encoder):
    import torch
    embs = [m for m in text_encoder.modules() if isinstance(m, torch.nn.Embedding)]
    if not embs:
        raise RuntimeError("the text encoder has no token embedding to observe")
    return max(embs, key=lambda m: m.num_embeddings)


def install_hooks(pipe, rec):
    import torch
    te, dit, sched, vae = pipe.text_encoder, pipe.transformer, pipe.scheduler, pipe.vae

    emb = token_embedding(te)
    h = emb.register_forward_pre_hook(lambda m, args: rec.te_ids.append(args[0].detach().cpu().clone()))
    rec.undo.append(h.remove)

    def te_pre(m, args, kwargs):
        mask = kwargs.get("attention_mask")
        rec.te_masks.append(mask.detach().cpu().clone() if isinstance(mask, torch.Tensor) else None)

    def te_post(m, args, kwargs, out):
        t = first_tensor(out)
        hs = getattr(out, "hidden_states", None)
        if getattr(out, "last_hidden_state", None) is None and hs:
            t = hs[-1]
        rec.te_out.append(cpu32(t) if isinstance(t, torch.Tensor) and t.dim() == 3 else None)

    for hook in (te.register_forward_pre_hook(te_pre, with_kwargs=True),
                 te.register_forward_hook(te_post, with_kwargs=True)):
        rec.undo.append(hook.remove)

    # The class's forward, not the instance's: offloading wraps the latter in (*args, **kwargs).
    sig = inspect.signature(type(dit).forward)
    pending = {}

    def dit_pre(m, args, kwargs):
        b = sig.bind_partial(m, *args, **kwargs).arguments
        names = list(sig.parameters)[1:]
        lat = b.get("hidden_states", args[0] if args else None)
        t = b.get("timestep", b.get(names[1]) if len(names) > 1 else None)
        text = b.get("encoder_hidden_states", b.get(names[2]) if len(names) > 2 else None)
        mask = b.get("encoder_attention_mask", b.get("attention_mask"))
        skip = next((v for k, v in b.items() if "skip" in k), None)
        tv = float(t.flatten()[0]) if isinstance(t, torch.Tensor) else float(t)
        i = rec.step_index(tv)
        pending["call"] = None
        if i == 0:
            pending["call"] = {"t": tv, "latent": cpu32(lat), "text": cpu32(text),
                               "mask": mask.detach().cpu().clone() if isinstance(mask, torch.Tensor) else None,
                               "skip": list(skip) if skip is not None else None}

    def dit_post(m, args, kwargs, out):
        call = pending.pop("call", None)
        if call is not None:
            call["out"] = cpu32(first_tensor(out))
            rec.dit.append(call)

    for hook in (dit.register_forward_pre_hook(dit_pre, with_kwargs=True),
                 dit.register_forward_hook(dit_post, with_kwargs=True)):
        rec.undo.append(hook.remove)

    def wrap(obj, name, make):
        """Replaces obj.name by a wrapper, as an instance attribute; undone by restoring the
        instance attribute it shadowed, or by removing it (the class method shows again)."""
        had = name in vars(obj)
        before = vars(obj).get(name)
        setattr(obj, name, make(getattr(obj, name)))
        rec.undo.append(lambda: setattr(obj, name, before) if had else delattr(obj, name))

    def wrap_set_timesteps(orig):
        def f(*a, **k):
            r = orig(*a, **k)
            s = getattr(sched, "sigmas", None)
            rec.sigmas = cpu32(s) if isinstance(s, torch.Tensor) else (
                torch.tensor(s, dtype=torch.float32) if s is not None else None)
            return r
        return f

    def wrap_step(orig):
        def f(*a, **k):
            r = orig(*a, **k)
            t = first_tensor(r)
            if t is not None:
                rec.step_latents.append(cpu32(t))
                if not rec.keep_all_steps and len(rec.step_latents) > 2:
                    rec.step_latents[-2] = None  # keep step 0 and the latest only
            return r
        return f

    def wrap_decode(orig):
        def f(z, *a, **k):
            rec.vae_in = cpu32(z)
            r = orig(z, *a, **k)
            t = first_tensor(r)
            rec.vae_out = cpu32(t) if t is not None else None
            return r
        return f

    wrap(sched, "set_timesteps", wrap_set_timesteps)
    wrap(sched, "step", wrap_step)
    wrap(vae, "decode", wrap_decode)

    orig_randn = torch.randn

    def randn(*a, **k):
        out = orig_randn(*a, **k)
        if isinstance(out, torch.Tensor) and out.dim() == 4:
            rec.randn.append(cpu32(out))
        return out

    torch.randn = randn
    rec.undo.append(lambda: setattr(torch, "randn", orig_randn))


def call_kwargs(pipe, case, seed_device):
    """Maps the case's settings onto the parameter names of the pipeline's __call__. The seed
    goes in as `seed` when the pipeline takes one, else as a CPU torch.Generator."""
    import torch
    params = inspect.signature(pipe.__call__).parameters
    open_kwargs = any(p.kind == p.VAR_KEYWORD for p in params.values())
    kw = {}
    for key, names in PARAM_NAMES.items():
        if case.get(key) is None:
            continue
        name = next((n for n in names if n in params), None)
        if name is None and open_kwargs:
            name = names[0]
        if name is None:
            raise SystemExit(f"the pipeline's __call__ takes no parameter for '{key}' (tried {names}); "
                             f"its parameters: {list(params)}")
        value = case[key]
        kw[name] = tuple(value) if key == "skip_layers" else value
    if "seed" in params:
        kw["seed"] = case["seed"]
    elif "generator" in params or open_kwargs:
        kw["generator"] = torch.Generator(seed_device).manual_seed(case["seed"])
    else:
        raise SystemExit(f"the pipeline's __call__ takes neither 'seed' nor 'generator': {list(params)}")
    return kw


def image_u8_chw(result):
    """The first returned image as uint8 [3, H, W] (PIL image, numpy array or tensor)."""
    import numpy as np
    import torch
    images = getattr(result, "images", None)
    if images is None and isinstance(result, (tuple, list)):
        images = result[0]
    img = images[0] if isinstance(images, (list, tuple)) else images
    if isinstance(img, torch.Tensor):
        img = img.detach().cpu()
        img = img.numpy() if img.dtype == torch.uint8 else img.float().numpy()
    if hasattr(img, "convert"):
        arr = np.asarray(img.convert("RGB"))
    else:
        arr = np.asarray(img)
        if arr.dtype != np.uint8:  # floats in [0, 1]
            arr = (np.clip(arr, 0, 1) * 255).round().astype(np.uint8)
        if arr.ndim == 4:
            arr = arr[0]
        if arr.shape[0] == 3 and arr.shape[-1] != 3:
            arr = arr.transpose(1, 2, 0)
    return torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def split_rows(call):
    """A DiT call's batch rows: (latent, text, out) per row, text cut to its mask."""
    rows = []
    for b in range(call["latent"].shape[0]):
        text = call["text"][b]
        if call["mask"] is not None and call["mask"].dim() == 2:
            text = text[call["mask"][b].bool()]
        rows.append({"latent": call["latent"][b], "text": text, "out": call["out"][b], "skip": call["skip"],
                     "t": call["t"]})
    return rows


def te_prompts(rec):
    """Per text-encoder call and batch row: (ids, output or None), cut to the attention mask."""
    out = []
    for i, ids in enumerate(rec.te_ids):
        mask = rec.te_masks[i] if i < len(rec.te_masks) else None
        hid = rec.te_out[i] if i < len(rec.te_out) else None
        for b in range(ids.shape[0]):
            keep = mask[b].bool() if mask is not None and mask.dim() == 2 else slice(None)
            out.append((ids[b][keep].to(dtype=ids.dtype), hid[b][keep] if hid is not None else None))
    return out


def match_ids(text, prompts, used):
    """The text-encoder call whose tokens produced these DiT text rows: same length, then the
    closest output, then the first unused."""
    same = [i for i, (ids, _) in enumerate(prompts) if ids.numel() == text.shape[0]]
    if not same:
        return None, "no text-encoder call of this length"
    with_out = [i for i in same if prompts[i][1] is not None and prompts[i][1].shape == text.shape]
    if with_out:
        best = min(with_out, key=lambda i: (prompts[i][1] - text).abs().max().item())
        return best, "length and values"
    free = [i for i in same if i not in used] or same
    return free[0], "length and call order"


def pack_latent(z, bn):
    """[C/4, 2h, 2w] decoder input -> [C, h, w] packed latent: the inverse of the pipeline's
    unpatchify and batch-norm de-normalisation."""
    import torch
    c4, h2, w2 = z.shape
    x = z.reshape(c4, h2 // 2, 2, w2 // 2, 2).permute(0, 2, 4, 1, 3).reshape(c4 * 4, h2 // 2, w2 // 2)
    mean, var = bn.running_mean.detach().cpu().float(), bn.running_var.detach().cpu().float()
    return ((x - mean.view(-1, 1, 1)) / torch.sqrt(var + bn.eps).view(-1, 1, 1)).contiguous()


def build_case(rec, result, bn=None):
    import torch
    t, info = {}, {}
    rows = [r for call in rec.dit for r in split_rows(call)]
    if not rows:
        raise RuntimeError("the transformer was never called")
    # cond: the row without skipped layers when the calls say which skip, else the first row.
    skips = [bool(r["skip"]) for r in rows]
    if len(rows) >= 2:  # guidance: a cond and an uncond row at step 0
        if any(skips) and not all(skips):
            cond_i, uncond_i, how = skips.index(False), skips.index(True), "skip_layers argument"
        else:
            cond_i, uncond_i, how = 0, 1, "call order (cond first)"
        pairs = [("cond", rows[cond_i]), ("uncond", rows[uncond_i])]
    else:
        how = "single call"
        pairs = [("cond", rows[0])]
    info["cond_uncond_by"] = how
    prompts, used = te_prompts(rec), []
    for role, row in pairs:
        k, why = match_ids(row["text"], prompts, used)
        if k is not None:
            used.append(k)
            t[f"{role}.ids"] = prompts[k][0].to(torch.int32)
        info[f"{role}_ids_by"] = why
        t[f"{role}.hidden"] = row["text"].contiguous()
        t[f"step0.v_{role}"] = row["out"].contiguous()
        if role == "uncond" and row["skip"] is not None:
            info["uncond_skip_layers"] = [int(x) for x in row["skip"]]
    t["step0.latent_in"] = pairs[0][1]["latent"].contiguous()

    lat_shape = tuple(t["step0.latent_in"].shape)
    noise = [n for n in rec.randn if tuple(n.shape[1:]) == lat_shape]
    if noise:
        t["noise"] = noise[-1][0].contiguous()
        info["noise_from"] = "torch.randn"
    else:
        t["noise"] = t["step0.latent_in"].clone()
        info["noise_from"] = "the DiT's step-0 latent input (torch.randn was not seen)"

    t["timesteps"] = torch.tensor(rec.dit_timesteps, dtype=torch.float32)
    if rec.sigmas is not None:
        s = rec.sigmas.flatten()
        if s[-1] != 0:
            s = torch.cat([s, torch.zeros(1)])
            info["sigmas_note"] = "final 0 appended"
        t["sigmas"] = s.contiguous()
        info["sigmas_from"] = "scheduler.sigmas after set_timesteps"
    elif rec.dit_timesteps:
        t["sigmas"] = torch.cat([t["timesteps"] / 1000, torch.zeros(1)])
        info["sigmas_from"] = "the DiT's timesteps / 1000, final 0 appended (the scheduler has no .sigmas)"
    steps = [s for s in rec.step_latents]
    if steps:
        for i, s in enumerate(steps):
            if s is not None:
                t[f"step{i}.latent"] = s[0].contiguous() if s.dim() == 4 else s.contiguous()
        t["final_latent"] = t[f"step{len(steps) - 1}.latent"]
        info["latents_from"] = "scheduler.step"
    elif rec.vae_in is not None and bn is not None:
        t["final_latent"] = pack_latent(rec.vae_in[0], bn)
        info["latents_from"] = "the VAE's input, batch-norm and unpatchify inverted (scheduler.step was not called)"
    info["steps_run"] = len(rec.dit_timesteps)
    if rec.vae_out is not None:
        t["image"] = rec.vae_out[0].contiguous()
    t["image_u8"] = image_u8_chw(result)
    return t, info


def resolved_settings(pipe, case, kw, info):
    """What the call used, as plain JSON for the engine's readers (tools/check/official_dump.h): each
    setting from the call's arguments, else the pipeline's default; the skip layers the DiT's
    uncond call really got when the hooks saw them; the shift from the scheduler."""
    params = inspect.signature(pipe.__call__).parameters
    out = {"seed": case["seed"]}
    for key, names in PARAM_NAMES.items():
        name = next((n for n in names if n in kw), None)
        if name is not None:
            val = kw[name]
        else:
            p = next((params[n] for n in names if n in params), None)
            if p is None or p.default is inspect.Parameter.empty:
                continue
            val = p.default
        if isinstance(val, tuple):
            val = list(val)
        if val is None or isinstance(val, (bool, int, float, str, list)):
            out[key] = val
    if "uncond_skip_layers" in info:
        out["skip_layers"] = info["uncond_skip_layers"]
    if out.get("shift") is None:
        sched = pipe.scheduler
        shift = getattr(sched, "shift", None)
        if shift is None and getattr(sched, "config", None) is not None:
            cfg = sched.config
            shift = cfg.get("shift") if isinstance(cfg, dict) else getattr(cfg, "shift", None)
        if isinstance(shift, (int, float)):
            out["shift"] = float(shift)
    return out


def versions():
    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "diffusers", "safetensors", "tokenizers"):
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception as e:
            out[name] = f"missing ({type(e).__name__})"
    return out


def folder_identity(model_dir):
    """Sizes of the weight files and the configs, enough to tell Base from SFT."""
    ident = {}
    for sub in ("transformer", "text_encoder", "vae"):
        files = sorted(glob.glob(os.path.join(model_dir, sub, "*.safetensors")))
        ident[sub] = {os.path.basename(f): os.path.getsize(f) for f in files}
    return ident


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the official MOSS-Image folder (diffusers layout)")
    ap.add_argument("--pipeline-module", help="the pipeline file (default MODEL/transformer/pipeline_moss_image.py)")
    ap.add_argument("--out", default="official_golden.safetensors")
    ap.add_argument("--cases", default="all", help="'all', 'golden', or names/indices: " +
                    ", ".join(c["name"] for c in CASES))
    ap.add_argument("--prompt", help="run this one case instead of the built-in ones")
    ap.add_argument("--negative")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--height", type=int)
    ap.add_argument("--width", type=int)
    ap.add_argument("--steps", type=int, help="override the steps of every case (default: the pipeline's)")
    ap.add_argument("--cfg", type=float)
    ap.add_argument("--shift", type=float)
    ap.add_argument("--skip-layers", help="comma list, e.g. '22' (default: the pipeline's)")
    ap.add_argument("--max-seq", type=int)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32", "float16"])
    ap.add_argument("--vae-dtype", default="float32", choices=["float32", "bfloat16", "keep"],
                    help="cast the VAE after loading (the ports decode in fp32); 'keep' leaves it as loaded")
    ap.add_argument("--offload", choices=["none", "model", "sequential"], default="none",
                    help="diffusers CPU offload for cards that cannot hold everything (~28 GB in bf16)")
    ap.add_argument("--all-steps", action="store_true", help="keep the latents after every step")
    ap.add_argument("--wheels", default=".whl", help="folder of wheels to unpack onto sys.path (e.g. diffusers)")
    return ap.parse_args(argv)


def selected_cases(a):
    if a.prompt is not None:
        cases = [{"name": "custom", "prompt": a.prompt, "negative": a.negative, "seed": a.seed,
                  "height": a.height, "width": a.width}]
    elif a.cases == "all":
        cases = [dict(c) for c in CASES]
    else:
        cases = []
        for sel in a.cases.split(","):
            sel = sel.strip()
            cases.append(dict(CASES[int(sel)] if sel.isdigit() else next(c for c in CASES if c["name"] == sel)))
    for c in cases:
        for key, val in (("steps", a.steps), ("cfg", a.cfg), ("shift", a.shift), ("max_seq", a.max_seq)):
            if val is not None:
                c[key] = val
        if a.skip_layers is not None:
            c["skip_layers"] = [int(x) for x in a.skip_layers.split(",") if x.strip()]
    return cases


def main(argv=None):
    a = parse_args(argv)
    add_wheels(a.wheels)
    import torch
    from safetensors.torch import save_file

    module_path = a.pipeline_module or os.path.join(a.model, "transformer", "pipeline_moss_image.py")
    if not os.path.isfile(module_path):
        raise SystemExit(f"{module_path}: not found (the official folder ships it; or give --pipeline-module)")
    mod = load_module(module_path)
    dtype = getattr(torch, a.dtype)
    log(f"loading {a.model} with {module_path} ({a.dtype})")
    pipe, how_loaded = load_pipeline(mod, a.model, dtype)
    if a.vae_dtype != "keep":
        pipe.vae.to(getattr(torch, a.vae_dtype))
    if a.offload == "model":
        pipe.enable_model_cpu_offload()
    elif a.offload == "sequential":
        pipe.enable_sequential_cpu_offload()
    else:
        pipe.to(a.device)
    meta = {"format": "moss-official-dump/1", "pipeline_module": os.path.abspath(module_path), "loaded_by": how_loaded,
            "call_signature": str(inspect.signature(pipe.__call__)), "dtype": a.dtype,
            "vae_dtype": str(next(pipe.vae.parameters()).dtype), "device": a.device, "offload": a.offload,
            "versions": versions(), "model": os.path.abspath(a.model), "model_files": folder_identity(a.model),
            "gpu": torch.cuda.get_device_name(0) if a.device.startswith("cuda") and torch.cuda.is_available() else None}
    tensors, cases_meta = {}, []
    for n, case in enumerate(selected_cases(a)):
        rec = Recorder(a.all_steps)
        kw = call_kwargs(pipe, case, "cpu")
        log(f"case {n} ({case['name']}): {dict((k, v) for k, v in kw.items() if k != 'generator')}")
        install_hooks(pipe, rec)
        t0 = time.time()
        try:
            with torch.inference_mode():
                result = pipe(**kw)
        finally:
            rec.close()
        seconds = time.time() - t0
        defaults = {k: (None if p.default is inspect.Parameter.empty else repr(p.default))
                    for k, p in inspect.signature(pipe.__call__).parameters.items() if k not in ("self",)}
        t, info = build_case(rec, result, getattr(pipe.vae, "bn", None))
        info["settings"] = resolved_settings(pipe, case, kw, info)
        for k, v in t.items():
            tensors[f"case{n}.{k}"] = v.contiguous().clone()  # no two keys may share storage
        # "reference": the precision of the run the tensors come from (the readers choose their
        # limits by it: an fp32 run is checked like the project's _fp32 goldens).
        cases_meta.append({"case": n, **{k: v for k, v in case.items()},
                           "reference": "fp32" if a.dtype == "float32" else a.dtype, "call_kwargs":
                           {k: (f"torch.Generator('cpu').manual_seed({case['seed']})" if k == "generator" else v)
                            for k, v in kw.items()}, "call_defaults": defaults, "seconds": seconds,
                           "captured": info, "shapes": {k: list(v.shape) for k, v in t.items()}})
        log(f"case {n}: {info['steps_run']} steps in {seconds:.1f} s; captured {sorted(t)}")
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".part"
    save_file(tensors, tmp, metadata={"cases": json.dumps(cases_meta, ensure_ascii=False, default=str),
                                      "meta": json.dumps(meta, default=str)})
    os.replace(tmp, a.out)
    log(f"wrote {a.out} ({len(tensors)} tensors, {os.path.getsize(a.out) / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
