"""Checks of bench/amd_model.py: the check_device table parses, the model is consistent and monotone,
and every specification figure names a source."""
import copy
import importlib.util
import io
import os
import contextlib
import re

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


def test_int8_gemm_rates_by_generation():
    """iu8 WMMA: twice bf16's matrix-unit time saved on gfx12, none on gfx11; the bytes halve on both."""
    r = rows()
    bf16 = M.CONFIGS["portable"]["gemm"]
    q8 = M.CONFIGS["int8"]["gemm_int8"]
    for t, rate in (("gfx1200", 2), ("gfx1201", 2), ("gfx1100", 1), ("gfx1151", 1)):
        a = M.model_gemm(t, bf16, "x", 8279, 3072, 3072, rows=r)
        b = M.model_gemm(t, q8, "x", 8279, 3072, 3072, rows=r, eb_x=1, eb_w=1)
        assert abs(b["bounds_ms"]["mma"] * rate - a["bounds_ms"]["mma"]) < 1e-9 * a["bounds_ms"]["mma"] + 1e-12
        assert b["dram_bytes"] < a["dram_bytes"] and b["bounds_ms"]["l2"] < a["bounds_ms"]["l2"]
        assert b["time_ms"] <= a["time_ms"] + 1e-12


def test_int8_scores_save_matrix_time_only_where_int8_is_faster():
    r = rows()
    att = M.CONFIGS["portable"]["attention"]
    for t in ("gfx1100", "gfx1200", "gfx1201"):
        a = M.model_attention(t, att, "x", 4173, 4173, 24, 128, rows=r)
        b = M.model_attention(t, att, "x", 4173, 4173, 24, 128, rows=r, int8_qk=True)
        assert b["dram_bytes"] < a["dram_bytes"]
        if t.startswith("gfx12"):
            assert b["bounds_ms"]["mma"] < a["bounds_ms"]["mma"]
        else:  # the same WMMA time, one more VALU slot a score
            assert b["bounds_ms"]["mma"] > a["bounds_ms"]["mma"]
        c = M.model_attention(t, att, "x", 4173, 4173, 24, 128, rows=r, int8_qk=True, fp8_pv=True)
        assert (c["bounds_ms"]["mma"] < b["bounds_ms"]["mma"]) == t.startswith("gfx12")


def test_int8_step_counts_the_quantization_where_the_variant_puts_it():
    r = M.parse_check_device(M.PORTABLE_TABLE)
    names = lambda conf: [k["name"] for k in M.dit_step("gfx1200", conf, r, 77, 10)]
    apart = names(M.variant_config(dict(act_quant="separate", int8_qk=False)))
    fused = names(M.variant_config(dict(act_quant="fused", int8_qk=False)))
    norms = names(M.variant_config(dict(act_quant="norms", int8_qk=True)))
    # four activations a block (norm1 out, attention out, norm2 out, SiTU out), for both block kinds
    assert sum(n.startswith("rotate_quantize") for n in apart) == 8
    assert not any(n.startswith(("rotate_quantize", "smooth_quantize")) for n in fused)
    assert sum(n.startswith("rotate_quantize") for n in norms) == 4
    assert sum(n.startswith("smooth_quantize_k") for n in norms) == 2
    assert names(M.CONFIGS["portable"]) == names(M.variant_config(None))


def test_int8_table_names_every_release_target_and_judges_the_goals():
    r = M.parse_check_device(M.PORTABLE_TABLE)
    lines = M.int8_table(r, 77, 10, lambda t: {"gemm": 1.5, "attention": 1.5})
    for t in M.RELEASE_TARGETS:
        assert any(line.startswith(t + " ") or line.startswith(t + ":") for line in lines), t
    for line in lines:
        if "goal <=" in line:
            step = float(line.split("1024x1024: ")[1].split(" s")[0])
            goal = float(line.split("goal <= ")[1].split(" s")[0])
            assert line.endswith("met") == (step <= goal) and line.endswith("MISSED") == (step > goal)
    assert sum("goal <=" in line for line in lines) == len(M.INT8_GOALS)


