"""bench/int8_fidelity.py's sage rows (bench/h200_int8.sh PARTS=sage, issue 49): the DiT-level
attention is sage_attention_fidelity.py's op-level function on the DiT's own q, k and v, swapped in
the main blocks only; the rows are computed on the tiny model and order as their arithmetic must;
the table's bar and verdicts on distances set by construction. CPU, a few seconds. Needs torch
and safetensors (skipped without)."""
import json
import math
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors.torch import save_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "hip", "tests", "data", "reference"))
import int8_fidelity as F  # noqa: E402
import int8_convrot_ref as ref  # noqa: E402
import moss_ref as R  # noqa: E402
import sage_attention_fidelity as SA  # noqa: E402
from mossbench import torch_models as TM  # noqa: E402

TINY = os.path.join(ROOT, "hip", "tests", "data", "tiny-moss")
needs_tiny = pytest.mark.skipif(not os.path.isdir(TINY), reason="no tiny model")


def qkv_and_rope(grid, text, heads, hd, seed):
    """q, k, v [n, heads * hd] as a block hands them to moss_ref.attention (k with a token-shared
    offset, what the smoothing removes), and the rope tables of that grid and text."""
    g = torch.Generator().manual_seed(seed)
    n, d = grid * grid + text, heads * hd
    q = torch.randn(n, d, generator=g) * 2
    k = torch.randn(n, d, generator=g) + 3 * torch.randn(1, d, generator=g)
    v = torch.randn(n, d, generator=g)
    sin, cos = R.rope_table(R.positions(text, grid, grid), R.rope_bands(hd, 10000.0))
    return q, k, v, sin, cos


@pytest.mark.parametrize("att", sorted(F.ATTENTIONS))
def test_dit_attention_is_the_op_level_function(att):
    """On the same inputs the DiT-level attention is the op-level method: q and k rotated as
    moss_ref rotates them, q, k, v rounded to bf16, heads first; bit for bit in one chunk, and
    chunks of whole Q blocks move the bf16 output by at most its rounding."""
    heads, hd = 4, 32
    q, k, v, sin, cos = qkv_and_rope(17, 11, heads, hd, seed=7)  # 300 tokens: three Q blocks, a partial one
    n = q.shape[0]
    method = SA.METHODS[F.ATTENTIONS[att]]
    first = lambda t: SA.bf16(t.transpose(0, 1))
    want = method(first(R.rotate(q.view(n, heads, hd), sin, cos)), first(R.rotate(k.view(n, heads, hd), sin, cos)),
                  first(v.view(n, heads, hd)))
    whole = F.dit_attention(method, R.rotate, chunk=1024)(q, k, v, heads, sin, cos)
    assert whole.shape == (n, heads * hd) and whole.dtype == torch.float32
    assert torch.equal(whole, want.transpose(0, 1).reshape(n, heads * hd))
    chunked = F.dit_attention(method, R.rotate, chunk=200)(q, k, v, heads, sin, cos)  # 200 -> one Q block (128)
    assert torch.allclose(chunked, whole, rtol=2 ** -7, atol=1e-6)
    # and it is an attention: near moss_ref's fp32 one, not equal to it
    exact = R.attention(q, k, v, heads, sin, cos)
    rel = ((whole - exact).norm() / exact.norm()).item()
    assert 0 < rel < {"bf16att": 1e-2, "i8qk": 3e-2, "i8fp8": 6e-2}[att], rel
    # the int8 QK^T method on the DiT's tensors really quantizes Q and K (its scores are not fp32's)
    if att != "bf16att":
        bf = F.dit_attention(SA.METHODS["bf16"], R.rotate)(q, k, v, heads, sin, cos)
        assert not torch.equal(whole, bf)


