"""The benchmark's reading of moss-infer-hip's progress lines and its streaming budget
(no GPU, no torch: python3 -m pytest bench/tests)."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mossbench.engine import RESERVE_GIB, budget_for_resident, parse_log, step_seconds  # noqa: E402
from mossbench.gpu_memory import MemoryPoller  # noqa: E402

LOG = """device 0: NVIDIA H200 (sm_90, 139.8 GiB)
kernels: gemm wmma, attention flash
memory plan: 42 of 42 DiT blocks resident; peaks: text encoder 1.85 GiB, DiT 12.34 GiB, VAE 1.70 GiB (budget 139.00 GiB)
text encoder
denoise 1/4 0.41
denoise 2/4 0.25
denoise 3/4 0.26
denoise 4/4 0.25
vae
done: text encoder 0.93 s, dit load 3.10 s, denoise 1.17 s (4 steps), vae 0.07 s, total 6.20 s; seed 42; 42 of 42 DiT blocks resident
"""


def stamped(text, gaps):
    t, out = 100.0, []
    for line, g in zip(text.splitlines(), gaps):
        t += g
        out.append((t, line + "\n"))
    return out


def test_parse_gpu_log():
    gaps = [0, 0, 0, 0.1, 5.0, 0.250, 0.260, 0.250, 0.01, 0.2]
    ev = parse_log(stamped(LOG, gaps))
    assert ev["plan"] == {"resident_blocks": 42, "total_blocks": 42, "te_peak_gib": 1.85, "dit_peak_gib": 12.34,
                          "vae_peak_gib": 1.70, "budget_gib": 139.0}
    assert ev["done"]["text_encoder_s"] == 0.93 and ev["done"]["dit_load_s"] == 3.10
    assert ev["done"]["vae_s"] == 0.07 and ev["done"]["resident_blocks"] == 42
    assert [d["step"] for d in ev["denoise"]] == [1, 2, 3, 4]
    s = step_seconds(ev["denoise"])
    assert math.isclose(s["wall_gap_s"], 0.250, abs_tol=1e-9)  # median of the gaps after step 1
    assert s["printed_s"] == 0.25 and s["first_step_printed_s"] == 0.41
    assert ev["t_vae"] is not None and ev["t_text_encoder"] is not None


def planner_resident(budget, base_no_reserve, blocks, block, staging):
    """hip/src/pipeline/planner.cpp plan_memory's block count, in GiB."""
    base = base_no_reserve + RESERVE_GIB
    if base + blocks * block <= budget:
        return blocks
    return min(blocks, int((budget - base - 2 * block - staging) // block))


def test_budget_leaves_the_asked_blocks():
    block = 0.2109
    for staging in (0.0, 0.114):  # small models pack nothing; the real one its FFN matrices
        for fixed in (2.0, 3.7, 9.1):
            for want in (2, 17):
                peak = round(fixed + 42 * block, 2)  # printed with two decimals
                b = budget_for_resident(peak, 42, block, want)
                assert planner_resident(b, fixed, 42, block, staging) == want


class FakePoller(MemoryPoller):
    """Fixed samples (time, bytes) instead of a device's."""

    def __init__(self, samples):
        super().__init__()
        self.samples, self.source = samples, "fake"


def test_stage_memory_windows():
    from mossbench.engine import EngineRun
    G = 1 << 30
    lines = stamped(LOG, [0, 0, 0, 0.1, 5.0, 0.250, 0.260, 0.250, 0.01, 0.2])
    t_te = lines[3][0]
    t_vae = lines[8][0]
    # The text encoder's memory is still held just after its time (its release comes after), and
    # the last sample before the "vae" line still shows the DiT's.
    samples = [(99.0, 1 * G), (t_te + 0.5, 3 * G), (t_te + 1.0, 14 * G), (t_te + 2.0, 12 * G), (t_vae - 0.001, 8 * G),
               (t_vae + 0.01, 5 * G), (t_vae + 0.03, 6.5 * G), (t_vae + 1.0, 1 * G)]
    run = EngineRun("moss-infer-hip", "model", [], FakePoller(samples))
    run.lines, run.idle_bytes, run.t_start, run.t_end = lines, 1 * G, 99.5, t_vae + 0.5
    m = run.summary()["memory_gib"]
    assert m["text_encoder"] == 2.0   # window [line, line + 0.93 s]
    assert m["dit"] == 11.0           # from the load's start (5.0 - 0.41 - 3.10 s after the line) to the last step
    assert m["vae"] == 5.5 and m["vae_above_start"] == 1.5  # above the window's lowest sample