def test_cli_prints_the_int8_table():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert M.main(["--config", "int8", "--quiet"]) == 0
    text = buf.getvalue()
    assert "-- INT8 ConvRot" in text and "gfx1200 int8 step 1024x1024:" in text and "gfx1153: not modelled" in text
    assert "42 of 42 blocks resident (all: fits" in text
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert M.main(["--quiet"]) == 0
    assert "INT8" not in buf.getvalue()  # the default is the code as it is


def test_int8_memory_plan_on_8_gb():
    p = M.int8_memory_plan()
    # a block's projections: 113.2 M weights, half their bf16 bytes plus the f32 row scales
    assert 0.5 < p["block_int8_gib"] / p["block_bf16_gib"] < 0.501
    # the whole INT8 DiT is the Comfy-Org file's 5.41 GB (shared/spec/research/anchors.md), within 1%
    assert abs(p["dit_int8_gib"] * 2 ** 30 / 1e9 - 5.41) < 0.055
    assert p["resident"] == p["blocks"] == 42 and p["need_gib"] < p["usable_gib"]
    assert p["bf16_resident"] < 42
    # a card with less left over streams, by the same rule
    assert M.int8_memory_plan(vram_gib=6.0)["resident"] < 42


def test_h200_int8_step_prediction():
    h = M.h200_int8_steps()
    # the GEMMs (most of the step) at twice the rate, attention and rows as they were
    assert 0.5 < h["int8 fused"] / h["bf16"] <= h["int8 separate"] / h["bf16"] < 1.0
    assert abs(h["bf16"] - M.calibrate()[1]["modelled_s"]) / h["bf16"] < 0.02  # the calibrated step's flow


def test_int8_gemm_is_modelled_from_its_own_check_device_rows():
    """The int8 GEMM as written (int8_gemm.hip's tiled kernel): its tile and k-step, and its VGPRs and
    LDS read from its own rows of the session-24 table, not the bf16 kernel's."""
    r = M.load_rows(M.CONFIGS["int8"]["check_device_table"])
    q8 = M.CONFIGS["int8"]["gemm_int8"]
    assert (q8["bm"], q8["bn"], q8["bk"], q8["wm"] * q8["wn"]) == (128, 64, 64, 4)
    for t, vgpr in (("gfx1200", 166), ("gfx1201", 166), ("gfx1100", 213)):
        g = M.model_gemm(t, q8, "x", 8279, 3072, 3072, rows=r, eb_x=1, eb_w=1)
        occ = g["occupancy"]
        assert occ["vgpr"] == vgpr and occ["lds"] == 30720 and "int8_gemm_tiled_kernel" in occ["source"]
        assert occ["waves_per_simd"] == 4 and occ["limit"] == "lds"  # two 30 KiB stages a workgroup
    # a table without its rows falls back to the estimate, and says so
    g = M.model_gemm("gfx1200", q8, "x", 8279, 3072, 3072, rows=M.parse_check_device(M.PORTABLE_TABLE), eb_x=1, eb_w=1)
    assert g["occupancy"]["source"].startswith("estimate")


def test_direct_attention_valu_is_the_counted_instructions():
    """The direct tiling's VALU slots a tile are the disassembly's counts at head dim 128: the kernel
    before issue 49's change (277 a tile) is slower than it is now (P rounded by one add, the scale
    inside exp2's fma, the rescale skipped), which is slower than with loop-invariant fragment addresses; the matrix time is the
    same in all three, and other head dims keep the estimate."""
    r = M.load_rows(M.CONFIGS["portable"]["check_device_table"])
    att = M.CONFIGS["portable"]["attention"]
    b = M.DIRECT_VALU_BEFORE
    assert b["softmax_and_addressing"] + b["convert"] + b["rescale"] == 277
    now = M.DIRECT_VALU
    assert now["softmax_and_addressing"] + now["convert"] + now["rescale"] == 217 and now["convert"] == 16 + 8
    for t in ("gfx1100", "gfx1200", "gfx1201"):
        ms = {name: M.model_attention(t, att, "x", 4173, 4173, 24, 128, rows=r, valu=v)
              for name, v in (("before", b), ("now", None), ("saddr", M.DIRECT_VALU_SADDR))}
        assert ms["before"]["time_ms"] > ms["now"]["time_ms"] > ms["saddr"]["time_ms"]
        never = dict(now, rescale_fraction=0.0)
        always = dict(now, rescale_fraction=1.0)
        assert (M.model_attention(t, att, "x", 4173, 4173, 24, 128, rows=r, valu=never)["time_ms"] <
                ms["now"]["time_ms"] <
                M.model_attention(t, att, "x", 4173, 4173, 24, 128, rows=r, valu=always)["time_ms"])
    d64 = [M.model_attention("gfx1200", att, "x", 1040, 1040, 24, 64, rows=r, valu=v)["time_ms"] for v in (b, now)]
    assert d64[0] == d64[1]