@needs_tiny
def test_the_swap_is_the_main_blocks_only():
    """The main blocks call the swapped attention (one call each, every token), the text embedder's
    blocks keep moss_ref's: its output is bit-identical, and moss_ref.attention is restored."""
    state = {k: v.float() for k, v in TM.load_dit_state(TINY, "cpu").items()}
    cfg = TM.dit_config(TINY)
    g = torch.Generator().manual_seed(11)
    latent, text = torch.randn(128, 3, 2, generator=g), torch.randn(5, cfg["text_dim"], generator=g)
    inner, seen = R.attention, []

    def recording(q, k, v, heads, sin, cos):
        seen.append(q.shape[0])
        return inner(q, k, v, heads, sin, cos)
    dit = TM.build_moss_ref_dit(R, TINY, state)
    swapped = F.attention_swapped_class()
    for i, block in enumerate(dit.layers):
        dit.layers[i] = swapped(block, recording)
    plain = TM.build_moss_ref_dit(R, TINY, state)
    trace, trace0 = {}, {}
    with torch.no_grad():
        v = dit(latent, text, 500.0, skip_layers=(1,), trace=trace)
        v0 = plain(latent, text, 500.0, skip_layers=(1,), trace=trace0)
    assert seen == [3 * 2 + 5] * (cfg["num_layers"] - 1) and R.attention is inner
    assert torch.equal(v, v0)  # the recording attention is moss_ref's: nothing else changed
    bf16 = F.with_attention(TM.build_moss_ref_dit(R, TINY, state), "bf16att")
    trace1 = {}
    with torch.no_grad():
        v1 = bf16(latent, text, 500.0, skip_layers=(1,), trace=trace1)
    assert torch.equal(trace1["text_embedded"], trace0["text_embedded"])  # the text blocks untouched
    assert not torch.equal(trace1["block0"], trace0["block0"])              # the main blocks not
    assert 0 < ((v1 - v0).norm() / v0.norm()).item() < 1e-2 and R.attention is inner


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """The sage rows (and the optional INT8 reference with the bf16 attention) on the tiny model:
    one size, two prompts, two steps, cfg 3, through the `sage` command (its file and table)."""
    if not os.path.isdir(TINY):
        pytest.skip("no tiny model")
    d = tmp_path_factory.mktemp("sage")
    cfg = TM.dit_config(TINY)
    g = torch.Generator().manual_seed(49)
    states = {}
    for name, n in (("p0", 7), ("p1", 9), ("neg", 4)):
        states[name + ".ids"] = torch.arange(n, dtype=torch.int32)
        states[name + ".hidden"] = torch.randn(n, cfg["text_dim"], generator=g)
    save_file(states, str(d / "states.safetensors"), metadata={"prompts": json.dumps(["a", "b"]), "negative": ""})
    state = TM.load_dit_state(TINY, "cpu")
    save_file({k: v.contiguous() for k, v in ref.quantize_dit(state, cfg["num_layers"], 64).items()},
              str(d / "int8.safetensors"))
    out = str(d / "sage.safetensors")
    rows = ["f32-bf16att", "f32-i8qk", "i8-i8qk", "f32-i8fp8", "i8-i8fp8", "i8-bf16att"]
    args = ["sage", "--model", TINY, "--int8", str(d / "int8.safetensors"), "--states", str(d / "states.safetensors"),
            "--out", out, "--sizes", "32", "--steps", "2", "--skip", "1", "--rows", *rows]
    assert F.main(args) == 0
    refs, names = F.load_refs(out)
    return refs, names, str(d / "int8.safetensors")


def test_every_sage_row_is_computed_and_orders_as_its_arithmetic(rows):
    refs, names, _ = rows
    assert names == ["32-p0", "32-p1"]
    want_rows = set(F.SAGE_ROWS) | {"i8-bf16att"}
    assert set(refs) == {f"{n}.{r}" for n in names for r in want_rows}
    d = lambda n, a, b: F.distance(refs[f"{n}.{a}"], refs[f"{n}.{b}"])["rel_l2"]
    for n in names:
        # (d) the bf16 attention alone is a small part of bf16 PyTorch's distance (every op rounds there)
        assert 0 < d(n, "f32-bf16att", "fp32") < 0.2 * d(n, "bf16", "fp32")
        # (a) int8 QK^T adds to the bf16 attention's error, (c) fp8 P.V adds to that
        assert d(n, "f32-bf16att", "fp32") < d(n, "f32-i8qk", "fp32") < d(n, "f32-i8fp8", "fp32") < 2e-2
        # (b) the INT8 rows run the INT8 layers: about the format's own distance from fp32, and moved
        # off the INT8 reference by the attention
        for att in F.ATTENTIONS:
            assert 0.5 * d(n, "int8ref", "fp32") < d(n, f"i8-{att}", "fp32") < 2 * d(n, "int8ref", "fp32")
            assert 0 < d(n, f"i8-{att}", "int8ref")
            assert not torch.equal(refs[f"{n}.i8-{att}"], refs[f"{n}.f32-{att}"])


