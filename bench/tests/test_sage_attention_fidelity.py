"""bench/sage_attention_fidelity.py on CPU-sized shapes: the int8 QK^T attention (SageAttention's
idea, issue 49) is built as its formulas say, and the fidelity table orders the methods as their
arithmetic must. Needs torch (skipped without). A few seconds."""
import math
import os
import sys

import pytest

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
import sage_attention_fidelity as S  # noqa: E402

TINY = os.path.join(ROOT, "hip", "tests", "data", "tiny-moss")


@pytest.mark.parametrize("tokens,block", [(40, 32), (64, 16), (7, 1), (5, 128)])
def test_block_quantization(tokens, block):
    g = torch.Generator().manual_seed(tokens + block)
    x = torch.randn(3, tokens, 16, generator=g) * torch.exp(torch.randn(3, tokens, 1, generator=g))
    x[1, :min(block, tokens)] = 0.0  # a block of zeros
    q, s = S.quantize_blocks(x, block)
    assert q.shape == x.shape and s.shape == (3, tokens, 1)
    assert torch.equal(q, q.round()) and q.abs().max() <= 127
    assert torch.equal(q[1, :min(block, tokens)], torch.zeros_like(q[1, :min(block, tokens)]))
    for h in range(3):
        for b in range(0, tokens, block):
            sb = s[h, b:b + block]
            assert torch.all(sb == sb[0])  # one scale a block
            amax = x[h, b:b + block].abs().max()
            # the block's largest value lands on +-127; every value within half a step
            assert sb[0].item() == (amax / 127.0).item() or amax == 0
            assert ((q[h, b:b + block] * sb - x[h, b:b + block]).abs() <= sb * 0.5 * (1 + 1e-6)).all()


def test_int8_scores_are_the_exact_integer_products_scaled():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(2, 50, 128, generator=g)
    k = torch.randn(2, 70, 128, generator=g) + 2.0
    s = S.int8_scores(q, k, smooth=True, q_block=16, k_block=32)
    q8, sq = S.quantize_blocks(q / math.sqrt(128), 16)
    k8, sk = S.quantize_blocks(k - k.mean(dim=1, keepdim=True), 32)
    exact = (q8.to(torch.int64) @ k8.to(torch.int64).transpose(1, 2)).double()
    assert torch.equal((q8 @ k8.transpose(1, 2)).double(), exact)  # fp32 sums of integers stay exact
    assert torch.allclose(s.double(), exact * sq.double() * sk.double().transpose(1, 2), rtol=1e-6, atol=0)
    # the worst case the kernel can meet at head dim 1040 still sums exactly in fp32
    worst = torch.full((1, 1, 1040), 127.0)
    assert (worst @ worst.transpose(1, 2)).item() == 127 * 127 * 1040


