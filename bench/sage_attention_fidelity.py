#!/usr/bin/env python3
"""Fidelity of the DiT attention with QK^T in int8 (issue 49; bench/amd_model.md section 6).

The idea is SageAttention's (Zhang et al. 2024, https://arxiv.org/abs/2410.02367), written here
from the paper's formulas with torch ops only:
  - K smoothed: its mean over the tokens (per head and channel) subtracted. Every score of one
    query row moves by the same q . mean(K), which the softmax does not see.
  - Q and K quantized to int8 per block of rows (per head): s = absmax / 127, q = round(x / s)
    clamped to [-127, 127]; the 1/sqrt(d) softmax scale is applied before Q is quantized.
  - S = (Q8 K8^T, exact integers) * s_q[block] * s_k[block]; softmax as before; P.V in bf16
    (P rounded to bf16, accumulation in fp32), as the kernels' bf16 attention does it.
  - A variant beyond the design: P.V in fp8 e4m3 (SageAttention2's idea), P scaled by 448 and V
    per channel, for the table's last column only.

Every method runs on the same bf16 activations and is compared with the fp32 attention of those
activations (relative L2, cosine, max |diff|):
  bf16      the engine's bf16 attention (bf16 Q, K, V; scores, softmax and sums in fp32; P bf16)
  int8qk    the design: smoothed K, per-block int8 Q and K, P.V bf16
  int8qk-raw  the same without K's smoothing (what the smoothing buys)
  int8qk-fp8pv the variant with P.V in fp8
  bf16-online the portable kernel's own arithmetic before issue 49's change: 32-key tiles in order, a
            running maximum, the output rescaled every tile, P rounded to nearest even
  bf16-lazy   the portable kernel now (attention.hip kLazyRescale, attention_device.h
            probability_bf16): the rescale skipped where no row's maximum grew (exact), P rounded
            by adding 0x8000 (ties away from zero), exp2's argument one fma; also prints how often
            a wave still rescales
  bf16-stale8 the same with a stale base kept while the maximum grew by at most 2^8 (FlashAttention-4's
            rule): exact in real arithmetic, not taken (the row's top probabilities lose exactness)

Activations:
  --synthetic (default): random with the DiT's structure: per-head RMS-normalised Q and K times
  norm weights of spread --qk-gain (logits of std ~ qk-gain^2), a token-shared channel offset in K
  (--k-offset, the outlier SageAttention smooths), RoPE from moss_ref's tables for the image grid
  and the text tokens (the reference DiT of the golden tools, hip/tests/data/reference/moss_ref.py).
  --capture MODEL_DIR: the reference DiT with MODEL_DIR's weights on a random latent and random
  text states; the rotated Q, K and V of --blocks are taken from its attention (a wrapper around
  moss_ref.attention), so the activations are the model's own (the full-size random model's on
  the GPU: see the command below).

  python3 bench/sage_attention_fidelity.py [--size 1024] [--text-tokens 77] [--heads 24] [--head-dim 128]
                                           [--capture MODEL_DIR --blocks 0,20,41] [--device cuda] [--json OUT]

The lead's GPU command (the full shapes; CPU-sized shapes run in bench/tests):
  python3 bench/sage_attention_fidelity.py --device cuda --size 1024 --json sage-1024.json
  python3 bench/sage_attention_fidelity.py --device cuda --size 1024 --capture $MODEL --blocks 0,10,21,30,41
"""
import argparse
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REF_DIR = os.path.join(ROOT, "hip", "tests", "data", "reference")

FP8_MAX = 448.0  # e4m3's largest finite value
Q_BLOCK = 16     # query rows per scale: one wave's query tile (the kernel's per-wave scale, SageAttention2's
                 # per-warp granularity; session 26's first DiT-level rows took the workgroup's 128: ADMISSIBLE)
K_BLOCK = 32     # key rows per scale: its key tile


def moss_ref():
    if REF_DIR not in sys.path:
        sys.path.insert(0, REF_DIR)
    import moss_ref as R  # noqa: E402
    return R


def bf16(x):
    return x.to(torch.bfloat16).to(torch.float32)


# ---- the methods: q, k, v [heads, tokens, d] float32 holding bf16 values ---------------------------
def attention_fp32(q, k, v):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(s, dim=-1) @ v


