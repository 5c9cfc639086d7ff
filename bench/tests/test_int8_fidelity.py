"""bench/int8_fidelity.py (the Python half of bench/h200_int8.sh PARTS=fidelity) and the bf16-
activation INT8 mode of bench/int8_convrot_ref.py, on the tiny model, CPU, seconds: the shared
inputs, the four PyTorch rows, the dumps (read back by moss-check official when a build is at hand),
the exact product and the activation memo, the parsers and the table's verdicts.
Needs torch and safetensors (skipped without)."""
import glob
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors.torch import load_file, save_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "hip", "tests", "data", "reference"))
import int8_fidelity as F  # noqa: E402
import int8_convrot_ref as ref  # noqa: E402
import moss_ref as R  # noqa: E402
from mossbench import torch_models as TM  # noqa: E402

TINY = os.path.join(ROOT, "hip", "tests", "data", "tiny-moss")
pytestmark = pytest.mark.skipif(not os.path.isdir(TINY), reason="no tiny model")
PROMPTS = ["a red bicycle", "an old lighthouse at dusk"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Random text states (a DiT-only comparison does not care where they come from), the cases
    of two sizes x two prompts, the tiny DiT's INT8 file (group 64), the references and both dumps."""
    d = tmp_path_factory.mktemp("int8fid")
    cfg = TM.dit_config(TINY)
    g = torch.Generator().manual_seed(49)
    states = {}
    for name, n in (("p0", 7), ("p1", 9), ("neg", 4)):
        states[name + ".ids"] = torch.arange(n, dtype=torch.int32)
        states[name + ".hidden"] = torch.randn(n, cfg["text_dim"], generator=g)
    cases = F.make_cases(TINY, states, PROMPTS, [32, 48], 3, 3.0, [1], 42)
    state = TM.load_dit_state(TINY, "cpu")
    int8 = str(d / "int8.safetensors")
    save_file({k: v.contiguous() for k, v in ref.quantize_dit(state, cfg["num_layers"], 64).items()}, int8)
    logged = []
    out, traces = F.references(TINY, int8, cases, "cpu", logged.append)
    names = [n for n, _, _ in cases]
    dumps = {row: str(d / f"dump-{row}.safetensors") for row in ("fp32", "int8ref")}
    for row, path in dumps.items():
        F.write_dump(path, cases, {n: out[f"{n}.{row}"] for n in names}, traces, row)
    return dict(dir=d, cases=cases, names=names, refs=out, traces=traces, int8=int8, dumps=dumps, logged=logged,
                state=state)


def test_every_row_gets_the_same_inputs(files):
    cases = files["cases"]
    assert [n for n, _, _ in cases] == ["32-p0", "32-p1", "48-p0", "48-p1"]
    shift = json.load(open(os.path.join(TINY, "scheduler", "scheduler_config.json")))["shift"]
    for name, settings, c in cases:
        size, i = int(name.split("-")[0]), int(name[-1])
        assert settings == {"prompt": PROMPTS[i], "negative": "", "seed": 42 + i, "cfg": 3.0, "skip_layers": [1],
                            "shift": shift, "steps": 3}
        # the pipeline's noise for the seed (torch.randn of [1, C, h, w] from a CPU generator)
        assert torch.equal(c["noise"], R.initial_noise(42 + i, (1, 128, size // 16, size // 16))[0])
        assert torch.equal(c["sigmas"], R.schedule(3, shift)) and c["sigmas"][-1] == 0
        assert torch.equal(c["timesteps"], c["sigmas"][:-1] * 1000)
        assert c["cond.hidden"].shape[0] == c["cond.ids"].shape[0] == (7 if i == 0 else 9)
        assert c["uncond.hidden"].shape[0] == 4
    # one set of text states serves both sizes
    assert cases[0][2]["cond.hidden"] is cases[2][2]["cond.hidden"]
    unguided = F.make_cases(TINY, {"p0.ids": cases[0][2]["cond.ids"], "p0.hidden": cases[0][2]["cond.hidden"]},
                            PROMPTS[:1], [32], 2, 1.0, [], 7)
    assert "uncond.hidden" not in unguided[0][2]


def test_the_four_rows(files):
    refs = files["refs"]
    assert sorted(refs) == sorted(f"{n}.{row}" for n in files["names"] for row in F.ROWS)
    fp32_dit = TM.build_moss_ref_dit(R, TINY, {k: v.float() for k, v in files["state"].items()})
    for name, settings, c in files["cases"]:
        d = {row: F.distance(refs[f"{name}.{row}"], refs[f"{name}.fp32"])["rel_l2"] for row in F.ROWS}
        assert d["fp32"] == 0
        # bf16 rounds at 2^-9, INT8 ConvRot at 1/127 of a row: all off fp32, none by much
        assert 1e-4 < d["bf16"] < 5e-2 and 1e-3 < d["int8ref"] < 0.2 and 1e-3 < d["bf16int8"] < 0.2
        # the jittered inputs move the INT8 reference (flips), by less than the quantization itself
        jit = F.distance(refs[f"{name}.int8jit"], refs[f"{name}.int8ref"])["rel_l2"]
        assert 0 < jit < d["int8ref"]
        # the bf16 INT8 row is neither the INT8 reference nor unquantized bf16
        b = F.distance(refs[f"{name}.bf16int8"], refs[f"{name}.int8ref"])["rel_l2"]
        assert 1e-4 < b < 0.1 and not torch.equal(refs[f"{name}.bf16int8"], refs[f"{name}.bf16"])
    # the fp32 row is moss_ref's fp32 DiT stepped as moss_ref.sample steps it
    name, settings, c = files["cases"][1]
    want = R.sample(fp32_dit, c["cond.hidden"], c["uncond.hidden"], c["noise"], 3, 3.0, settings["shift"], (1,))
    assert F.distance(refs[f"{name}.fp32"], want)["rel_l2"] < 1e-6
    trace = files["traces"][name]
    assert trace["step0.v_cond"].shape == c["noise"].shape and trace["step0.v_uncond"].shape == c["noise"].shape
    assert any(line.startswith("phase fp32:") for line in files["logged"])
    assert any(line.startswith("work:") for line in files["logged"])
    # the patched functions are restored
    assert ref.rotate_fast.__name__ == "rotate_fast" and ref.int_matmul.__name__ == "int_matmul"


def test_the_dumps_are_what_moss_check_reads(files):
    for row, path in files["dumps"].items():
        t = load_file(path)
        from safetensors import safe_open
        with safe_open(path, "pt") as f:
            md = f.metadata()
        assert json.loads(md["meta"])["format"] == "moss-official-dump/1"
        meta = json.loads(md["cases"])
        assert [m["name"] for m in meta] == files["names"]
        for n, (name, settings, c) in enumerate(files["cases"]):
            p = f"case{n}."
            assert meta[n]["captured"]["settings"] == settings and meta[n]["reference"] == "fp32"
            assert torch.equal(t[p + "final_latent"], files["refs"][f"{name}.{row}"])
            for k in ("cond.ids", "cond.hidden", "uncond.ids", "uncond.hidden", "noise", "sigmas", "timesteps",
                      "step0.latent_in", "step0.v_cond", "step0.v_uncond"):
                assert p + k in t, p + k
            assert t[p + "cond.ids"].dtype == torch.int32


def moss_check():
    found = [os.environ["MOSS_CHECK"]] if os.environ.get("MOSS_CHECK") else []
    found += sorted(glob.glob(os.path.join(ROOT, "build*", "moss-check")))
    return next((p for p in found if os.access(p, os.X_OK)), None)


def test_moss_check_runs_the_dumps_dit_only(files, tmp_path):
    """The engine on the host backend, DiT-only on the dumps: its bf16 folder against the fp32 dump
    (the host runs fp32: within moss-check's own fp32 limit, 1e-4), and a folder whose transformer
    is the INT8 file against the INT8 reference (the same format on the same inputs: closer to it
    than bf16 PyTorch is; a rounding flip can move a tiny case by ~1e-2, docs/int8_convrot.md
    section 8), every case parsed by the table's reader."""
    exe = moss_check()
    if exe is None:
        pytest.skip("no moss-check binary (set MOSS_CHECK or build into build*/)")
    folder = tmp_path / "int8-model"
    (folder / "transformer").mkdir(parents=True)
    for e in os.listdir(TINY):
        if e != "transformer":
            os.symlink(os.path.join(TINY, e), folder / e)
    os.symlink(os.path.join(TINY, "transformer", "config.json"), folder / "transformer" / "config.json")
    os.symlink(files["int8"], folder / "transformer" / "diffusion_pytorch_model.safetensors")
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    rels = {}
    for label, model, dump in (("bf16", TINY, files["dumps"]["fp32"]), ("int8", str(folder), files["dumps"]["int8ref"])):
        r = subprocess.run([exe, "official", "--backend", "host", "--model", model, "--dump", dump, "--stages", "dit"],
                           capture_output=True, text=True, timeout=120, env=env)
        rels[label] = F.engine_rels(files["names"], r.stdout)
        assert sorted(rels[label]) == sorted(files["names"]), r.stdout + r.stderr
    for name in files["names"]:
        assert rels["bf16"][name] < 1e-4
        bf16_to_int8 = F.distance(files["refs"][f"{name}.bf16"], files["refs"][f"{name}.int8ref"])["rel_l2"]
        assert rels["int8"][name] < min(3e-2, bf16_to_int8), (name, rels["int8"][name], bf16_to_int8)


def test_exact_int8_linear_is_the_references():
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(20, 128, generator=g) * 3, torch.randn(24, 128, generator=g)
    q, s = ref.quantize_weight(w, 64)
    a = ref.int8_linear(x, q, s, None, 64)[0]
    b = F.exact_int8_linear(x, q, s, None, 64)[0]
    assert torch.equal(a, b)
    q_x = torch.randint(-128, 128, (20, 128), generator=g, dtype=torch.int8)
    assert torch.equal(F.exact_int_matmul(q_x, q).to(torch.int64), q_x.to(torch.int64) @ q.to(torch.int64).T)


def test_int_mm_path_is_checked_once_and_exact(monkeypatch, capsys):
    """The GPU's product (torch._int_mm) run on the CPU: checked against float64 on first use, then
    used; a product that disagreed would switch to float64 for good."""
    if not hasattr(torch, "_int_mm"):
        pytest.skip("this torch has no _int_mm")
    monkeypatch.setattr(F, "INT_MM_DEVICES", ("cuda", "cpu"))
    monkeypatch.setitem(F._INT_MM, "ok", None)
    g = torch.Generator().manual_seed(3)
    a = torch.randint(-128, 128, (40, 64), generator=g, dtype=torch.int8)
    w = torch.randint(-128, 128, (24, 64), generator=g, dtype=torch.int8)
    want = a.to(torch.int64) @ w.to(torch.int64).T
    out = F.exact_int_matmul(a, w)
    assert out.dtype == torch.int32 and torch.equal(out.to(torch.int64), want) and F._INT_MM["ok"] is True
    assert "matches" in capsys.readouterr().out
    assert torch.equal(F.exact_int_matmul(a[:8], w).to(torch.int64), want[:8])  # 8 rows: float64 path
    real = torch._int_mm
    monkeypatch.setattr(torch, "_int_mm", lambda x, y: real(x, y) + 1)  # a wrong product
    monkeypatch.setitem(F._INT_MM, "ok", None)
    out = F.exact_int_matmul(a, w)
    assert torch.equal(out.to(torch.int64), want) and F._INT_MM["ok"] is False
    assert "DIFFERS" in capsys.readouterr().out


def test_memo_last_reuses_only_the_same_data():
    calls = []
    f = F.memo_last(lambda x, g: calls.append(g) or x * g)
    x = torch.arange(12.0).reshape(3, 4)
    y1 = f(x.reshape(-1, 4), 2)
    assert f(x.reshape(-1, 4), 2) is y1 and len(calls) == 1  # a new view of the same data: reused
    f(x, 3)  # another argument
    f(x.reshape(4, 3), 3)  # another shape
    f(x.clone(), 3)  # other memory
    assert len(calls) == 4
    x.add_(1)  # written in place: the version changes
    assert torch.equal(f(x, 3), x * 3) and len(calls) == 5
    f.clear()
    f(x, 3)
    assert len(calls) == 6


def test_jittered_moves_the_inputs_by_about_an_ulp():
    c = {"noise": torch.randn(128, 2, 2), "cond.hidden": torch.randn(5, 8), "sigmas": torch.tensor([1.0, 0.0])}
    j = F.jittered(c, 1e-7)
    assert j["sigmas"] is c["sigmas"] and "uncond.hidden" not in j
    for k in ("noise", "cond.hidden"):
        rel = ((j[k] - c[k]).norm() / c[k].norm()).item()
        assert 2e-8 < rel < 3e-7 and torch.equal(F.jittered(c, 1e-7)[k], j[k])  # seeded


def test_bf16_quantizer_divides_in_bf16():
    # 127 * fl(1/127) is 1 in fp32: s = 1. 100.6 is not a bf16: bf16(100.6) = 100.5, which rounds
    # half to even to 100, where the fp32 quotient 100.6 gives 101.
    v = torch.tensor([[127.0, 100.6, -3.0, 0.0]])
    assert ref.quantize_rows(v)[0].tolist() == [[127, 101, -3, 0]]
    q, s = ref.quantize_rows_bf16(v)
    assert q.tolist() == [[127, 100, -3, 0]] and s.item() == 1.0
    # the scale stays fp32 (1/127 is not a bf16); the quotient takes bf16(s)
    v = torch.tensor([[1.0, 0.5, -0.25, 0.3]])
    q, s = ref.quantize_rows_bf16(v)
    assert s.item() == ref.quantize_rows(v)[1].item() == torch.tensor(1.0 / 127.0).item()
    bs = s.to(torch.bfloat16).float()
    want = (v.to(torch.bfloat16).float() / bs).to(torch.bfloat16).float().round()
    assert q.float().tolist() == want.tolist()
    # special rows as the fp32 quantizer: zeros get the floor, a non-finite row NaN and zeros
    q, s = ref.quantize_rows_bf16(torch.tensor([[0.0, 0.0], [1.0, float("inf")]]))
    assert s[0].item() == torch.tensor(1e-30).item() and torch.isnan(s[1]).item() and q.abs().sum() == 0


def test_bf16_linear_and_dit():
    g = torch.Generator().manual_seed(5)
    x, w = torch.randn(16, 192, generator=g), torch.randn(40, 192, generator=g) * 0.05
    q, s = ref.quantize_weight(w, 64)
    y = ref.int8_linear_bf16(x, q, s, None, 64)
    y32 = ref.int8_linear(x.to(torch.bfloat16).float(), q, s, None, 64)[0]
    assert y.dtype == torch.bfloat16
    rel = ((y.float() - y32).norm() / y32.norm()).item()
    assert 0 < rel < 2e-2  # bf16 quotients move a few entries by one step; the output is rounded to bf16
    # exactly comfy-kitchen's steps: the bf16 input rotated in fp32, the bf16 quotient, then
    # (float(A) * s_x) * s_w in fp32, rounded once to bf16
    q_x, s_x = ref.quantize_rows_bf16(ref.rotate_fast(x.to(torch.bfloat16), 64))
    acc = (q_x.to(torch.int64) @ q.to(torch.int64).T).to(torch.float32)
    assert torch.equal(y, ((acc * s_x) * s.reshape(1, -1)).to(torch.bfloat16))
    moss_ref, sd, layers, config, dit = ref.float_dit(TINY)
    bf16 = moss_ref.MossDiT(**config).to(torch.bfloat16)
    bf16.load_state_dict({k: v for k, v in sd.items() if k != "rope.bands"})
    m = ref.int8_dit_bf16(bf16, ref.quantize_dit(sd, layers, 64), 64)
    kinds = {type(p).__name__ for blk in m.layers for p in blk.proj.values()}
    assert kinds == {"Int8ConvRotLinearBf16"}
    latent, text = torch.randn(128, 2, 3, generator=g), torch.randn(5, config["text_dim"], generator=g)
    with torch.no_grad():
        v = m(latent, text, 500.0)
        want = ref.int8_dit(dit(), ref.quantize_dit(sd, layers, 64), 64)(latent, text, 500.0)
    assert v.dtype == torch.float32 and 0 < ((v - want).norm() / want.norm()).item() < 0.1


def test_table_judges_the_engine_by_both_readings(files):
    refs, names = files["refs"], files["names"]
    d = lambda n, a, b: F.distance(refs[f"{n}.{a}"], refs[f"{n}.{b}"])["rel_l2"]
    bar = {n: F.BAR * min(d(n, "bf16", "int8ref"), d(n, "bf16int8", "int8ref")) for n in names}
    good = {n: 0.9 * bar[n] for n in names}
    lines, ok = F.table(refs, names, [("native", good)])
    verdict = lambda line: line.split("  ")[-1].split()[0]
    assert ok and sum("engine native" in line and verdict(line) == "within" for line in lines) == len(names)
    row = next(line for line in lines if line.startswith("48-p1") and "engine native" in line)
    b = [float(x.split()[-1]) for x in row.split("  ")[-1].split("|")]
    assert b[0] == pytest.approx(bar["48-p1"], rel=1e-3)
    assert b[1] == pytest.approx(F.BAR * d("48-p1", "bf16", "int8ref"), rel=1e-3)
    assert b[2] == pytest.approx(F.BAR * d("48-p1", "bf16int8", "int8ref"), rel=1e-3)
    assert b[0] == min(b[1], b[2])
    # just past the deciding bar (the stricter reading): outside, though within the other one
    bad = dict(good, **{"32-p1": 1.01 * bar["32-p1"]})
    lines, ok = F.table(refs, names, [("native", good), ("portable", bad)])
    assert not ok and sum("engine portable" in line and verdict(line) == "OUTSIDE" for line in lines) == 1
    assert "engine native: within the deciding bar in 4 of 4 cases; worst 0.90x its bar" in lines[-2]
    assert lines[-1] == "engine portable: within the deciding bar in 3 of 4 cases; worst 1.01x its bar (32-p1)"
    # a missing result is a SKIP row and fails the table (the bar was not shown); baselines are not judged
    lines, ok = F.table(refs, names, [("portable", {})], [("bf16 native", {n: 5.0 for n in names})])
    assert sum("SKIP" in line for line in lines) == len(names)
    assert lines[-1] == "engine portable: within the deciding bar in 0 of 4 cases (4 without a result)"
    assert not ok and sum(line.endswith("info (vs fp32, not judged)") for line in lines) == len(names)
    assert F.table(refs, names, [("native", good)], [("bf16 native", {})])[1]  # a baseline's SKIP is no failure
    # the reference columns are the distances of the four rows
    row = next(line for line in lines if line.startswith("32-p0"))
    cols = [float(x) for x in row.split()[1:6]]
    assert cols == pytest.approx([d("32-p0", "bf16", "fp32"), d("32-p0", "int8ref", "fp32"),
                                  d("32-p0", "int8jit", "int8ref"), d("32-p0", "bf16", "int8ref"),
                                  d("32-p0", "bf16int8", "int8ref")], rel=1e-3)
    jit = [d(n, "int8jit", "int8ref") / bar[n] for n in names]
    assert lines[-2] == (f"i8-jitter (int8ref on inputs x (1 + 1e-07 N(0,1)), not judged): {min(jit):.2f}x to "
                         f"{max(jit):.2f}x the deciding bar")


def test_moss_check_lines_and_progress_events_parse():
    text = "\n".join([
        "PASS case0.dit.step3.latent: cos 0.9999 rel_l2 1.0e-03 max|diff| 1e-2",
        "FAIL case0.dit.final_latent: cos 0.9990000 rel_l2 4.250e-02 max|diff| 3.0e-01 (limit: rel_l2 <= 0.01)",
        "info case1.dit.final_latent: cos 0.9999000 rel_l2 2.500e-03 max|diff| 1.0e-02",
        "1 passed, 1 failed"])
    assert F.parse_moss_check(text) == {"case0.": 4.25e-2, "case1.": 2.5e-3}
    assert F.engine_rels(["512-p0", "512-p1", "1024-p0"], text) == {"512-p0": 4.25e-2, "512-p1": 2.5e-3}
    ev = lambda i, s: json.dumps({"event": "step", "stage": "denoise", "step": i, "steps": 4, "seconds": s})
    log = "\n".join(["loading", ev(1, 9.0), ev(2, 0.5), '{"event": "stage", "stage": "vae"}', ev(3, 0.7), ev(4, 0.6)])
    assert F.step_seconds(log) == 0.6
    assert F.step_seconds(ev(1, 2.0)) is None and F.step_seconds("") is None


def test_h200_int8_script_parses_and_prints_its_usage():
    script = os.path.join(ROOT, "bench", "h200_int8.sh")
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    r = subprocess.run(["bash", script], capture_output=True, text=True)
    assert r.returncode == 2 and "h200_int8.sh BIN_DIR OUT_DIR" in r.stdout
    assert "PARTS=fidelity bash bench/h200_int8.sh" in r.stdout


def test_h200_int8_script_refuses_a_given_folder_without_a_dit(tmp_path):
    """Only the default model folder is written (28 GB); a given one without a DiT stops the script
    before anything is made."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("moss-infer-hip", "moss-check", "bench_random_model"):
        (bin_dir / name).write_text("#!/bin/sh\necho should not run >&2\nexit 9\n")
        (bin_dir / name).chmod(0o755)
    missing = tmp_path / "no-model"
    r = subprocess.run(["bash", os.path.join(ROOT, "bench", "h200_int8.sh"), str(bin_dir), str(tmp_path / "out"),
                        str(missing)], capture_output=True, text=True, env=dict(os.environ, WORK=str(tmp_path / "work")))
    assert r.returncode == 2 and f"FAIL {missing} has no transformer/diffusion_pytorch_model.safetensors" in r.stdout
    assert not missing.exists() and not (tmp_path / "work").exists() and "should not run" not in r.stderr


def test_why_names_the_refusal():
    err = json.dumps({"event": "error", "message": "quantized weights are not supported", "exit_status": 2})
    assert F.why('{"event":"info","message":"model files"}\n' + err + "\n") == "quantized weights are not supported"
    assert F.why("moss-check official: x/config.json: missing file\nbackend: host\n== case 0\n") == \
        "moss-check official: x/config.json: missing file"
    assert F.why("one\ntwo\n") == "two" and F.why("") == "(no output)"