def test_int8_config_quantizes_where_the_kernels_will():
    """Config int8: the norms write int8 rows (no pass after them), the attention's output and SiTU's
    f32 output each take a pass, the keys take quantize_keys' pass (int8 QK^T, since session 26);
    the 'product' variant writes the up|gate product in f32 and reads it back (more bytes than the
    config)."""
    r = M.load_rows(M.CONFIGS["int8"]["check_device_table"])
    ks = M.dit_step("gfx1200", M.CONFIGS["int8"], r, 77, 10)
    names = [k["name"] for k in ks]
    assert sum(n.startswith("rotate_quantize attention out") for n in names) == 2
    assert sum(n.startswith("rotate_quantize_f32 SiTU out") for n in names) == 2
    assert sum(n.startswith("smooth_quantize_k") for n in names) == 2
    assert not any(n.startswith("rotate_quantize norm") for n in names)
    prod = M.dit_step("gfx1200", M.variant_config(dict(act_quant="product")), r, 77, 10)
    assert sum(k["dram_bytes"] for k in prod) > sum(k["dram_bytes"] for k in ks)
    assert M.INT8_VARIANTS[M.INT8_DESIGN][1] == {}
    assert M.CONFIGS["int8"]["int8_qk"] and M.CONFIGS["int8"]["act_quant"] == "planned"
    bf16_qk = M.dit_step("gfx1200", M.variant_config(dict(int8_qk=False)), r, 77, 10)
    assert not any(k["name"].startswith("smooth_quantize") for k in bf16_qk)


def test_documented_int8_table_is_what_the_code_computes():
    """bench/amd_model.md section 6's results table is --config int8's, row for row and target for
    target (Radeon-calibrated, three decimals), and its rows order as their arithmetic must: the
    quantization fused beats it apart, int8 QK^T beats the bf16 attention on gfx12, each idea beats
    config int8 and all of them together beat each, the counted attention before issue 49's change
    is slower than now."""
    import amd_calibration as C
    me = M.this_module()
    cal = C.calibrate(me)
    table = M.int8_table(M.load_rows(M.CONFIGS["int8"]["check_device_table"]), 77, 10,
                         lambda t: C.radeon_factors(me, "portable", t, cal))
    computed = [[c.split(" (")[0] for c in re.findall(r"\d+\.\d+ \(\d+\.\d+\)", line)]
                for line in table[2:2 + len(M.INT8_VARIANTS)]]
    text = open(os.path.join(HERE, "..", "amd_model.md")).read()
    section = text.split("## 6. INT8 ConvRot")[1].split("### Results")[1]
    documented = [[x.strip().strip("*") for x in line.replace("\\|", "").strip("|").split("|")[1:]]
                  for line in section.splitlines() if line.startswith("| ") and not line.startswith("| variant")]
    assert documented[:len(computed)] == computed
    step = {name: dict(zip(M.INT8_TARGETS, map(float, cells))) for (name, _), cells in zip(M.INT8_VARIANTS, computed)}
    names = [n for n, _ in M.INT8_VARIANTS]
    config, apart = names[M.INT8_DESIGN], names[1]
    bf16_qk = next(n for n in names if n.endswith("bf16 attention (session 25)"))
    ideas = [n for n in names if n.startswith("config int8 +")]
    every = next(n for n in names if n.startswith("every idea"))
    before = next(n for n in names if "before issue 49" in n)
    for t in ("gfx1200", "gfx1201"):
        assert step[config][t] < step[bf16_qk][t] < step[apart][t]
        assert step[config][t] < step[before][t]
        assert all(step[every][t] < step[n][t] < step[config][t] for n in ideas)