def _softmax_pv(s, v, pv="bf16"):
    """Unnormalised exp(s - max) rounded for the P.V product, its sum in fp32 (as the kernels keep
    it), the product accumulated in fp32, then divided."""
    p = torch.exp(s - s.amax(dim=-1, keepdim=True))
    denom = p.sum(dim=-1, keepdim=True)
    if pv == "fp32":  # the scores' error alone (the int8 reference's fp32 attention otherwise)
        return (p @ v) / denom
    if pv == "fp8":
        p8 = (p * FP8_MAX).to(torch.float8_e4m3fn).to(torch.float32) / FP8_MAX
        sv = v.abs().amax(dim=-2, keepdim=True).clamp(min=1e-30) / FP8_MAX  # per channel (over keys)
        v8 = (v / sv).to(torch.float8_e4m3fn).to(torch.float32) * sv
        return (p8 @ v8) / denom
    return (bf16(p) @ v) / denom


def attention_bf16(q, k, v):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return bf16(_softmax_pv(s, v))


def quantize_blocks(x, block):
    """x [heads, tokens, d] -> (int values as float32, scale [heads, tokens, 1]): one scale per block
    of `block` rows of each head, s = absmax / 127 (a block of zeros gets s = 1)."""
    h, n, d = x.shape
    pad = (-n) % block
    xp = torch.nn.functional.pad(x, (0, 0, 0, pad))
    amax = xp.reshape(h, -1, block * d).abs().amax(dim=-1, keepdim=True)
    s = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
    s_rows = s.repeat_interleave(block, dim=1)[:, :n].reshape(h, n, 1)
    return torch.clamp(torch.round(x / s_rows), -127, 127), s_rows


def int8_scores(q, k, smooth=True, q_block=Q_BLOCK, k_block=K_BLOCK):
    """The scores as the int8 kernel forms them: (Q8 K8^T) s_q s_k, the softmax scale in Q."""
    if smooth:
        k = k - k.mean(dim=-2, keepdim=True)
    q8, sq = quantize_blocks(q / math.sqrt(q.shape[-1]), q_block)
    k8, sk = quantize_blocks(k, k_block)
    # integer products summed exactly: |sum| <= 127^2 d < 2^24 for d <= 1040, exact in fp32 (a test
    # checks it against int64)
    return (q8 @ k8.transpose(-1, -2)) * sq * sk.transpose(-1, -2)


def attention_int8qk(q, k, v, smooth=True, pv="bf16", q_block=Q_BLOCK, k_block=K_BLOCK):
    """pv: "bf16" (the design: P rounded, the output bf16), "fp8" (the variant) or "fp32" (no
    rounding but the scores': what int8 QK^T alone adds to an fp32 attention)."""
    o = _softmax_pv(int8_scores(q, k, smooth, q_block, k_block), v, pv)
    return o if pv == "fp32" else bf16(o)


# ---- the portable kernel's own softmax (attention.hip's direct tiling, issue 49) ------------------
KEY_TILE = 32           # keys per tile of the direct tiling
WAVE_QUERIES = 16       # queries per wave (a lane's rescale branch is the wave's)
LAZY_RESCALE_LOG2 = 0.0  # attention.hip kLazyRescaleLog2


def bf16_half_up(x):
    """x rounded to bf16 as the AMD kernel rounds P (attention_device.h probability_bf16): the bits
    plus 0x8000, the high half kept: to nearest, ties away from zero (x >= 0 here)."""
    b = x.contiguous().view(torch.int32)
    return ((b + 0x8000) & ~0xFFFF).view(torch.float32)


