"""Loading the PyTorch implementations the benchmark compares against, on the weights of the
model folder it runs on:
- DiffSynth-Studio's MOSSImageDiT (the `diffsynth` wheel), imported without the package's
  heavy __init__ (its model module needs torch and einops only), attention forced to SDPA;
- shared/reference/moss_ref.py's MossDiT (from a path given on the command line);
- transformers' Qwen3_5TextModel (sdpa), from text_encoder/;
- diffusers' AutoencoderKLFlux2 from vae/ (decoder part).
Models are built on the meta device and take the loaded tensors as they are (assign), so a
5 B DiT costs one read of its file and both DiT implementations share one copy of it."""
import glob
import importlib.util
import json
import os
import sys
import tempfile
import types
import zipfile


def add_wheels(wheel_dir):
    """Unpack every wheel in wheel_dir into a temporary folder put first on sys.path (pure
    Python wheels need no installer). Returns the folder, or None when there are none."""
    wheels = sorted(glob.glob(os.path.join(wheel_dir, "*.whl"))) if wheel_dir else []
    if not wheels:
        return None
    site = tempfile.mkdtemp(prefix="mossbench-site-")
    for w in wheels:
        zipfile.ZipFile(w).extractall(site)
    sys.path.insert(0, site)
    return site


def _package_dir(name):
    for p in sys.path:
        d = os.path.join(p, name)
        if os.path.isfile(os.path.join(d, "__init__.py")):
            return d
    raise ImportError(f"package '{name}' not found on sys.path (carry its wheel: tools/wheels.sh)")


def import_diffsynth_dit():
    """diffsynth.models.moss_image_dit.MOSSImageDiT with torch SDPA attention. The packages
    on the way (diffsynth, diffsynth.core, diffsynth.models) are registered as empty
    namespaces so that their __init__ files, which import the whole library and its many
    dependencies, do not run; the attention and gradient modules are the shipped ones."""
    os.environ["DIFFSYNTH_ATTENTION_IMPLEMENTATION"] = "torch"
    root = _package_dir("diffsynth")
    for name, sub in [("diffsynth", ""), ("diffsynth.core", "core"), ("diffsynth.models", "models")]:
        if name not in sys.modules:
            m = types.ModuleType(name)
            m.__path__ = [os.path.join(root, sub)] if sub else [root]
            sys.modules[name] = m
    from diffsynth.models.moss_image_dit import MOSSImageDiT
    import diffsynth
    version = "unknown"
    for meta in glob.glob(os.path.join(os.path.dirname(root), "diffsynth-*.dist-info", "METADATA")):
        for line in open(meta, encoding="utf-8"):
            if line.startswith("Version:"):
                version = line.split(":", 1)[1].strip()
    diffsynth.__version__ = version
    return MOSSImageDiT, version


def import_moss_ref(path):
    spec = importlib.util.spec_from_file_location("moss_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _weight_files(folder):
    """The safetensors files of one component folder: the shards an index names, else every
    .safetensors file in it."""
    idx = glob.glob(os.path.join(folder, "*.safetensors.index.json"))
    if idx:
        names = sorted(set(json.load(open(idx[0]))["weight_map"].values()))
        return [os.path.join(folder, n) for n in names]
    files = sorted(glob.glob(os.path.join(folder, "*.safetensors")))
    if not files:
        raise FileNotFoundError(f"{folder}: no .safetensors files")
    return files


def load_tensors(folder, device, keep=lambda k: True, rename=lambda k: k, dtype=None):
    """{rename(key): tensor on device} for every key `keep` accepts, read straight to the device."""
    from safetensors import safe_open
    out = {}
    for path in _weight_files(folder):
        with safe_open(path, framework="pt", device=str(device)) as f:
            for k in f.keys():
                if keep(k):
                    t = f.get_tensor(k)
                    out[rename(k)] = t.to(dtype) if dtype is not None and t.is_floating_point() else t
    return out


def assign_weights(module, state, what, allow_meta=()):
    """Loads `state` into a meta-built module by assignment; every tensor that stays on the
    meta device must be under one of the allow_meta prefixes (parts the benchmark never runs)."""
    missing, unexpected = module.load_state_dict(state, strict=False, assign=True)
    left = [n for n, t in list(module.named_parameters()) + list(module.named_buffers())
            if t.is_meta and not n.startswith(tuple(allow_meta))]
    if left:
        raise RuntimeError(f"{what}: no weights for {left[:8]}{' ...' if len(left) > 8 else ''}")
    return unexpected


def dit_config(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "transformer", "config.json")))
    keys = ("dim", "ffn_dim", "num_heads", "num_layers", "text_dim", "freq_dim", "latent_channels", "rope_base")
    return {k: cfg[k] for k in keys if k in cfg}