def test_the_sage_table_of_the_tiny_rows(rows):
    refs, names, _ = rows
    lines, verdicts = F.sage_table(refs, names)
    assert sum(line.split()[:2] == [n, att] for line in lines for n in names for att in ("i8qk", "i8fp8")) == 4
    row = next(line for line in lines if line.startswith("32-p1     i8qk"))
    cols = [float(x) for x in row.split()[2:12]]
    d = lambda a, b: F.distance(refs[f"32-p1.{a}"], refs[f"32-p1.{b}"])["rel_l2"]
    p, f = d("bf16", "fp32"), d("int8ref", "fp32")
    assert cols == pytest.approx([p, f, d("bf16", "int8ref") / math.hypot(p, f), d("f32-bf16att", "fp32"),
                                  d("f32-i8qk", "fp32"), 0.5 * p, d("i8-i8qk", "fp32"), math.hypot(f, 0.5 * p),
                                  d("i8-i8qk", "int8ref"), d("i8-bf16att", "fp32")], rel=2e-3)
    assert set(verdicts) == {"i8qk", "i8fp8"}


def synthetic_refs(cases):
    """refs whose distances are what `cases` says: {name: {row: distance to fp32}}, each row fp32 plus
    its own random direction (independent directions in 20 000 dimensions: orthogonal to ~1%)."""
    g = torch.Generator().manual_seed(1)
    dim = 20_000
    unit = lambda: (lambda u: u / u.norm())(torch.randn(dim, generator=g, dtype=torch.float64))
    refs = {}
    for name, dist in cases.items():
        base = unit()
        refs[f"{name}.fp32"] = base
        for row, r in dist.items():
            refs[f"{name}.{row}"] = base + r * unit()
    return refs


def case(p=0.032, f=0.038, dd=0.004, a=0.008, b=None, fp8=0.012):
    """One case's distances to fp32; b: the INT8 reference with the int8 attention (default as
    independent errors add: sqrt(f^2 + a^2))."""
    return {"bf16": p, "int8ref": f, "f32-bf16att": dd, "f32-i8qk": a, "i8-i8qk": b or math.hypot(f, a),
            "f32-i8fp8": fp8, "i8-i8fp8": math.hypot(f, fp8)}


NAMES = ["512-p0", "512-p1", "1024-p0", "1024-p1"]


def test_the_sage_bar_decides_as_written():
    """(a) at most 0.5x bf16 PyTorch's distance to fp32; (b) at most sqrt(f^2 + (0.5 p)^2), judged
    only where that room is at least 3x the format error's spread over a size's prompts."""
    good = {n: case(f=0.038 * (1 + 0.005 * i)) for i, n in enumerate(NAMES)}
    lines, v = F.sage_table(synthetic_refs(good), NAMES)
    assert v == {"i8qk": True, "i8fp8": True}, "\n".join(lines)
    assert lines[-2].endswith(": ADMISSIBLE") and "the bar decides" in lines[-4] and "the bar decides" in lines[-3]
    # (a) just past its bar in one case (0.5 x 0.032 = 0.016): not admissible, whatever (b) says
    lines, v = F.sage_table(synthetic_refs(dict(good, **{"1024-p1": case(a=0.0165)})), NAMES)
    assert v == {"i8qk": False, "i8fp8": True}
    assert "1024-p1   i8qk" in next(line for line in lines if "OUTSIDE (a)" in line)
    assert "(a) within in 3 of 4 cases" in lines[-2] and lines[-2].endswith("NOT ADMISSIBLE")
    # (b) past sqrt(f^2 + (0.5 p)^2) = 0.0412 though (a) is small: the INT8 layers amplify it
    lines, v = F.sage_table(synthetic_refs(dict(good, **{"512-p1": case(fp8=0.004, b=0.0425)})), NAMES)
    assert v == {"i8qk": False, "i8fp8": True} and any(line.endswith("OUTSIDE (b)") for line in lines)
    # the format's error spreading 10% over a size's prompts: room 8.6% < 3x: no verdict from (b) ...
    noisy = dict(good, **{"512-p1": case(f=0.0418)})
    lines, v = F.sage_table(synthetic_refs(noisy), NAMES)
    assert v == {"i8qk": None, "i8fp8": None} and "size 512" in lines[-4] and "WITHIN CHANCE" in lines[-4]
    assert lines[-2].endswith("NO VERDICT (bar (b) within chance)")
    # ... but (a) outside still decides
    lines, v = F.sage_table(synthetic_refs(dict(noisy, **{"512-p0": case(a=0.02)})), NAMES)
    assert v["i8qk"] is False
    # the bars and the premise printed as set
    row = next(line for line in lines if line.startswith("1024-p0   i8qk"))
    cols = row.split()[2:12]
    assert cols[9] == "-"  # no INT8 reference with the bf16 attention in these rows
    cols = [float(x) for x in cols[:9]]
    assert cols[4] == pytest.approx(0.008, rel=1e-2) and cols[5] == pytest.approx(0.016, rel=1e-3)
    assert cols[7] == pytest.approx(math.hypot(0.038 * 1.01, 0.016), rel=1e-2)
    assert cols[2] == pytest.approx(1.0, abs=1e-2)  # quad: independent errors
    # without the fp8 rows the table judges int8 QK^T alone
    fewer = {n: {k: x for k, x in c.items() if "fp8" not in k} for n, c in good.items()}
    assert F.sage_table(synthetic_refs(fewer), NAMES)[1] == {"i8qk": True}


