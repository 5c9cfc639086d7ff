"""The streamed denoise step on 8 GB Radeons (issue 33): DiT blocks over PCIe beside the compute.

An 8 GB card cannot hold the DiT's 42 blocks (0.21 GiB each, 8.8 GiB) beside its activations, so the
engine keeps R of them resident and copies each other block, every step, into one of two device slots
while the block before it computes (docs/memory_plan.md sections 3-4). This models that order of work:

  resident R    the planner's rule (hip/src/pipeline/planner.cpp, docs/memory_plan.md section 3):
                R = min(N, (budget - (VAE + fixed + activations + reserve) - (2 slots + staging)) / block)
  bytes a block crosses the bus
                the attention projections raw, the FFN matrices packed (at most 13 bits a value:
                docs/memory_plan.md section 4); once per step, both rows (cond, uncond) use it
  copy          those bytes at the link's rate times the fraction of it the H200 measured (55 GB/s
                on PCIe 5.0 x16)
  unpack        on the device before the block computes: the packed FFN read, bf16 written, at the
                row kernels' share of DRAM bandwidth
  step          rest + R * c + (N - R) * max(c + unpack, copy), c = one block's compute (the model's
                DiT step, per block), since block p+1's copy runs while block p unpacks and computes
                and the next step's first streamed block is copied during the resident blocks.

Streaming hides behind compute when copy <= c + unpack. The functions take the amd_model module as their
first argument (amd_model imports this file). Standard library only.
"""
import math

GIB = 2 ** 30

# The real model's stage sizes as the planner's tests use them (hip/tests/unit/stage_sizes_fixture.h,
# real_like_stage_sizes; staging: hip/tests/unit/test_planner.cpp, "the real model's FFN matrices at 13/16").
STAGES = dict(blocks=42, block_gib=0.21, fixed_gib=0.61, activation_gib=0.80, vae_gib=0.10, staging_gib=0.114,
              reserve_gib=0.5)  # reserve: hip/src/pipeline/planner.h kReserveBytes
PACKED_BITS = 13  # a packed FFN value travels in at most 13 bits (docs/memory_plan.md section 4)
PCIE_GBS_PER_LANE = {3: 0.985, 4: 1.969, 5: 3.938}  # 8, 16, 32 GT/s with 128b/130b encoding
LINK_EFFICIENCY = 55.0 / (16 * PCIE_GBS_PER_LANE[5])  # H200: 55 GB/s host-to-device on PCIe 5.0 x16
DESKTOP_GIB = 0.5  # ASSUMPTION: VRAM the display and the driver hold on a desktop card

# The 8 GB cards: target (amd_model SPECS key), memory, the widest link the card has.
CARDS = (
    dict(card="RX 7600", target="gfx1102", vram_gib=8, link=(4, 8)),
    dict(card="RX 9060 XT 8 GB", target="gfx1200", vram_gib=8, link=(5, 16)),
)
BUSES = ((4, 8), (4, 16))  # the links the issue asks about (a card's own link caps the lanes)

# The RX 7600 (Navi 33) for the targets table, when amd_model does not have it yet.
RX7600_SOURCE = ("Radeon RX 7600: 32 CUs, 2655 MHz boost, 2 MB L2, 32 MB Infinity Cache, 8 GB GDDR6 128-bit 18 Gbps "
                 "= 288 GB/s, https://fpsbench.com/compare/gpu/amd-radeon-rx-7600-vs-intel-hd-graphics-p4600 ; "
                 "PCIe 4.0 x8: https://mezha.media/en/2023/05/19/the-key-parameters-of-radeon-rx-7600-video-cards-have-been-confirmed/")


GFX1102_VGPRS = ("LLVM AMDGPU.td (llvm-project commit e58b116843315085363207f0c1be841b4da1b496): gfx1102's "
                 "FeatureISAVersion11_0_2 lacks FeatureGFX11FullVGPRs, so 1024 wave32 VGPRs per SIMD, not 1536")


def ensure_targets(model):
    """Adds the RX 7600 to amd_model's SPECS when that table has no gfx1102 row (its RDNA3 figures,
    L2 bandwidth derived as for the other RDNA3 parts: 2 shader engines x 4 channels x 64 B)."""
    if "gfx1102" not in model.SPECS:
        model.SOURCES.setdefault("amd-7600", RX7600_SOURCE)
        model.SOURCES.setdefault("llvm-gfx1102-vgprs", GFX1102_VGPRS)
        figures = model.rdna_target(3, "amd-7600", name="Radeon RX 7600", units=32, clock_ghz=2.655, l2_mb=2,
                                    l2_bytes_per_clk=(512, "l2-bw-derived"), mall_mb=32, dram_gbs=288, vram_gb=8)
        figures["regs_per_simd"] = (1024, "llvm-gfx1102-vgprs")
        model.SPECS["gfx1102"] = figures


