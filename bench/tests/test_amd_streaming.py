"""Checks of bench/amd_streaming.py (issue 33): the resident count follows the planner's rule and its
reference points, a streamed block's bytes follow the DiT's shapes, and the streamed step is the
order of work of docs/memory_plan.md section 4 (copy of block p+1 beside block p's compute)."""
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location("amd_model", os.path.join(HERE, "..", "amd_model.py"))
M = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(M)
S = M.amd_streaming
GIB = 2 ** 30


def portable_rows():
    return M.parse_check_device(M.PORTABLE_TABLE)


def test_resident_count_matches_the_planner_reference_points():
    # hip/tests/unit/test_planner.cpp on the same real-like sizes (no staging): 6 GiB keeps 17, 3 keeps 2
    no_staging = dict(S.STAGES, staging_gib=0.0)
    assert S.resident_blocks(6, desktop_gib=0, s=no_staging) == 17
    assert S.resident_blocks(3, desktop_gib=0, s=no_staging) == 2
    assert S.resident_blocks(16, desktop_gib=0.5) == 42  # a 16 GB card holds every block
    prev = 0
    for tenth in range(20, 200):  # more memory never keeps fewer blocks
        r = S.resident_blocks(tenth / 10, desktop_gib=0)
        assert prev <= r <= 42
        prev = r


def test_a_block_crosses_the_bus_with_its_ffn_packed():
    d, f = M.DIT["dim"], M.DIT["ffn"]
    bus, ffn_values = S.block_bus_bytes(M)
    raw = 4 * d * d * 2 + ffn_values * 2
    assert abs(raw / GIB - S.STAGES["block_gib"]) < 0.01  # the planner's 0.21 GiB block
    assert ffn_values == 3 * d * f
    assert bus == 4 * d * d * 2 + 3 * d * f * 13 / 8
    assert bus < raw


def test_streamed_step_is_the_order_of_work():
    rows = portable_rows()
    conf = M.CONFIGS["portable"]
    for bus in ((4, 8), (4, 16), (3, 1)):
        s = S.streamed_step(M, "gfx1200", conf, rows, 77, 10, 8, bus)
        c, copy, unpack = s["block_compute_s"], s["copy_s"], s["unpack_s"]
        n, r = M.DIT["layers"], s["resident"]
        rest = s["resident_step_s"] - n * c
        assert abs(s["step_s"] - (rest + r * c + (n - r) * max(c + unpack, copy))) < 1e-12
        assert s["hidden"] == (copy <= c + unpack)
        assert s["step_s"] >= s["resident_step_s"]
        assert abs(copy - S.block_bus_bytes(M)[0] / (S.PCIE_GBS_PER_LANE[bus[0]] * bus[1] * S.LINK_EFFICIENCY * 1e9)) < 1e-12
    # a link far too slow (PCIe 3.0 x1) is not hidden: each streamed block then costs its copy
    slow = S.streamed_step(M, "gfx1200", conf, rows, 77, 10, 8, (3, 1))
    assert not slow["hidden"]
    assert slow["step_s"] > slow["resident_step_s"] + slow["streamed"] * (slow["copy_s"] - slow["block_compute_s"]) - 1e-9
    # the block compute is the model's own step: all 42 blocks plus the rest give the step
    res, _ = M.run("portable", None, 77, 10)
    fast = S.streamed_step(M, "gfx1200", conf, rows, 77, 10, 8, (4, 16))
    assert abs(fast["resident_step_s"] - res["gfx1200"]["step_s"]) < 1e-9


def test_a_card_that_holds_every_block_streams_nothing():
    s = S.streamed_step(M, "gfx1200", M.CONFIGS["portable"], portable_rows(), 77, 10, 16, (4, 16))
    assert s["resident"] == 42 and s["streamed"] == 0
    assert abs(s["step_s"] - s["resident_step_s"]) < 1e-12


def test_slower_compute_hides_more():
    rows = portable_rows()
    conf = M.CONFIGS["portable"]
    plain = S.streamed_step(M, "gfx1200", conf, rows, 77, 10, 8, (4, 8))
    slow = S.streamed_step(M, "gfx1200", conf, rows, 77, 10, 8, (4, 8), factors={"gemm": 2.0, "attention": 4.0})
    assert slow["block_compute_s"] > plain["block_compute_s"]
    assert slow["copy_s"] == plain["copy_s"]


def test_the_rx7600_is_modelled_with_its_own_figures():
    S.ensure_targets(M)
    t = M.SPECS["gfx1102"]
    assert t["vram_gb"][0] == 8 and t["units"][0] == 32
    assert t["regs_per_simd"][0] == 1024  # gfx1102 lacks gfx1100's larger register file
    for key, (value, source) in t.items():
        assert source in M.SOURCES, key
    lines = S.report_lines(M, "portable", portable_rows(), 77, 10)
    assert any(l.startswith("RX 7600") and "PCIe 4.0 x8 " in l for l in lines)
    assert not any(l.startswith("RX 7600") and "x16" in l for l in lines)  # its link has 8 lanes
    assert any(l.startswith("RX 9060 XT 8 GB") and "PCIe 4.0 x16" in l for l in lines)