def test_smoothing_removes_a_token_shared_key_offset():
    """Scores that differ only by a per-query constant give the same softmax; the offset shared by
    the keys then costs no int8 resolution."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 64, 128, generator=g)
    k = torch.randn(2, 96, 128, generator=g) + 25.0 * torch.randn(2, 1, 128, generator=g)
    exact = (q.double() @ k.double().transpose(1, 2)) / math.sqrt(128)
    centred = lambda s: s - s.mean(dim=-1, keepdim=True)
    err = lambda smooth: (centred(S.int8_scores(q, k, smooth).double()) - centred(exact)).abs().max().item()
    assert err(True) * 5 < err(False)
    # and the probabilities agree with the fp32 ones far better
    p = torch.softmax(exact, -1)
    perr = lambda smooth: (torch.softmax(S.int8_scores(q, k, smooth).double(), -1) - p).abs().max().item()
    assert perr(True) < perr(False)


def test_fp32_method_is_the_reference_and_chunks_do_not_matter():
    q, k, v = S.synthetic(size=256, text_tokens=16, heads=2, head_dim=64, seed=1)
    assert q.shape == k.shape == v.shape == (2, 256 + 16, 64)
    whole = S.compare(q, k, v, query_chunk=10_000)
    parts = S.compare(q, k, v, query_chunk=S.Q_BLOCK + 7)  # taken as whole Q blocks: 3 chunks
    for name in S.METHODS:
        assert whole[name]["rel_l2"] == pytest.approx(parts[name]["rel_l2"], rel=1e-5, abs=1e-9)
    same = S.compare(q, k, v, methods={"fp32": S.attention_fp32})
    assert same["fp32"]["rel_l2"] == 0 and same["fp32"]["cos"] == pytest.approx(1.0)


@pytest.mark.parametrize("gain", [1.0, 4.0])
def test_the_methods_order_as_their_arithmetic(gain):
    q, k, v = S.synthetic(size=128, text_tokens=16, heads=2, head_dim=128, qk_gain=gain, seed=2)
    r = S.compare(q, k, v)
    # bf16 rounds Q, K, V and P at 2^-9 relative: its error is of that order
    assert 2e-4 < r["bf16"]["rel_l2"] < 6e-3
    # int8 has 127 levels a block: coarser than bf16, still a close attention
    assert r["bf16"]["rel_l2"] < r["int8qk"]["rel_l2"] < 0.1 and r["int8qk"]["cos"] > 0.99
    # fp8 P.V adds its own rounding (3 mantissa bits) to the int8 scores'; fp32 P.V leaves the scores' alone
    assert r["int8qk-fp8pv"]["rel_l2"] > r["int8qk"]["rel_l2"]
    alone = S.compare(q, k, v, {"fp32pv": lambda q, k, v: S.attention_int8qk(q, k, v, pv="fp32")})["fp32pv"]
    assert 0 < alone["rel_l2"] < r["int8qk"]["rel_l2"]
    lines = S.table_lines([("synthetic", r)])
    assert len(lines) == 1 + len(S.METHODS) and lines[1].split()[1] == "bf16"


@pytest.mark.skipif(not os.path.isdir(TINY), reason="no tiny model")
def test_capture_takes_the_reference_dits_own_activations():
    taken = S.capture(TINY, [0, 3], size=64, text_tokens=8)
    assert sorted(taken) == [0, 3]
    for q, k, v in taken.values():
        assert q.shape == k.shape == v.shape == (4, 16 + 8, 32)
        assert torch.isfinite(q).all() and torch.isfinite(k).all()
    r = S.compare(*taken[0])
    assert r["bf16"]["rel_l2"] < r["int8qk"]["rel_l2"] < 0.2


def test_cli_prints_the_table(capsys):
    assert S.main(["--size", "64", "--text-tokens", "8", "--heads", "2", "--head-dim", "64", "--qk-gain", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["activations", "method"] and len(out) == 1 + len(S.METHODS) + 1
    assert "bf16-lazy:" in out[-1] and "pairs rescale the output" in out[-1]


def test_half_up_rounding_is_to_nearest_with_ties_up():
    """P's rounding in the AMD kernel (attention_device.h probability_bf16: the bits plus 0x8000, the
    high half) is torch's round-to-nearest-even bf16 except on exact ties, which go up; within half
    an ulp everywhere, on every binade of probabilities and on 0."""
    g = torch.Generator().manual_seed(9)
    x = torch.exp2(-30 * torch.rand(200_000, generator=g) + 8)  # probabilities up to 2^8, many binades
    x = torch.cat([x, torch.zeros(1), torch.tensor([1.0, 2.0 ** -20, 255.9])])
    up, even = S.bf16_half_up(x), S.bf16(x)
    bits = x.view(torch.int32)
    tie = (bits & 0xFFFF) == 0x8000
    assert torch.equal(up[~tie], even[~tie])
    ties = torch.tensor([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8])  # a tie below an even and an odd bf16
    assert torch.equal(S.bf16_half_up(ties), torch.tensor([1.0 + 2.0 ** -7, 1.0 + 4 * 2.0 ** -8]))
    ulp = torch.exp2(torch.floor(torch.log2(x.clamp(min=1e-38))) - 7)
    assert ((up - x).abs() <= ulp / 2).all()


@pytest.mark.parametrize("size,gain", [(128, 1.0), (128, 4.0), (256, 2.0)])
def test_kernel_softmax_skips_only_exact_rescales(size, gain):
    """The direct tiling's softmax (attention_online) as the kernel runs it: skipping the output's
    rescale where no row's maximum grew multiplies by exactly 1, so the output is the same bits as
    rescaling every tile; the skip is taken for most key tiles once the maximum has settled, less often
    with fewer keys; and its error against fp32 is no worse than the bf16 attention's. A positive
    threshold (a stale base, FlashAttention-4's rule) is exact in real arithmetic but measurably less
    faithful in bf16: why the kernel's is 0."""
    q, k, v = S.synthetic(size=size, text_tokens=16, heads=2, head_dim=128, qk_gain=gain, seed=4)
    q, k, v = S.bf16(q), S.bf16(k), S.bf16(v)
    every = S.attention_online(q, k, v, lazy=False, rounding="even", fma=False)
    stats = {}
    skipped = S.attention_online(q, k, v, lazy=True, rounding="even", stats=stats, fma=False)
    assert torch.equal(every, skipped)
    frac = stats["rescaled"] / stats["tiles"]
    assert 0 < frac <= 1
    ref = S.attention_fp32(q, k, v)
    err = lambda o: S.distance(o, ref)["rel_l2"]
    assert err(S.attention_online(q, k, v)) <= 1.02 * err(S.attention_bf16(q, k, v))
    assert err(S.attention_online(q, k, v, threshold=8.0)) > err(S.attention_online(q, k, v))
    if size == 256:  # more keys (9 tiles): a row's maximum settles, fewer tiles rescale than with 3
        small = {}
        S.attention_online(q, k[:, :96], v[:, :96], stats=small)
        assert frac < small["rescaled"] / small["tiles"] and frac < 1