def load_dit_state(model_dir, device):
    return load_tensors(os.path.join(model_dir, "transformer"), device)


def build_diffsynth_dit(model_dir, state, device):
    import torch
    MOSSImageDiT, version = import_diffsynth_dit()
    with torch.device("meta"):
        m = MOSSImageDiT(**dit_config(model_dir))
    st = dict(state)
    if "rope.bands" not in st:
        st["rope.bands"] = m.rope._default_bands(torch.device(device))
    assign_weights(m, st, "diffsynth MOSSImageDiT")
    m.rope.bands = m.rope._default_bands(torch.device(device))
    return m.eval().requires_grad_(False), version


def build_moss_ref_dit(moss_ref, model_dir, state):
    import torch
    with torch.device("meta"):
        m = moss_ref.MossDiT(**dit_config(model_dir))
    assign_weights(m, {k: v for k, v in state.items() if k != "rope.bands"}, "moss_ref MossDiT")
    return m.eval().requires_grad_(False)


def text_config(model_dir):
    cfg = json.load(open(os.path.join(model_dir, "text_encoder", "config.json")))
    return cfg.get("text_config", cfg)


def text_layer_params(model_dir):
    """Parameters in the text encoder's layers (the part every token multiplies through),
    counted from the safetensors headers without loading anything."""
    total = 0
    for path in _weight_files(os.path.join(model_dir, "text_encoder")):
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        for k, v in header.items():
            if k != "__metadata__" and ".layers." in f".{k}" and "language_model" in k and "mtp" not in k:
                count = 1
                for d in v["shape"]:
                    count *= d
                total += count
    return total


def build_qwen_text_model(model_dir, device, dtype):
    """transformers' Qwen3_5TextModel with sdpa attention and the language tower's weights
    (prefix `language_model.` or `model.language_model.`; the vision tower and mtp are left)."""
    import torch
    from transformers import Qwen3_5TextConfig
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5TextModel
    raw = {k: v for k, v in text_config(model_dir).items() if k != "architectures"}
    cfg = Qwen3_5TextConfig(**raw)
    cfg._attn_implementation = "sdpa"
    prefixes = ("model.language_model.", "language_model.")

    def keep(k):
        return k.startswith(prefixes)

    def rename(k):
        for p in prefixes:
            if k.startswith(p):
                return k[len(p):]
        return k

    state = load_tensors(os.path.join(model_dir, "text_encoder"), device, keep, rename, dtype)
    with torch.device("meta"):
        m = Qwen3_5TextModel(cfg)
    assign_weights(m, state, "Qwen3_5TextModel", allow_meta=("rotary_emb.",))
    with torch.device(device):
        m.rotary_emb = type(m.rotary_emb)(config=cfg)  # its inv_freq is not in the file: fp32, as built
    return m.eval().requires_grad_(False)


def vae_config(model_dir):
    return json.load(open(os.path.join(model_dir, "vae", "config.json")))


def build_diffusers_vae(model_dir, device, dtype):
    """diffusers' AutoencoderKLFlux2 with the folder's decoder, batch-norm statistics and
    post_quant_conv (the encoder is never built: the random model does not ship it)."""
    import torch
    from diffusers import AutoencoderKLFlux2
    cfg = {k: v for k, v in vae_config(model_dir).items() if not k.startswith("_") and k != "force_upcast"}
    with torch.device("meta"):
        vae = AutoencoderKLFlux2.from_config(cfg)
    skip = ("encoder.", "quant_conv.", "bn.num_batches_tracked")
    state = load_tensors(os.path.join(model_dir, "vae"), device, keep=lambda k: not k.startswith(skip), dtype=dtype)
    assign_weights(vae, state, "AutoencoderKLFlux2", allow_meta=skip)
    return vae.eval().requires_grad_(False)


def vae_decode_fn(vae):
    """The pipeline's decode: batch-norm inverse, 2x2 unpatchify, decoder, 8-bit image."""
    import torch
    bn = vae.bn
    eps = vae.config.batch_norm_eps
    std = torch.sqrt(bn.running_var + eps).view(1, -1, 1, 1)
    mean = bn.running_mean.view(1, -1, 1, 1)

    def decode(packed):
        b, c, h, w = packed.shape
        z = packed.to(std.dtype) * std + mean
        z = z.reshape(b, c // 4, 2, 2, h, w).permute(0, 1, 4, 2, 5, 3).reshape(b, c // 4, 2 * h, 2 * w)
        img = vae.decode(z, return_dict=False)[0]
        return ((img / 2 + 0.5).clamp(0, 1) * 255).round().to(torch.uint8)

    return decode
