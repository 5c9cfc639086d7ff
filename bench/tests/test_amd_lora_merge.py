"""bench/amd_lora_merge.py: the LoRA merge's cost model adds up the traffic and the work it states."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import amd_lora_merge as m  # noqa: E402
import amd_model  # noqa: E402


def test_bytes_and_work_follow_the_shapes():
    values = sum(o * i for o, i in m.BLOCK_LINEARS) * m.BLOCKS
    assert values == 42 * (4 * 3072 * 3072 + 16384 * 3072 + 3072 * 8192)
    t = "gfx1100"
    r64, r128 = m.merge_seconds(t, 64, 25.0), m.merge_seconds(t, 128, 25.0)
    bw = amd_model.spec(t, "dram_gbs") * 1e9 * amd_model.ROW_EFFICIENCY
    factors = sum((o + i) * 64 * 4 for o, i in m.BLOCK_LINEARS) * m.BLOCKS
    assert abs(r64["dram"] - (values * 4 + factors) / bw) < 1e-9
    assert abs(r128["valu"] / r64["valu"] - 2.0) < 1e-9  # the work is linear in the rank
    assert abs(r64["bus"] - factors / 25e9) < 1e-12


def test_each_launch_costs_at_least_its_larger_bound():
    for t in amd_model.AMD_TARGETS + ("h200",):
        r = m.merge_seconds(t, 64, 25.0)
        assert r["kernel"] >= max(r["dram"], r["valu"])
        assert r["all"] == r["kernel"] + r["bus"]