def test_a_partial_run_gives_the_table_of_its_rows():
    """A run stopped at its time limit (sage saves after every row): the table of what it has; (a)
    alone can refuse, never admit; without the bar's own rows, no table."""
    good = {n: case() for n in NAMES}
    no_b = {n: {k: x for k, x in c.items() if not k.startswith("i8-") and "fp8" not in k} for n, c in good.items()}
    lines, v = F.sage_table(synthetic_refs(no_b), NAMES)
    assert v == {"i8qk": None} and lines[-1].endswith("(b) not computed: NO VERDICT ((b) not computed)")
    assert lines[-2] == "rows not computed (not asked for, or the run stopped): i8-i8qk f32-i8fp8 i8-i8fp8"
    assert all(line.endswith("within (a); (b) not computed") for line in lines[1:5])
    no_b["512-p0"]["f32-i8qk"] = 0.02
    assert F.sage_table(synthetic_refs(no_b), NAMES)[1] == {"i8qk": False}
    lines, v = F.sage_table(synthetic_refs({n: {"bf16": 0.03} for n in NAMES}), NAMES)
    assert v == {} and lines[0].startswith("no table: the bar's own rows are not all computed (missing: int8ref ")


def test_references_hands_over_every_finished_row(rows):
    """on_row gets the latents after each row: what `sage` saves, so a stopped run keeps them."""
    _, _, int8 = rows
    seen = []
    states = {"p0.ids": torch.arange(3, dtype=torch.int32),
              "p0.hidden": torch.randn(3, TM.dit_config(TINY)["text_dim"])}
    cases = F.make_cases(TINY, states, ["a"], [32], 1, 1.0, [], 42)
    F.references(TINY, int8, cases, rows=["fp32", "f32-i8qk"], log=lambda m: None,
                 on_row=lambda out: seen.append(sorted(out)))
    assert seen == [["32-p0.fp32"], ["32-p0.f32-i8qk", "32-p0.fp32"]]


def test_unknown_rows_are_refused_by_name():
    with pytest.raises(ValueError, match=r"unknown rows \['f32-int4'\]"):
        F.references(TINY, "unused.safetensors", [], rows=["fp32", "f32-int4"])  # before any file is read
    F.check_rows(F.ALL_ROWS)
    with pytest.raises(SystemExit):
        F.main(["sage", "--model", "m", "--int8", "i", "--states", "s", "--out", "o", "--rows", "f32-int4"])


def test_h200_int8_sage_part_needs_no_engine(tmp_path):
    """PARTS=sage runs no engine: an empty BIN_DIR passes its check (the model's is the first)."""
    script = os.path.join(ROOT, "bench", "h200_int8.sh")
    r = subprocess.run(["bash", script], capture_output=True, text=True)
    assert "PARTS=sage bash bench/h200_int8.sh" in r.stdout
    missing = tmp_path / "no-model"
    run = lambda parts: subprocess.run(["bash", script, str(tmp_path), str(tmp_path / "out"), str(missing)],
                                       capture_output=True, text=True,
                                       env=dict(os.environ, PARTS=parts, WORK=str(tmp_path / "work")))
    r = run("sage")
    assert r.returncode == 2 and f"FAIL {missing} has no transformer" in r.stdout
    r = run("sage fidelity")
    assert r.returncode == 2 and "has no moss-infer-hip / moss-check" in r.stdout
