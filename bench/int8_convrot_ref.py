#!/usr/bin/env python3
"""INT8 ConvRot in plain PyTorch: the reference the C++ host arithmetic, `moss-infer-hip quantize`
and the GPU kernels to come are judged by. Written from the formulas of docs/int8_convrot.md
(sections 2-5), torch ops only, no code of the format's other implementations.

- hadamard(g): H_g, the Kronecker power of H4 / 2 (the definition).
- rotate_dense(x, g): every run of g features times H_g, in float64 (the definition).
- rotate_fast(x, g): the same in float32, in the operation order the document fixes (radix-4
  stages, lowest digit first, each output 0.5 * the H4 row's signed sum added left to right):
  bit for bit what the C++ convrot::rotate_groups computes.
- quantize_rows(v): per-row scale s = max(absmax * fl(1/127), 1e-30), q = round-half-even(v / s)
  clamped to [-128, 127]; a row holding a non-finite value gets s = NaN and q = 0.
- quantize_weight / dequantize_weight / int8_linear: the format's layer, offline and at run time.
- quantize_dit(state_dict, layers, g): a MOSS-Image DiT state dict in the Comfy-Org layout.
- int8_dit(dit, quantized, g): moss_ref's DiT with its block projections run in INT8 ConvRot (the
  fidelity reference of the INT8 path: its distance to the float DiT is the format's own error).

Command line: `--write-cases FILE` writes the host op's test cases
(hip/tests/data/int8_convrot_cases.safetensors); `--quantize-dit DIR OUT [--group-size N]`
writes quantize_dit of DIR/transformer, for comparisons with the C++ command;
`--write-dit-reference DIR FILE` writes the INT8 DiT's forwards on DIR (the tiny model:
hip/tests/data/int8_dit_reference.safetensors, read by the unit tests Int8Dit.*);
`--write-lora-reference DIR FILE` the same with two LoRAs beside the quantized layers
(hip/tests/data/int8_lora_reference.safetensors: the LoRA files' tensors, single layers, forwards).
"""
import argparse
import json
import os

import torch

H4 = [[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]]
SCALE_FLOOR = 1e-30
DEFAULT_GROUP = 256
FORMAT = "int8_tensorwise"


def valid_group_size(g):
    """A power of 4, at least 4."""
    if not isinstance(g, int) or g < 4:
        return False
    while g % 4 == 0:
        g //= 4
    return g == 1


def _check_group(width, g):
    if not valid_group_size(g):
        raise ValueError(f"group size {g} is not a power of 4")
    if width % g:
        raise ValueError(f"group size {g} does not divide the width {width}")


def hadamard(g, dtype=torch.float64):
    """H_g = (H4 / 2) kron (H4 / 2) kron ...: symmetric and orthogonal."""
    _check_group(g, g)
    h4 = torch.tensor(H4, dtype=dtype) / 2
    h = h4
    while h.shape[0] < g:
        h = torch.kron(h, h4)
    return h


