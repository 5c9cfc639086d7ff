"""Checks of bench/amd_calibration.py (issue 33): the published Radeon cases are modelled from their
inputs by amd_model's method, their ratios reach the calibrated step family by family, and the table in
bench/amd_model.md section 3b is what the code computes."""
import contextlib
import importlib.util
import io
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = load("amd_model")
C = M.amd_calibration


def case(key):
    return next(c for c in C.CASES if c["key"] == key)


def rows():
    return {r["key"]: r for r in C.calibrate(M)}


def test_ck_gemm_reproduced_from_its_inputs():
    # CK's 64x128x64 tile divides 16384 exactly, so the matrix bound is the problem's flops at the
    # 7900 XTX's WMMA peak (96 CUs x 512 flops x 2.5 GHz), and its 4 waves of 2x4 WMMAs over K 64
    # keep 1024 clocks of work per k-step: more than the 600 exposed, so nothing else adds to it.
    r = rows()["ck-wmma-64x128-gfx1100"]
    peak = 96 * 512 * 2.5e9
    mma_ms = 2 * 16384 ** 3 / peak * 1e3
    assert abs(r["bounds_ms"]["mma"] - mma_ms) < 1e-9
    assert r["modelled_ms"] >= mma_ms
    assert r["modelled_ms"] < mma_ms * 1.01  # the last partial round of 4096 workgroups only
    assert r["measured_ms"] == 105.451
    assert abs(r["ratio"] - 105.451 / r["modelled_ms"]) < 1e-12
    # The published rate and time agree: 83.4141 TFLOP/s is 2 * 16384^3 flops in 105.451 ms.
    assert abs(2 * 16384 ** 3 / (105.451e-3) / 1e12 - 83.4141) < 0.01


def test_rate_published_cases_become_times_by_their_own_formula():
    c = case("opus-attn-v1-gfx1201")
    # opus_attn_gfx1201's benchmark: TFLOPS = 4 * B * H * N^2 * D / time
    assert abs(C.measured_ms(c) - 4 * 32 * 2048 ** 2 * 128 / 27.5e12 * 1e3) < 1e-9
    t = case("tensile-128x128x32-gfx1201")
    # 9.69 ms at 113.53 TFLOP/s is an 8192^3 product (the time is printed to 0.01 ms: +-0.06 TFLOP/s)
    assert abs(t["flops"] / (t["measured_ms"] * 1e-3) / 1e12 - 113.53) < 0.07


def test_every_case_names_its_source_and_code():
    for c in C.CASES:
        assert c["source"].startswith("https://"), c["key"]
        assert c["code"] and c["structure"] and c["published"], c["key"]
        assert c["target"] in M.SPECS and c["family"] in ("gemm", "attention")
    for c in C.CASES:
        if "gcnasm" in c["code"] or "composable_kernel" in c["code"]:
            assert re.search(r"\b[0-9a-f]{40}\b", c["code"]), c["key"]  # the commit the model was read at


def test_kernel_without_lds_staging_counts_only_its_p_tile():
    r = M.model_attention("gfx1201", case("opus-attn-v0-gfx1201")["kernel"], "v0", 2048, 2048, 32, 128)
    # one wave, 16 queries x 16 keys of bf16 P written and read back per key tile; K/V never in LDS
    assert r["per_tile_bytes"]["lds"] == 2 * 16 * 16 * 2
    staged = dict(case("opus-attn-v0-gfx1201")["kernel"], kv_lds=True)
    assert M.model_attention("gfx1201", staged, "v0", 2048, 2048, 32, 128)["per_tile_bytes"]["lds"] > 2 * 16 * 16 * 2


def test_factors_follow_the_target_generation():
    assert C.generation(M, "gfx1100") == 3
    assert C.generation(M, "gfx1200") == C.generation(M, "gfx1201") == 4
    r = rows()
    # cards without a report of their own (RX 7800 XT, RX 7600, Strix Halo): their generation's case
    f3 = C.radeon_factors(M, "portable", "gfx1101", list(r.values()))
    f35 = C.radeon_factors(M, "portable", "gfx1151", list(r.values()))
    assert f3["gemm"] == f35["gemm"] == r["ck-wmma-64x128-gfx1100"]["ratio"]
    f4 = C.radeon_factors(M, "portable", "gfx1200", list(r.values()))
    # the portable attention (the direct tiling up to head dim 128, with v139's load order and wave
    # priorities since session 18) is built like opus v139 on both; v39 stays as the case before
    assert f3["attention"] == f4["attention"] == r["opus-attn-v139-gfx1201"]["ratio"]
    assert r["opus-attn-v139-gfx1201"]["ratio"] < r["opus-attn-v39-gfx1201"]["ratio"]
    for name in M.CONFIG_LABELS:  # every config is calibrated on every family the step has
        assert set(C.radeon_factors(M, name, "gfx1201", list(r.values()))) == {"gemm", "attention"}