def attention_online(q, k, v, lazy=True, rounding="half-up", stats=None, sum_rounded=False,
                     threshold=LAZY_RESCALE_LOG2, fma=True):
    """The direct tiling's arithmetic: scores in fp32 scaled by scale*log2(e), key tiles of 32 in
    order, a running base per query row; with `lazy` the base is kept while the row's maximum grew
    by at most LAZY_RESCALE_LOG2 (else moved to the maximum, the output and sum multiplied by
    2^(old - new)); P = 2^(x - base) rounded to bf16 ("half-up" as the AMD kernel does, "even" as
    to_bf16 does) times V (bf16 values) summed in fp32, exp2's argument score*scale*log2(e) - base
    rounded once (`fma`, the kernel since issue 49) or the product and the difference rounded each
    (the kernel before); the sum of the unrounded P; output / sum,
    rounded to bf16. `stats` (a dict) receives the fraction of (wave of 16 queries, key tile) pairs
    whose branch multiplies the output (any of its rows took a new base), the first tile included."""
    rnd = bf16_half_up if rounding == "half-up" else bf16
    h, nq, d = q.shape
    c = torch.tensor(1.0 / math.sqrt(d) * 1.4426950408889634, dtype=torch.float32)
    raw = q @ k.transpose(-1, -2)
    x = raw * c  # fp32 products: the kernel before issue 49 kept these, and its max is theirs
    m = torch.full((h, nq, 1), -math.inf, device=q.device)
    l = torch.zeros((h, nq, 1), device=q.device)
    o = torch.zeros((h, nq, v.shape[-1]), device=q.device)
    taken = total = 0
    pad = (-nq) % WAVE_QUERIES
    for k0 in range(0, k.shape[1], KEY_TILE):
        xt = x[..., k0:k0 + KEY_TILE]
        m_new = torch.maximum(m, xt.amax(dim=-1, keepdim=True))  # = the raw max times c (monotone)
        keep = (m_new - m <= threshold) if lazy else torch.zeros_like(m, dtype=torch.bool)
        base = torch.where(keep, m, m_new)
        alpha = torch.where(keep, torch.ones_like(m), torch.exp2(m - base))
        m = base
        if fma:  # score * c - base rounded once (the kernel's v_fma_f32), then exp2
            arg = (raw[..., k0:k0 + KEY_TILE].double() * c.double() - base.double()).float()
        else:    # rounded product, then the subtraction rounded
            arg = xt - base
        p = torch.exp2(arg)
        pr = rnd(p)
        l = l * alpha + (pr if sum_rounded else p).sum(dim=-1, keepdim=True)
        o = o * alpha + pr @ v[:, k0:k0 + KEY_TILE]
        moved = torch.nn.functional.pad((~keep).float().squeeze(-1), (0, pad)).reshape(h, -1, WAVE_QUERIES)
        taken += (moved.amax(dim=-1) > 0).sum().item()
        total += moved.shape[0] * moved.shape[1]
    if stats is not None:
        stats["rescaled"] = stats.get("rescaled", 0) + taken
        stats["tiles"] = stats.get("tiles", 0) + total
    return bf16(o / l)


METHODS = {
    "bf16": attention_bf16,
    # the portable kernel before issue 49's change (online, every tile rescaled, P to nearest even)
    "bf16-online": lambda q, k, v: attention_online(q, k, v, lazy=False, rounding="even", fma=False),
    # and after it: P rounded by one add, the output rescaled only past a growth of 2^8
    "bf16-lazy": attention_online,
    # FlashAttention-4's rule, measured and not taken: the base kept while the maximum grew by <= 2^8
    "bf16-stale8": lambda q, k, v: attention_online(q, k, v, threshold=8.0),
    "int8qk": attention_int8qk,
    "int8qk-raw": lambda q, k, v: attention_int8qk(q, k, v, smooth=False),
    "int8qk-fp8pv": lambda q, k, v: attention_int8qk(q, k, v, pv="fp8"),
}


def distance(a, ref):
    a, ref = a.double().flatten(), ref.double().flatten()
    rel = ((a - ref).norm() / ref.norm().clamp(min=1e-300)).item()
    cos = (torch.dot(a, ref) / (a.norm() * ref.norm()).clamp(min=1e-300)).item()
    return dict(rel_l2=rel, cos=cos, max_abs=(a - ref).abs().max().item())