def rotate_dense(x, g):
    """x [..., K] -> every run of g features times H_g, float64."""
    k = x.shape[-1]
    _check_group(k, g)
    xg = x.to(torch.float64).reshape(-1, k // g, g)
    return (xg @ hadamard(g)).reshape(x.shape)


def rotate_fast(x, g):
    """The float32 fast transform in the document's operation order (bit-exact with the C++)."""
    k = x.shape[-1]
    _check_group(k, g)
    v = x.to(torch.float32).reshape(-1, k // g, g).clone()
    rows, groups = v.shape[0], v.shape[1]
    s = 1
    while s < g:
        # index within a group = hi * 4s + digit * s + lo
        q = v.reshape(rows, groups, g // (4 * s), 4, s)
        a, b, c, d = q[:, :, :, 0], q[:, :, :, 1], q[:, :, :, 2], q[:, :, :, 3]
        out = torch.stack([
            0.5 * (((a + b) + c) - d),
            0.5 * (((a + b) - c) + d),
            0.5 * (((a - b) + c) + d),
            0.5 * ((((-a) + b) + c) + d),
        ], dim=3)
        v = out.reshape(rows, groups, g)
        s *= 4
    return v.reshape(x.shape)


def quantize_rows(v):
    """v [R, K] float32 -> (q int8 [R, K], s float32 [R, 1])."""
    v = v.to(torch.float32)
    finite = torch.isfinite(v).all(dim=-1, keepdim=True)
    absmax = torch.where(torch.isfinite(v), v.abs(), torch.zeros_like(v)).amax(dim=-1, keepdim=True)
    inv127 = torch.tensor(1.0 / 127.0, dtype=torch.float32)
    s = torch.clamp(absmax * inv127, min=SCALE_FLOOR)
    q = torch.round(v / s).clamp(-128, 127)
    q = torch.where(finite, q, torch.zeros_like(q)).to(torch.int8)
    s = torch.where(finite, s, torch.full_like(s, float("nan")))
    return q, s


def quantize_weight(w, g=DEFAULT_GROUP):
    """W [out, in] (any float dtype) -> (Q_w int8 [out, in], s_w float32 [out, 1]); W_rot = W R."""
    return quantize_rows(rotate_fast(w.to(torch.float32), g))


def dequantize_weight(q, s, g=DEFAULT_GROUP):
    """Back to the unrotated basis (R is its own inverse), float64."""
    return rotate_dense(q.to(torch.float64) * s.to(torch.float64).reshape(-1, 1), g)


def int8_linear(x, q_w, s_w, bias, g=DEFAULT_GROUP):
    """x [M, K] float32 -> y [M, N]: float(sum_i q_x q_w in int32) * (s_x * s_w) + bias."""
    x_rot = rotate_fast(x, g)
    q_x, s_x = quantize_rows(x_rot)
    acc = (q_x.to(torch.int64) @ q_w.to(torch.int64).T)
    assert acc.abs().max().item() < 2 ** 31, "int32 accumulator overflow"
    y = acc.to(torch.int32).to(torch.float32) * (s_x * s_w.to(torch.float32).reshape(1, -1))
    if bias is not None:
        y = y + bias.to(torch.float32).reshape(1, -1)
    return y, x_rot, q_x, s_x


def comfy_quant(g):
    """The layer's comfy_quant tensor: the bytes of the JSON as Python's json.dumps spells it."""
    text = json.dumps({"format": FORMAT, "convrot": True, "convrot_groupsize": g})
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.uint8)


def quantized_layers(layers):
    """The Comfy-Org file's quantized layers (docs/int8_convrot.md section 5): name -> the official
    weights whose rows it stacks."""
    out = {}
    for n in range(layers):
        p = f"layers.{n}.proj."
        out[p + "qkv"] = [p + "q.weight", p + "k.weight", p + "v.weight"]
        out[p + "o"] = [p + "o.weight"]
        out[p + "ffn_up_gate"] = [p + "ffn_up_gate.weight"]
        out[p + "ffn_down"] = [p + "ffn_down.weight"]
    return out


def quantize_dit(sd, layers, g=DEFAULT_GROUP):
    """An official-name DiT state dict -> the Comfy-Org INT8 ConvRot state dict."""
    qlayers = quantized_layers(layers)
    consumed = {w for ws in qlayers.values() for w in ws}
    out = {name: t for name, t in sd.items() if name not in consumed}
    for layer, sources in qlayers.items():
        w = torch.cat([sd[s] for s in sources], dim=0)
        _check_group(w.shape[1], g)
        if not torch.isfinite(w.to(torch.float32)).all():
            raise ValueError(f"{layer}: non-finite weight")
        q, s = quantize_weight(w, g)
        out[layer + ".weight"] = q
        out[layer + ".weight_scale"] = s
        out[layer + ".comfy_quant"] = comfy_quant(g)
    return out


class Int8ConvRotLinear(torch.nn.Module):
    """A quantized layer in place of an nn.Linear without bias: int8_linear over the last axis."""

    def __init__(self, q_w, s_w, g):
        super().__init__()
        self.q_w, self.s_w, self.g = q_w, s_w.to(torch.float32).reshape(-1, 1), g

    def forward(self, x):
        y = int8_linear(x.reshape(-1, x.shape[-1]).to(torch.float32), self.q_w, self.s_w, None, self.g)[0]
        return y.reshape(*x.shape[:-1], self.q_w.shape[0])


def int8_dit(dit, quantized, g):
    """A moss_ref MossDiT (hip/tests/data/reference/moss_ref.py) with every main block's
    projections replaced by the INT8 ConvRot layers of `quantized` (a quantize_dit state dict,
    or the file `moss-infer-hip quantize` writes): qkv's rows split back into q, k and v (each row
    is quantized on its own, so the split is exact). The rest keeps the model's float weights."""
    for n, block in enumerate(dit.layers):
        p = f"layers.{n}.proj."
        q, s = quantized[p + "qkv.weight"], quantized[p + "qkv.weight_scale"]
        rows = q.shape[0] // 3
        for i, name in enumerate(("q", "k", "v")):
            block.proj[name] = Int8ConvRotLinear(q[i * rows:(i + 1) * rows], s[i * rows:(i + 1) * rows], g)
        for name in ("o", "ffn_up_gate", "ffn_down"):
            block.proj[name] = Int8ConvRotLinear(quantized[p + name + ".weight"],
                                                 quantized[p + name + ".weight_scale"], g)
    return dit


# ---- bf16 activations: the format as ComfyUI runs it in a bf16 model ---------------------------------
# docs/int8_convrot.md section 3, "The quotient": [CK]'s fused kernel takes a bf16 activation,
# rotates it in fp32 (the same radix-4 stages), takes the row's absmax and s in fp32 (the absmax
# first clamped to bf16's largest finite value), but divides in the input's dtype:
# q = rint(bf16(bf16(v) / bf16(s))) (int8_linear.cu 54-57 and 322-330); the int32 product is then
# scaled in its dequantize kernels' order, (float(A) * s_x) * s_w in fp32 (lines 363 and 405), and
# rounded to bf16. The fidelity table's "bf16 PyTorch INT8" row (bench/int8_fidelity.py) is
# moss_ref's bf16 DiT with these layers.
BF16_MAX = 3.3895313892515355e38


def int_matmul(q_x, q_w):
    """q_x [M, K] int8 times q_w [N, K] int8 transposed, exact (int64 on the CPU); the fidelity
    script swaps in an exact GPU product."""
    return q_x.to(torch.int64) @ q_w.to(torch.int64).T


def quantize_rows_bf16(v):
    """v [R, K] (the rotated bf16 activation, in fp32) -> (q int8, s float32 [R, 1]) with the
    quotient in bf16, as above; special rows as quantize_rows (a non-finite row: s NaN, q 0)."""
    v = v.to(torch.float32)
    finite = torch.isfinite(v).all(dim=-1, keepdim=True)
    absmax = torch.where(torch.isfinite(v), v.abs(), torch.zeros_like(v)).amax(dim=-1, keepdim=True)
    s = torch.clamp(absmax.clamp(max=BF16_MAX) * torch.tensor(1.0 / 127.0, dtype=torch.float32), min=SCALE_FLOOR)
    quotient = (v.to(torch.bfloat16).float() / s.to(torch.bfloat16).float()).to(torch.bfloat16).float()
    q = torch.where(finite, torch.round(quotient).clamp(-128, 127), torch.zeros_like(v)).to(torch.int8)
    return q, torch.where(finite, s, torch.full_like(s, float("nan")))


def int8_linear_bf16(x, q_w, s_w, bias, g=DEFAULT_GROUP):
    """x [M, K] (rounded to bf16 first) -> y [M, N] bf16: (float(sum q_x q_w) * s_x) * s_w + bias in fp32."""
    q_x, s_x = quantize_rows_bf16(rotate_fast(x.to(torch.bfloat16), g))
    acc = int_matmul(q_x, q_w)
    assert acc.abs().max().item() < 2 ** 31, "int32 accumulator overflow"
    y = (acc.to(torch.int32).to(torch.float32) * s_x) * s_w.to(torch.float32).reshape(1, -1)
    if bias is not None:
        y = y + bias.to(torch.float32).reshape(1, -1)
    return y.to(torch.bfloat16)


class Int8ConvRotLinearBf16(Int8ConvRotLinear):
    """Int8ConvRotLinear with bf16 activations in and out (int8_linear_bf16)."""

    def forward(self, x):
        y = int8_linear_bf16(x.reshape(-1, x.shape[-1]), self.q_w, self.s_w, None, self.g)
        return y.reshape(*x.shape[:-1], self.q_w.shape[0])


def int8_dit_bf16(dit, quantized, g):
    """int8_dit on a bf16 moss_ref DiT, its INT8 layers taking bf16 activations as ComfyUI's do."""
    dit = int8_dit(dit, quantized, g)
    for block in dit.layers:
        for name in list(block.proj.keys()):
            m = block.proj[name]
            if type(m) is Int8ConvRotLinear:
                block.proj[name] = Int8ConvRotLinearBf16(m.q_w, m.s_w, m.g)
    return dit


def write_cases(path):
    """The host op's cases: widths 128, 192, 384 (the tiny models'), group 64."""
    from safetensors.torch import save_file
    gen = torch.Generator().manual_seed(49)
    t = {}
    for k in (128, 192, 384):
        m, n = 8, 48
        x = torch.randn(m, k, generator=gen) * 2
        x[1, 5] = 40.0  # an outlier the rotation spreads over its group
        x[2] = 0.0      # an all-zero row: scale 1e-30, output = bias
        w = torch.randn(n, k, generator=gen) * 0.05
        q_w, s_w = quantize_weight(w, 64)
        bias = (torch.randn(n, generator=gen) * 0.1).to(torch.bfloat16)
        y, x_rot, q_x, s_x = int8_linear(x, q_w, s_w, bias, 64)
        p = f"K{k}."
        t.update({p + "x": x, p + "q_w": q_w, p + "w_scale": s_w, p + "bias": bias,
                  p + "x_rot": x_rot, p + "q_x": q_x, p + "s_x": s_x, p + "y": y})
    save_file({name: v.contiguous() for name, v in t.items()}, path,
              metadata={"made_by": "bench/int8_convrot_ref.py --write-cases"})


DIT_REFERENCE_TIMESTEPS = (960.0, 820.0, 700.0, 600.0, 450.0, 300.0, 150.0, 40.0)


def dit_reference_cases(model_dir, g=64):
    """The INT8 DiT's reference forwards on a model folder (the tiny model, group 64), fp32 torch:
    per case (one per DIT_REFERENCE_TIMESTEPS) the inputs (latent [C, 2, 3], text states [5, text_dim], the timestep), the INT8
    ConvRot DiT's velocity (int8_dit of quantize_dit: what `moss-infer-hip --diffusion-model` on
    the file `quantize` writes must give) and the float DiT's (the format's own error, for scale)."""
    _, sd, layers, config, dit = float_dit(model_dir)
    quantized = quantize_dit(sd, layers, g)
    gen = torch.Generator().manual_seed(4949)
    t = {}
    for i, timestep in enumerate(DIT_REFERENCE_TIMESTEPS):
        latent = torch.randn(config["latent_channels"], 2, 3, generator=gen)
        text = torch.randn(5, config["text_dim"], generator=gen)
        ts = torch.tensor(timestep)
        with torch.no_grad():
            t[f"case{i}.velocity_int8"] = int8_dit(dit(), quantized, g)(latent, text, ts)
            t[f"case{i}.velocity_float"] = dit()(latent, text, ts)
        t[f"case{i}.latent"], t[f"case{i}.text"] = latent, text
        t[f"case{i}.timestep"] = ts.reshape(1)
    return t


def write_dit_reference(path, model_dir):
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in dit_reference_cases(model_dir).items()}, path,
              metadata={"made_by": "bench/int8_convrot_ref.py --write-dit-reference"})


