"""bench/int8_fidelity.py (the Python half of bench/h200_int8.sh) on the tiny model, CPU, seconds:
the references from a dump, the swapped dump moss-check reads, the parsers of the engine's output
and the table's verdicts. Needs torch and safetensors (skipped without)."""
import json
import os
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


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A dump shaped as dump_official writes it (two cases, one without guidance) whose final
    latents are the fp32 reference DiT's, and the tiny DiT's INT8 file (group 64)."""
    d = tmp_path_factory.mktemp("int8fid")
    state = TM.load_dit_state(TINY, "cpu")
    cfg = TM.dit_config(TINY)
    dit = TM.build_moss_ref_dit(R, TINY, {k: v.float() for k, v in state.items()})
    g = torch.Generator().manual_seed(49)
    tensors, meta = {}, []
    for n, (cfg_scale, grid) in enumerate(((3.0, 4), (1.0, 2))):
        c = {"cond.hidden": torch.randn(6, cfg["text_dim"], generator=g), "noise": torch.randn(128, grid, grid, generator=g),
             "sigmas": R.schedule(3, 3.0)}
        if cfg_scale != 1.0:
            c["uncond.hidden"] = torch.randn(3, cfg["text_dim"], generator=g)
        settings = {"cfg": cfg_scale, "skip_layers": [1], "seed": n}
        c["final_latent"] = F.euler(dit, c, settings, "cpu")
        tensors.update({f"case{n}.{k}": v.contiguous() for k, v in c.items()})
        meta.append({"case": n, "captured": {"settings": settings}})
    dump = str(d / "dump.safetensors")
    save_file(tensors, dump, metadata={"cases": json.dumps(meta), "meta": "{}"})
    layers = cfg["num_layers"]
    int8 = str(d / "int8.safetensors")
    save_file({k: v.contiguous() for k, v in ref.quantize_dit(state, layers, 64).items()}, int8)
    refs = F.references(TINY, int8, [dump])
    refs_path = str(d / "refs.safetensors")
    save_file({k: v.contiguous() for k, v in refs.items()}, refs_path)
    return dict(dir=d, dump=dump, int8=int8, refs=refs, refs_path=refs_path)


def test_references_of_every_case(files):
    refs = files["refs"]
    names = ("fp32", "bf16", "int8ref", "int8sage")
    assert sorted(refs) == sorted(f"0.case{n}.{m}" for n in (0, 1) for m in names)
    for key in ("0.case0.", "0.case1."):
        fp32 = refs[key + "fp32"]
        # the fp32 dump is the reference DiT's own: the recomputation lands on it
        d = {m: F.distance(refs[key + m], fp32)["rel_l2"] for m in names}
        assert d["fp32"] == 0
        # bf16 rounds at 2^-9, INT8 ConvRot at 1/127 of a row: both off, int8 the farther
        assert 1e-5 < d["bf16"] < 5e-2 and 1e-4 < d["int8ref"] < 0.3
        assert d["bf16"] < d["int8ref"]
        assert refs[key + "int8sage"].shape == fp32.shape and not torch.equal(refs[key + "int8sage"], refs[key + "int8ref"])


def test_exact_int8_linear_is_the_references(files):
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(5, 128, generator=g) * 3, torch.randn(24, 128, generator=g)
    q, s = ref.quantize_weight(w, 64)
    a = ref.int8_linear(x, q, s, None, 64)[0]
    b = F.exact_int8_linear(x, q, s, None, 64)[0]
    assert torch.equal(a, b)


def test_swap_puts_the_reference_in_the_dump(files):
    out = str(files["dir"] / "swapped.safetensors")
    F.swap(files["dump"], files["refs_path"], "int8ref", out, index=0)
    t, orig = load_file(out), load_file(files["dump"])
    for n in (0, 1):
        assert torch.equal(t[f"case{n}.final_latent"], files["refs"][f"0.case{n}.int8ref"])
        assert torch.equal(t[f"case{n}.noise"], orig[f"case{n}.noise"])
    assert F.dump_cases(out)[0][1] == F.dump_cases(files["dump"])[0][1]  # the settings kept


def test_table_judges_the_engine_against_half_bf16s_distance(files):
    refs = files["refs"]
    bar = lambda key: F.BAR * F.distance(refs[key + "bf16"], refs[key + "int8ref"])["rel_l2"]
    keys = ["0.case0.", "0.case1."]
    good = {k: 0.9 * bar(k) for k in keys}
    bad = dict(good, **{"0.case1.": 1.1 * bar("0.case1.")})
    lines, ok = F.table(refs, [("native", good)])
    verdict = lambda line: line.split()[-5]  # "... rel_l2 VERDICT bar1 | VERDICT bar2"
    assert ok and sum("engine native" in line and verdict(line) == "within" for line in lines) == 2
    lines, ok = F.table(refs, [("native", good), ("portable", bad)])
    assert not ok and sum("engine portable" in line and verdict(line) == "OUTSIDE" for line in lines) == 1
    lines, ok = F.table(refs, [("portable", {})])  # what the engine refused: skipped, named
    assert ok and sum("SKIP" in line for line in lines) == 2
    assert sum("int8 QK^T" in line for line in lines) == 2
    # both bars printed on a judged row, the deciding one first
    row = next(line for line in F.table(refs, [("native", good)])[0] if "engine native" in line)
    b1, b2 = float(row.split()[-4]), float(row.split()[-1])
    assert b1 == pytest.approx(bar("0.case0."), rel=1e-3)
    assert b2 == pytest.approx(F.BAR * F.distance(refs["0.case0.bf16"], refs["0.case0.fp32"])["rel_l2"], rel=1e-3)


def test_moss_check_lines_and_progress_events_parse():
    text = "\n".join([
        "PASS case0.dit.step3.latent: cos 0.9999 rel_l2 1.0e-03 max|diff| 1e-2",
        "FAIL case0.dit.final_latent: cos 0.9990000 rel_l2 4.250e-02 max|diff| 3.0e-01 (limit: rel_l2 <= 0.01)",
        "info case1.dit.final_latent: cos 0.9999000 rel_l2 2.500e-03 max|diff| 1.0e-02",
        "1 passed, 1 failed"])
    assert F.parse_moss_check(text) == {"case0.": 4.25e-2, "case1.": 2.5e-3}
    ev = lambda i, s: json.dumps({"event": "step", "stage": "denoise", "step": i, "steps": 4, "seconds": s})
    log = "\n".join(["loading", ev(1, 9.0), ev(2, 0.5), '{"event": "stage", "stage": "vae"}', ev(3, 0.7), ev(4, 0.6)])
    assert F.step_seconds(log) == 0.6
    assert F.step_seconds(ev(1, 2.0)) is None and F.step_seconds("") is None


def test_h200_int8_script_parses_and_prints_its_usage():
    import subprocess
    script = os.path.join(ROOT, "bench", "h200_int8.sh")
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    r = subprocess.run(["bash", script], capture_output=True, text=True)
    assert r.returncode == 2 and "h200_int8.sh BIN_DIR OUT_DIR" in r.stdout


def test_why_names_the_refusal():
    err = json.dumps({"event": "error", "message": "quantized weights are not supported", "exit_status": 2})
    assert F.why('{"event":"info","message":"model files"}\n' + err + "\n") == "quantized weights are not supported"
    assert F.why("moss-check official: x/config.json: missing file\nbackend: host\n== case 0\n") == \
        "moss-check official: x/config.json: missing file"
    assert F.why("m: x.safetensors: tensor 'a' (U8) is quantized; only bf16 weights\nbackend: host\n== case 0\n") == \
        "m: x.safetensors: tensor 'a' (U8) is quantized; only bf16 weights"
    assert F.why("one\ntwo\n") == "two" and F.why("") == "(no output)"


def test_table_takes_the_engines_latent_files(files, tmp_path):
    import numpy as np
    refs = files["refs"]
    good = tmp_path / "good.npy"
    np.save(good, refs["0.case0.int8ref"].numpy() * 1.0001)
    base = tmp_path / "bf16.npy"
    np.save(base, refs["0.case0.bf16"].numpy())
    rels = F.npy_rels(refs, [str(good), str(tmp_path / "missing.npy")], "int8ref")
    assert list(rels) == ["0.case0."] and rels["0.case0."] == pytest.approx(1e-4, rel=1e-2)
    info = F.npy_rels(refs, [str(base)], "fp32")
    lines, ok = F.table(refs, [("native e2e", rels)], [("engine bf16 e2e vs fp32", info)])
    assert ok
    row = next(line for line in lines if "info engine bf16" in line and line.startswith("0.case0."))
    assert row.endswith("info (a baseline, not judged)")
    assert float(row.split()[-6]) == pytest.approx(F.distance(refs["0.case0.bf16"], refs["0.case0.fp32"])["rel_l2"], rel=1e-3)