def compare(q, k, v, methods=METHODS, query_chunk=1024, stats=None):
    """Distances of every method to the fp32 attention of the same bf16 activations. Queries are taken
    in chunks of whole Q blocks (the smoothing's mean and K's blocks are over all keys, as the kernel
    sees them; a chunk that split a Q block would change its scale)."""
    query_chunk = max(Q_BLOCK, query_chunk // Q_BLOCK * Q_BLOCK)
    q, k, v = bf16(q), bf16(k), bf16(v)
    outs = {name: [] for name in ["fp32", *methods]}
    for i in range(0, q.shape[1], query_chunk):
        qc = q[:, i:i + query_chunk]
        outs["fp32"].append(attention_fp32(qc, k, v))
        for name, fn in methods.items():
            outs[name].append(attention_online(qc, k, v, stats=stats) if fn is attention_online and stats is not None
                              else fn(qc, k, v))
    ref = torch.cat(outs["fp32"], dim=1)
    return {name: distance(torch.cat(outs[name], dim=1), ref) for name in methods}


# ---- activations ------------------------------------------------------------------------------
def synthetic(size=1024, text_tokens=77, heads=24, head_dim=128, qk_gain=2.0, k_offset=3.0, seed=0,
              device="cpu"):
    """q, k, v [heads, tokens, d] with the DiT's structure (module docstring)."""
    R = moss_ref()
    g = torch.Generator().manual_seed(seed)
    grid = size // 16
    n = grid * grid + text_tokens
    chan = torch.exp(0.5 * torch.randn(heads, 1, head_dim, generator=g))  # lognormal channel scales

    def normed(x, gain):
        w = gain * torch.exp(0.3 * torch.randn(heads, 1, head_dim, generator=g))
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

    q = normed(torch.randn(heads, n, head_dim, generator=g) * chan, math.sqrt(qk_gain))
    offset = k_offset * torch.randn(heads, 1, head_dim, generator=g)
    k = normed(torch.randn(heads, n, head_dim, generator=g) * chan + offset, math.sqrt(qk_gain))
    v = torch.randn(heads, n, head_dim, generator=g)
    sin, cos = R.rope_table(R.positions(text_tokens, grid, grid), R.rope_bands(head_dim, 10000.0))
    rot = lambda x: R.rotate(x.transpose(0, 1), sin, cos).transpose(0, 1)  # moss_ref wants [n, h, d]
    return rot(q).to(device), rot(k).to(device), v.to(device)


def capture(model_dir, blocks, size=1024, text_tokens=77, seed=0, device="cpu"):
    """{block: (q, k, v)} from moss_ref's DiT with the folder's weights (fp32), one forward pass on a
    random latent and random text states at timestep 500."""
    R = moss_ref()
    sys.path.insert(0, HERE)
    from mossbench import torch_models as TM  # noqa: E402
    state = {k: v.float() for k, v in TM.load_dit_state(model_dir, device).items()}
    dit = TM.build_moss_ref_dit(R, model_dir, state).to(device)
    cfg = TM.dit_config(model_dir)
    g = torch.Generator().manual_seed(seed)
    latent = torch.randn(cfg.get("latent_channels", 128), size // 16, size // 16, generator=g).to(device)
    text = torch.randn(text_tokens, cfg.get("text_dim", 4096), generator=g).to(device)
    taken, calls = {}, [0]
    inner = R.attention

    def wrapped(q, k, v, heads, sin, cos):
        i = calls[0]
        calls[0] += 1
        main = i - 2  # the text embedder's two blocks run first
        if main in blocks:
            n, d = q.shape
            qh, kh = (R.rotate(t.view(n, heads, d // heads), sin, cos) for t in (q, k))
            taken[main] = tuple(t.transpose(0, 1).float() for t in (qh, kh, v.view(n, heads, d // heads)))
        return inner(q, k, v, heads, sin, cos)

    R.attention = wrapped
    try:
        with torch.no_grad():
            dit(latent, text, 500.0)
    finally:
        R.attention = inner
    return taken


def table_lines(results):
    out = [f"{'activations':34s} {'method':14s} {'rel L2':>10s} {'cosine':>12s} {'max |d|':>10s} {'rel / bf16':>10s}"]
    for label, res in results:
        base = res["bf16"]["rel_l2"]
        for name, d in res.items():
            out.append(f"{label:34s} {name:14s} {d['rel_l2']:10.3e} {d['cos']:12.8f} {d['max_abs']:10.3e} "
                       f"{d['rel_l2'] / base:10.2f}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--text-tokens", type=int, default=77)
    ap.add_argument("--heads", type=int, default=24)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--qk-gain", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    ap.add_argument("--k-offset", type=float, default=3.0)
    ap.add_argument("--capture", metavar="MODEL_DIR")
    ap.add_argument("--blocks", default="0,20,41")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    results, rescaled = [], []
    if a.capture:
        blocks = [int(b) for b in a.blocks.split(",")]
        acts = [(f"model block {b} ({a.size}px)", qkv) for b, qkv in
                sorted(capture(a.capture, blocks, a.size, a.text_tokens, device=a.device).items())]
    else:
        acts = ((f"synthetic {a.size}px gain {gain} off {a.k_offset}",
                 synthetic(a.size, a.text_tokens, a.heads, a.head_dim, gain, a.k_offset, device=a.device))
                for gain in a.qk_gain)
    for label, (q, k, v) in acts:
        stats = {}
        results.append((label, compare(q, k, v, stats=stats)))
        rescaled.append((label, stats["rescaled"] / stats["tiles"]))
    for line in table_lines(results):
        print(line)
    for label, frac in rescaled:
        print(f"{label:34s} bf16-lazy: {100 * frac:.2f}% of (wave of {WAVE_QUERIES} queries, {KEY_TILE}-key tile) "
              f"pairs rescale the output (every tile did before)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump([dict(activations=label, rescaled_fraction=frac, **res)
                       for (label, res), (_, frac) in zip(results, rescaled)], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