def float_dit(model_dir):
    """The folder's DiT in the PyTorch reference (hip/tests/data/reference/moss_ref.py):
    (moss_ref module, state dict, layer count, config, dit) where dit() builds a fresh fp32
    MossDiT on those weights in eval mode (a fresh one each time: int8_dit replaces its layers)."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "moss_ref", os.path.join(here, "..", "hip", "tests", "data", "reference", "moss_ref.py"))
    moss_ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(moss_ref)
    sd, layers = load_dit(model_dir)
    with open(os.path.join(model_dir, "transformer", "config.json")) as f:
        config = {k: v for k, v in json.load(f).items() if not k.startswith("_")}

    def dit():
        m = moss_ref.MossDiT(**config)
        m.load_state_dict({k: v.to(torch.float32) for k, v in sd.items() if k != "rope.bands"})
        return m.eval()

    return moss_ref, sd, layers, config, dit


def load_dit(model_dir):
    import glob
    from safetensors.torch import load_file
    sd = {}
    for f in sorted(glob.glob(os.path.join(model_dir, "transformer", "*.safetensors"))):
        sd.update(load_file(f))
    with open(os.path.join(model_dir, "transformer", "config.json")) as f:
        layers = json.load(f)["num_layers"]
    return sd, layers


# LoRAs beside the INT8 layers (docs/loras.md, "LoRAs on an INT8 ConvRot DiT"): a quantized layer
# keeps its int8 product, and a LoRA's update is added to its output from the layer's own input
# x, unrotated and unquantized; a float layer merges the update into its weights as the bf16 DiT
# does. Written from the documented formulas, torch ops only.

def lora_delta(kind, f, coef):
    """A module's coef * dW [out, in], float32: low rank up @ down, LoHa (w1a @ w1b) * (w2a @ w2b),
    full diff."""
    f = {k: v.to(torch.float32) for k, v in f.items()}
    if kind == "lowrank":
        dw = f["up"] @ f["down"]
    elif kind == "loha":
        dw = (f["w1a"] @ f["w1b"]) * (f["w2a"] @ f["w2b"])
    else:
        dw = f["diff"]
    return coef * dw


class BesideLoras(torch.nn.Module):
    """An INT8 ConvRot layer with LoRA corrections added to its output, each from the layer's
    input x: low rank coef * (x @ down^T) @ up^T; the other kinds x @ D^T with D the dense delta
    coef * dW rounded to bf16 once (the engine stores it so: docs/loras.md)."""

    def __init__(self, layer, corrections):
        super().__init__()
        self.layer, self.corrections = layer, corrections

    def forward(self, x):
        y = self.layer(x)
        xf = x.to(torch.float32)
        for kind, f, coef in self.corrections:
            if kind == "lowrank":
                y = y + coef * ((xf @ f["down"].to(torch.float32).T) @ f["up"].to(torch.float32).T)
            else:
                d = lora_delta(kind, f, coef).to(torch.bfloat16).to(torch.float32)
                y = y + xf @ d.T
        return y


def lora_module_factors(module, rows):
    """A module's factors restricted to the output rows `rows` (a fused qkv module's q, k or v)."""
    kind, f, scale = module
    if kind == "lowrank":
        return kind, {"down": f["down"], "up": f["up"][rows]}, scale
    if kind == "loha":
        return kind, {"w1a": f["w1a"][rows], "w1b": f["w1b"], "w2a": f["w2a"][rows], "w2b": f["w2b"]}, scale
    return kind, {"diff": f["diff"][rows]}, scale


def int8_dit_with_loras(dit, quantized, g, loras):
    """int8_dit with LoRAs: `loras` a list of (weight, {module: (kind, factors, scale)}) in order,
    modules under official names less ".weight" ("layers.0.proj.qkv" fused). A module on a
    quantized layer runs beside it (BesideLoras, the fused qkv's rows split over q, k and v); any
    other module merges into the float weight: W' = bf16(W + sum of weight * scale * dW)."""
    dit = int8_dit(dit, quantized, g)
    params = dict(dit.named_parameters())
    beside = {}
    merged = {}
    for weight, modules in loras:
        for name, (kind, f, scale) in modules.items():
            coef = weight * scale
            if name.startswith("layers.") and name.endswith(".proj.qkv"):
                rows = f["up" if kind == "lowrank" else "w1a" if kind == "loha" else "diff"].shape[0] // 3
                for i, part in enumerate("qkv"):
                    sub = lora_module_factors((kind, f, scale), slice(i * rows, (i + 1) * rows))
                    beside.setdefault(name[:-3] + part, []).append((kind, sub[1], coef))
            elif name.startswith("layers."):
                beside.setdefault(name, []).append((kind, f, coef))
            else:
                merged[name] = merged.get(name, 0) + lora_delta(kind, f, coef)
    for name, corrections in beside.items():
        n, proj = int(name.split(".")[1]), name.split(".")[-1]
        block = dit.layers[n]
        block.proj[proj] = BesideLoras(block.proj[proj], corrections)
    with torch.no_grad():
        for name, dw in merged.items():
            w = params[name + ".weight"]
            w.copy_((w.to(torch.float32) + dw).to(torch.bfloat16).to(torch.float32))
    return dit


LORA_REFERENCE_TIMESTEPS = (900.0, 600.0, 300.0, 60.0)


def lora_reference_loras(sd, gen):
    """Two LoRAs on the tiny model: a PEFT low-rank one (rank 4, alpha 8, weight 0.8) on the fused
    qkv of block 0, o of block 1 and a float layer (text_embedder.blocks.0.proj); a LyCORIS one
    (weight -0.6) with a LoHa (rank 2, alpha 1) on ffn_up_gate of block 2, full deltas on ffn_down
    of block 3 and on o of block 1 (two corrections on one layer, in order). Each update is scaled
    to a tenth of its layer's weight norm, so it shows in the output without swamping it."""
    def shape(name):
        if name.endswith(".qkv"):
            q = sd[name[:-3] + "q.weight"]
            return 3 * q.shape[0], q.shape[1]
        return tuple(sd[name + ".weight"].shape)

    def norm_of(name):
        if name.endswith(".qkv"):
            return torch.cat([sd[name[:-3] + p + ".weight"].float() for p in "qkv"]).norm()
        return sd[name + ".weight"].float().norm()

    def make(name, kind, rank, alpha, weight):
        out, inp = shape(name)
        if kind == "lowrank":
            f = {"down": torch.randn(rank, inp, generator=gen), "up": torch.randn(out, rank, generator=gen)}
        elif kind == "loha":
            f = {"w1a": torch.randn(out, rank, generator=gen), "w1b": torch.randn(rank, inp, generator=gen),
                 "w2a": torch.randn(out, rank, generator=gen), "w2b": torch.randn(rank, inp, generator=gen)}
        else:
            f = {"diff": torch.randn(out, inp, generator=gen)}
        scale = alpha / rank if alpha else 1.0
        size = lora_delta(kind, f, weight * scale).norm()
        first = {"lowrank": "up", "loha": "w1a", "full": "diff"}[kind]
        f[first] = f[first] * (0.1 * norm_of(name) / size)
        f = {k: v.to(torch.bfloat16) for k, v in f.items()}  # as trainers save them
        return kind, f, scale, alpha

    first = {n: make(n, "lowrank", 4, 8.0, 0.8)
             for n in ("layers.0.proj.qkv", "layers.1.proj.o", "text_embedder.blocks.0.proj")}
    second = {"layers.2.proj.ffn_up_gate": make("layers.2.proj.ffn_up_gate", "loha", 2, 1.0, -0.6),
              "layers.3.proj.ffn_down": make("layers.3.proj.ffn_down", "full", 0, 0.0, -0.6),
              "layers.1.proj.o": make("layers.1.proj.o", "full", 0, 0.0, -0.6)}
    return [(0.8, first), (-0.6, second)]


LORA_FILE_NAMES = {"down": "lora_A.weight", "up": "lora_B.weight", "w1a": "hada_w1_a", "w1b": "hada_w1_b",
                   "w2a": "hada_w2_a", "w2b": "hada_w2_b", "diff": "diff"}


def lora_reference_cases(model_dir, g=64):
    """The INT8 DiT with LoRAs on the tiny model (group 64): the two LoRAs as their files hold them
    ("lora<i>.<tensor>", the files' own names), each block projection's layer alone on a random
    input ("layer.<projection>.x" / ".y"), and forwards ("case<i>.*": latent, text, timestep,
    velocity_int8_lora; velocity_int8 without the LoRAs, for scale)."""
    _, sd, layers, config, dit = float_dit(model_dir)
    quantized = quantize_dit(sd, layers, g)
    gen = torch.Generator().manual_seed(4950)
    loras = lora_reference_loras(sd, gen)
    t = {}
    for i, (weight, modules) in enumerate(loras):
        for name, (kind, f, scale, alpha) in modules.items():
            for role, v in f.items():
                t[f"lora{i}.diffusion_model.{name}.{LORA_FILE_NAMES[role]}"] = v
            if alpha:
                t[f"lora{i}.diffusion_model.{name}.alpha"] = torch.tensor([alpha])
        t[f"lora{i}.weight"] = torch.tensor([weight])
    as_run = [(w, {n: (k, f, s) for n, (k, f, s, a) in m.items()}) for w, m in loras]
    model = int8_dit_with_loras(dit(), quantized, g, as_run)
    with torch.no_grad():
        for n in range(layers):
            for proj, layer in model.layers[n].proj.items():
                if not isinstance(layer, BesideLoras):
                    continue
                x = torch.randn(6, layer.layer.q_w.shape[1], generator=gen)
                t[f"layer.layers.{n}.proj.{proj}.x"] = x
                t[f"layer.layers.{n}.proj.{proj}.y"] = layer(x)
        for i, timestep in enumerate(LORA_REFERENCE_TIMESTEPS):
            latent = torch.randn(config["latent_channels"], 2, 3, generator=gen)
            text = torch.randn(5, config["text_dim"], generator=gen)
            ts = torch.tensor(timestep)
            t[f"case{i}.velocity_int8_lora"] = model(latent, text, ts)
            t[f"case{i}.velocity_int8"] = int8_dit(dit(), quantized, g)(latent, text, ts)
            t[f"case{i}.latent"], t[f"case{i}.text"], t[f"case{i}.timestep"] = latent, text, ts.reshape(1)
    return t


def write_lora_reference(path, model_dir):
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in lora_reference_cases(model_dir).items()}, path,
              metadata={"made_by": "bench/int8_convrot_ref.py --write-lora-reference"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-cases", metavar="FILE")
    ap.add_argument("--quantize-dit", nargs=2, metavar=("MODEL_DIR", "OUT"))
    ap.add_argument("--write-dit-reference", nargs=2, metavar=("MODEL_DIR", "FILE"))
    ap.add_argument("--write-lora-reference", nargs=2, metavar=("MODEL_DIR", "FILE"))
    ap.add_argument("--group-size", type=int, default=DEFAULT_GROUP)
    a = ap.parse_args()
    if a.write_cases:
        write_cases(a.write_cases)
    if a.write_dit_reference:
        write_dit_reference(a.write_dit_reference[1], a.write_dit_reference[0])
    if a.write_lora_reference:
        write_lora_reference(a.write_lora_reference[1], a.write_lora_reference[0])
    if a.quantize_dit:
        from safetensors.torch import save_file
        sd, layers = load_dit(a.quantize_dit[0])
        save_file(quantize_dit(sd, layers, a.group_size), a.quantize_dit[1])
    if not (a.write_cases or a.quantize_dit or a.write_dit_reference or a.write_lora_reference):
        ap.error("nothing to do: give --write-cases, --quantize-dit, --write-dit-reference or --write-lora-reference")


if __name__ == "__main__":
    main()
