#!/usr/bin/env python3
"""What the device LoRA merge (kernels/lora_merge.hip, docs/loras.md) should cost on each Radeon of
bench/amd_model.py (and the H200 for calibration): a rank-R low-rank LoRA over every linear of the
full DiT's 42 blocks (q, k, v, o [3072, 3072], ffn_up_gate [16384, 3072], ffn_down [3072, 8192]:
252 weights, 4.76 G values, over 99% of the DiT; the fixed part's 17 small linears are left out).

    python3 bench/amd_lora_merge.py [--rank R] [--pcie-gbs G]

Per weight [out, in] the kernel is one launch that
  reads and writes W once (bf16: 4 bytes a value) and reads the factors (f32, (out + in)·R·4 bytes);
  issues VALU_PER_MAC instructions per multiply-add, out·in·R of them: the product and the sum
  are rounded apart (no FMA, so the host reference replays it bit for bit), and the k loop of the
  gfx1100 code object (check_device's clang-19 build) holds 15 VALU instructions for a k's 8
  multiply-adds (8 products, 8 sums, some dual-issued, the address step), beside 2 LDS reads of
  up's 8 values and 1 vector load of down's;
so it takes max(DRAM bytes at the row kernels' efficiency, VALU work at one wave instruction per
SIMD per clock, no dual issue) plus the launch gap and the engine's two synchronisations around it
(its timing). The factors cross the bus once (host f32 copies, uploaded: --pcie-gbs); a streamed
block's weights twice more (the last line). The host
side (reading the file, widening bf16 factors to f32) is not modelled. Figures: amd_model.SPECS.
Python standard library only."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import amd_model  # noqa: E402

DIM, FFN, BLOCKS = 3072, 8192, 42
BLOCK_LINEARS = [(DIM, DIM)] * 4 + [(2 * FFN, DIM), (DIM, FFN)]
SYNC_US = 10.0  # a stream synchronisation with nothing left to run (assumed)
VALU_PER_MAC = 15 / 8  # the k loop of kernels/lora_merge.hip on gfx1100 (see above)


def merge_seconds(t, rank, pcie_gbs):
    spec = lambda k: amd_model.spec(t, k)  # noqa: E731
    bw = spec("dram_gbs") * 1e9 * amd_model.ROW_EFFICIENCY
    lanes = spec("units") * spec("simds_per_unit") * spec("valu_lanes_per_simd_clk") * spec("clock_ghz") * 1e9
    launch = spec("launch_us") * 1e-6 + 2 * SYNC_US * 1e-6
    total = dict(dram=0.0, valu=0.0, kernel=0.0, bus=0.0, values=0)
    for out, inp in BLOCK_LINEARS * BLOCKS:
        factors = (out + inp) * rank * 4
        dram = (out * inp * 4 + factors) / bw
        valu = out * inp * rank * VALU_PER_MAC / lanes
        total["dram"] += dram
        total["valu"] += valu
        total["kernel"] += max(dram, valu) + launch
        total["bus"] += factors / (pcie_gbs * 1e9)
        total["values"] += out * inp
    total["all"] = total["kernel"] + total["bus"]
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", type=int, default=64)
    ap.add_argument("--pcie-gbs", type=float, default=25.0, help="host-to-device rate of the factors' upload (PCIe 4.0 x16)")
    a = ap.parse_args()
    print(f"rank-{a.rank} LoRA over the DiT's {len(BLOCK_LINEARS) * BLOCKS} block linears "
          f"({sum(o * i for o, i in BLOCK_LINEARS) * BLOCKS / 1e9:.2f} G values), factors over the bus at {a.pcie_gbs:g} GB/s")
    print(f"{'target':9} {'card':28} {'DRAM s':>8} {'VALU s':>8} {'kernels s':>10} {'bus s':>7} {'merge s':>8}  bound")
    for t in amd_model.AMD_TARGETS + ("h200",):
        m = merge_seconds(t, a.rank, a.pcie_gbs)
        bound = "VALU" if m["valu"] > m["dram"] else "DRAM"
        print(f"{t:9} {amd_model.spec(t, 'name'):28} {m['dram']:8.3f} {m['valu']:8.3f} {m['kernel']:10.3f} "
              f"{m['bus']:7.3f} {m['all']:8.3f}  {bound}")
    values = sum(o * i for o, i in BLOCK_LINEARS) * BLOCKS
    print(f"a streamed block's weights also cross the bus twice (uploaded, merged, downloaded into the pinned "
          f"image's source): {values * 4 / (a.pcie_gbs * 1e9) / BLOCKS:.3f} s a block, "
          f"{values * 4 / (a.pcie_gbs * 1e9):.2f} s were all {BLOCKS} streamed")


if __name__ == "__main__":
    main()
