"""Checks of bench/amd_model.py: the check_device table parses, the model is consistent and monotone,
and every specification figure names a source."""
import copy
import importlib.util
import io
import os
import contextlib

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("amd_model", os.path.join(HERE, "..", "amd_model.py"))
M = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(M)


def rows():
    return M.parse_check_device(M.DEFAULT_TABLE)


def test_table_parses():
    r = rows()
    assert len(r) > 100
    archs = {x["arch"] for x in r}
    assert {"gfx1100", "gfx1200", "gfx1201"} <= archs
    g = M.table_lookup(r, "gfx1200", M.CONFIGS["seed"]["gemm"]["table"])
    assert g is not None and g["vgpr"] > 0 and g["wave"] == 32 and g["kind"] == "matrix"
    a = M.table_lookup(r, "gfx1100", [p.format(D=128, DV=128) for p in M.CONFIGS["seed"]["attention"]["table"]])
    assert a is not None and a["mma"] > 0


def test_every_spec_has_a_source():
    for t, figures in M.SPECS.items():
        for key, (value, source) in figures.items():
            assert source in M.SOURCES, f"{t}.{key}: source {source!r} missing"
            assert M.SOURCES[source].strip()


def test_time_is_at_least_each_bound_and_summary_is_the_sum():
    res, n = M.run("seed", M.DEFAULT_TABLE, 77, 10)
    assert n > 0
    for t in M.AMD_TARGETS:
        for part in ("step", "te", "vae"):
            ks = res[t][part]
            for k in ks:
                for b, ms in k["bounds_ms"].items():
                    assert k["time_ms"] >= ms - 1e-12, (k["name"], b)
                assert k["bound"] in k["bounds_ms"]
            total = sum(k["total_ms"] for k in ks) / 1e3
            assert abs(total - res[t][part + "_s"]) < 1e-9
        lines = M.summary_lines("seed", res)
        assert f"{t} step 1024x1024: {res[t]['step_s']:.2f} s (modelled)" in lines


def test_faster_matrix_rate_never_slows_a_kernel():
    cfg = M.CONFIGS["candidate"]["gemm"]
    base = M.model_gemm("gfx1200", cfg, "x", 8279, 3072, 3072, rows=rows())
    saved = copy.deepcopy(M.SPECS["gfx1200"])
    try:
        v, s = M.SPECS["gfx1200"]["mma_flops_per_unit_clk"]
        M.SPECS["gfx1200"]["mma_flops_per_unit_clk"] = (2 * v, s)
        faster = M.model_gemm("gfx1200", cfg, "x", 8279, 3072, 3072, rows=rows())
        assert faster["time_ms"] <= base["time_ms"] + 1e-12
        v, s = M.SPECS["gfx1200"]["dram_gbs"]
        M.SPECS["gfx1200"]["dram_gbs"] = (2 * v, s)
        more_bw = M.model_gemm("gfx1200", cfg, "x", 8279, 3072, 3072, rows=rows())
        assert more_bw["time_ms"] <= faster["time_ms"] + 1e-12
    finally:
        M.SPECS["gfx1200"] = saved


def test_more_work_never_takes_less_time():
    for conf in ("seed", "portable", "candidate"):
        g = M.CONFIGS[conf]["gemm"]
        a = M.CONFIGS[conf]["attention"]
        prev = 0.0
        for m in (512, 1024, 4096, 8279):
            ms = M.model_gemm("gfx1201", g, "x", m, 3072, 3072, rows=rows())["time_ms"]
            assert ms >= prev - 1e-12
            prev = ms
        assert (M.model_attention("gfx1100", a, "x", 4173, 4173, 24, 128, rows=rows())["time_ms"] >=
                M.model_attention("gfx1100", a, "x", 1040, 1040, 24, 128, rows=rows())["time_ms"])


def test_step_counts_the_model_flops():
    res, _ = M.run("seed", M.DEFAULT_TABLE, 64, 10)
    # bench/results/2026-11-30-h200-s5.md: 95.1 TFLOP per 1024x1024 step with a 64-token prompt
    assert abs(res["gfx1200"]["step_flops"] / 1e12 - 95.1) < 1.0


def test_cli_prints_summary_lines():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert M.main(["--quiet", "--config", "seed"]) == 0
    text = out.getvalue()
    for t in M.AMD_TARGETS:
        assert f"{t} step 1024x1024: " in text and "(modelled)" in text
    assert "h200 step 1024x1024" in text


def test_device_classes_of_issue_31():
    """A row per new device class, its register file read from its own figures, and steps that
    order as the boards do: more CUs and bandwidth, a faster step."""
    assert set(M.NEW_DEVICE_CLASSES) <= set(M.AMD_TARGETS)
    assert M.spec("gfx1102", "regs_per_simd") == 1024 and M.spec("gfx1150", "regs_per_simd") == 1024
    assert M.spec("gfx1101", "regs_per_simd") == 1536 and M.spec("gfx1151", "regs_per_simd") == 1536
    assert M.spec("gfx1151", "dram_gbs") == 256 and M.spec("gfx1150", "units") == 16
    rows_ = M.parse_check_device(M.PORTABLE_TABLE)
    assert {r["arch"] for r in rows_} >= set(M.NEW_DEVICE_CLASSES)
    assert all(r["occ"] is not None for r in rows_)
    res, _ = M.run("portable", None, 77, 10)
    step = {t: res[t]["step_s"] for t in M.AMD_TARGETS}
    assert step["gfx1100"] < step["gfx1101"] < step["gfx1102"] < step["gfx1150"]
    assert step["gfx1151"] < step["gfx1150"]