def test_a_card_with_its_own_library_gemm_report_takes_it():
    r = rows()
    for t in ("gfx1100", "gfx1200", "gfx1201"):
        key = C.SAME_CARD["gemm"][t]
        assert case(key)["target"] == t
        for name in M.CONFIG_LABELS:
            assert C.radeon_factors(M, name, t, list(r.values()))["gemm"] == r[key]["ratio"]
    # without the same-card entry the RX 9060 XT falls back to its generation's named Tensile kernel
    saved = C.SAME_CARD["gemm"].pop("gfx1200")
    try:
        assert C.radeon_factors(M, "portable", "gfx1200", list(r.values()))["gemm"] == \
            r["tensile-128x128x32-gfx1201"]["ratio"]
    finally:
        C.SAME_CARD["gemm"]["gfx1200"] = saved


def test_library_gemm_reports_become_times_by_the_benchmarks_formula():
    c = case("hipblaslt-bf16-4096-gfx1200")
    # the benchmark's rate is 2 * N^3 / time: 66.14 TFLOP/s at 4096^3 is 2.078 ms
    assert abs(C.measured_ms(c) - 2 * 4096 ** 3 / 66.14e12 * 1e3) < 1e-12
    r = rows()["hipblaslt-bf16-4096-gfx1200"]
    # 4096^3 in whole 128x128 tiles: the matrix bound is the flops at the 9060 XT's peak (32 CUs x 1024 x 3.13 GHz)
    assert abs(r["bounds_ms"]["mma"] - 2 * 4096 ** 3 / (32 * 1024 * 3.13e9) * 1e3) < 1e-9


def test_a_generation_without_cases_takes_the_nearest():
    saved = dict(M.RDNA_GENERATIONS)
    try:  # an RDNA 3.5 part whose matrix rate cites its own source: RDNA3's analogues are nearest
        M.RDNA_GENERATIONS[3.5] = dict(M.RDNA_GENERATIONS[3], mma_flops_per_unit_clk=(512, "calc-rdna35"))
        M.SPECS["gfx-test"] = dict(M.SPECS["gfx1100"], mma_flops_per_unit_clk=(512, "calc-rdna35"))
        r = C.calibrate(M)
        assert C.generation(M, "gfx-test") == 3.5
        assert C.radeon_factors(M, "portable", "gfx-test", r) == C.radeon_factors(M, "portable", "gfx1101", r)
    finally:
        M.RDNA_GENERATIONS.clear()
        M.RDNA_GENERATIONS.update(saved)
        M.SPECS.pop("gfx-test", None)


def test_radeon_calibrated_step_scales_each_family_by_its_ratio():
    res, _ = M.run("portable", None, 77, 10)
    ks = res["gfx1200"]["step"]
    f = C.radeon_factors(M, "portable", "gfx1200", C.calibrate(M))
    fam = M.by_family(ks)
    expect = sum(ms * f.get(name, 1.0) for name, ms in fam.items()) / 1e3
    assert abs(M.calibrated_step_s(ks, f) - expect) < 1e-9
    assert M.calibrated_step_s(ks, f) > res["gfx1200"]["step_s"]  # every published kernel ran slower than modelled


def test_documented_table_is_what_the_code_computes():
    text = open(os.path.join(BENCH, "amd_model.md")).read()
    section = text.split("## 3b.")[1].split("\n## ")[0]
    for r in C.calibrate(M):
        line = next(l for l in section.splitlines() if l.startswith("| ") and r["key"] in l)
        cells = [x.strip() for x in line.strip("|").split("|")]
        assert f"{r['modelled_ms']:.3f}" in cells and f"{r['measured_ms']:.3f}" in cells, line
        assert f"{r['ratio']:.2f}" in cells, line


def test_cli_default_is_the_code_as_it_is():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert M.main(["--quiet"]) == 0
    text = out.getvalue()
    assert "config portable (the code as it is" in text
    assert "config seed" not in text and "config candidate" not in text
    for t in M.AMD_TARGETS:
        assert f"{t} step 1024x1024: " in text
        assert re.search(rf"^{t} step 1024x1024: \d+\.\d\d s \(modelled, Radeon-calibrated: ", text, re.M)
        assert re.search(rf"^{t} step 1024x1024: \d+\.\d\d s \(modelled, H200-calibrated: ", text, re.M)
    assert "-- calibration on Radeons" in text and "-- streamed step on 8 GB cards" in text


def test_cli_all_prints_the_code_first_and_labels_the_design():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert M.main(["--quiet", "--config", "all"]) == 0
    text = out.getvalue()
    heads = re.findall(r"^-- summary, config (\w+) \((.*)\) --$", text, re.M)
    assert [h[0] for h in heads] == ["portable", "candidate", "seed", "int8"]
    assert "NOT code" in heads[1][1] and "not code" in heads[3][1]