def rows_for(target, rows):
    """check_device rows for target; a gfx11 target the table lacks borrows gfx1100's (the same source
    compiled for the same ISA: its registers per lane are bounded alike, its occupancy is not)."""
    if any(r["arch"] == target for r in rows) or not target.startswith("gfx11"):
        return rows
    return rows + [dict(r, arch=target) for r in rows if r["arch"] == "gfx1100"]


def resident_blocks(vram_gib, desktop_gib=DESKTOP_GIB, s=STAGES):
    """The planner's resident count for a card of vram_gib with desktop_gib taken by others."""
    budget = vram_gib - desktop_gib
    base = s["vae_gib"] + s["fixed_gib"] + s["activation_gib"] + s["reserve_gib"]
    slots = 2 * s["block_gib"] + s["staging_gib"]
    if base + s["blocks"] * s["block_gib"] <= budget:
        return s["blocks"]
    return max(0, min(s["blocks"], math.floor((budget - base - slots) / s["block_gib"] + 1e-9)))


def block_bus_bytes(model):
    """Bytes one streamed block moves over the bus: q/k/v/o raw, the FFN matrices packed."""
    d, f = model.DIT["dim"], model.DIT["ffn"]
    attention = 4 * d * d * 2
    ffn_values = 2 * f * d + f * d  # up|gate, down
    return attention + ffn_values * PACKED_BITS / 8, ffn_values


def link_gbs(gen, lanes):
    return PCIE_GBS_PER_LANE[gen] * lanes * LINK_EFFICIENCY


def block_compute_s(model, kernels, factors=None):
    """(mean compute of one DiT block, the rest of the step) from the step's kernels: the block
    kernels are the ones tagged [stacked] / [cond only] by dit_step."""
    factors = factors or {}
    scale = lambda k: k["total_ms"] * factors.get(k["family"], 1.0) / 1e3
    blocks = sum(scale(k) for k in kernels if "[stacked]" in k["name"] or "[cond only]" in k["name"])
    rest = sum(scale(k) for k in kernels) - blocks
    return blocks / model.DIT["layers"], rest


def streamed_step(model, target, conf, rows, tc, tu, vram_gib, bus, factors=None, desktop_gib=DESKTOP_GIB):
    """One streamed 1024x1024 step on `target` with vram_gib of memory over PCIe bus (gen, lanes)."""
    kernels = model.dit_step(target, conf, rows_for(target, rows), tc, tu)
    c, rest = block_compute_s(model, kernels, factors)
    n = model.DIT["layers"]
    r = resident_blocks(vram_gib, desktop_gib)
    bus_bytes, ffn_values = block_bus_bytes(model)
    copy = bus_bytes / (link_gbs(*bus) * 1e9)
    unpack = ffn_values * (PACKED_BITS / 8 + 2) / (model.spec(target, "dram_gbs") * 1e9 * model.ROW_EFFICIENCY)
    period = max(c + unpack, copy)
    return dict(target=target, resident=r, streamed=n - r, block_compute_s=c, copy_s=copy, unpack_s=unpack,
                resident_step_s=rest + n * c, step_s=rest + r * c + (n - r) * period, hidden=copy <= c + unpack,
                bus_gbs=link_gbs(*bus), bus_mb=bus_bytes / 1e6)


def report_lines(model, config_name, rows, tc, tu, factors_of=None):
    """The streamed-step table for the 8 GB cards; factors_of(t) gives calibration factors (or None)."""
    ensure_targets(model)
    conf = model.CONFIGS[config_name]
    out = [f"(resident blocks: the planner's rule at {8 - DESKTOP_GIB:.1f} of 8 GiB free; a block crosses the bus "
           f"once a step, {block_bus_bytes(model)[0] / 1e6:.0f} MB with its FFN packed; links at "
           f"{LINK_EFFICIENCY:.0%} of their rate, as the H200 measured)"]
    for card in CARDS:
        t = card["target"]
        for bus in sorted({(min(gen, card["link"][0]), min(lanes, card["link"][1])) for gen, lanes in BUSES}):
            for label, factors in (("plain", None), ("Radeon-calibrated", factors_of(t) if factors_of else None)):
                if label != "plain" and not factors:
                    continue
                s = streamed_step(model, t, conf, rows, tc, tu, card["vram_gib"], bus, factors)
                out.append(f"{card['card']:16s} ({t}) PCIe {bus[0]}.0 x{bus[1]:<2d} {label:17s}: {s['resident']} of "
                           f"{model.DIT['layers']} blocks resident; copy {s['copy_s'] * 1e3:5.1f} ms a block at "
                           f"{s['bus_gbs']:4.1f} GB/s against compute {s['block_compute_s'] * 1e3:5.1f} + unpack "
                           f"{s['unpack_s'] * 1e3:4.1f} ms: {'hidden' if s['hidden'] else 'NOT hidden'}; step "
                           f"{s['step_s']:.2f} s streamed, {s['resident_step_s']:.2f} s if all were resident")
    return out
