#!/usr/bin/env python3
"""Analytic cost model of moss-infer-hip's kernels on RDNA3/RDNA4 (and, for calibration, the H200).

    python3 bench/amd_model.py [--config portable|candidate|seed|int8|all] [--check-device-table FILE]
                               [--json OUT] [--prompt-tokens N] [--negative-tokens N] [--quiet]

The default config is the code as it is (`portable`); `candidate` is a design that is not code and
`seed` the kernels before the redesign, `int8` issue 49's INT8 ConvRot DiT: the int8 GEMM as written,
the activations' quantization where the kernels are being built to put it (CONFIG_LABELS;
bench/amd_model.md section 6). Each step is printed plain, H200-calibrated
(the same kernels measured on an H200) and Radeon-calibrated (published RDNA3/RDNA4 kernels of the
same build: amd_calibration.py), and the streamed step of the 8 GB cards follows (amd_streaming.py).

Method, figures and their sources: bench/amd_model.md. Python standard library only.

Each kernel launch is reduced to a handful of bounds, each the time one resource needs for the
launch's whole traffic at its peak rate:
  mma      matrix instructions (+ VALU work that cannot co-issue with them on RDNA) at peak issue
  latency  the same work slowed by the k-step latency that the resident waves cannot cover
           (occupancy from the code object's VGPR / LDS use, check_device's table), and by the
           last partial round of workgroups
  l2       bytes the tiles pull from L2 at the L2 bandwidth
  lds      bytes written to and read from LDS (fragment reads included) at the LDS bandwidth
  dram     compulsory bytes, plus re-reads of operands that do not stay in L2 / Infinity Cache
  valu     (non-matrix kernels) vector ALU work
The launch takes max(bounds) + a fixed launch gap; the bound that gives the max is "the" bound.

CONFIGS below is the one table of kernel configurations; every entry names the code it mirrors.
"""
import argparse
import json
import math
import os
import re
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
# check_device tables: of the seed's kernels (before the redesign), and of today's portable kernels.
DEFAULT_TABLE = os.path.join(HERE, "results", "2026-12-01-check-device-table.txt")
# The portable kernels on the ten targets of issue 31 (nine from clang-19, with occupancy; gfx1153,
# which clang-19 does not know, is modelled by none of the device classes). The 2026-12-01 table
# of the three first targets gives the same rows for them.
PORTABLE_TABLE = os.path.join(HERE, "results", "2026-12-05-session18", "check-device-table-clang19.txt")
# Issue 49 (session 24): the int8 GEMM (int8_gemm.hip) and the attention after its VALU change, nine
# targets, clang-19; read before PORTABLE_TABLE (the first row that matches wins).
SESSION24_TABLE = os.path.join(HERE, "results", "2026-12-07-session24", "check-device-table-clang19.txt")
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import amd_calibration  # noqa: E402  (published Radeon measurements; takes this module as an argument)
import amd_streaming  # noqa: E402  (the streamed step of the 8 GB cards; likewise)

# ---- sources -------------------------------------------------------------------------------------
SOURCES = {
    "amd-7900xtx": "AMD RX 7900 XTX specification table as printed in Guru3D's review, "
                   "https://guru3d.com/review/xfx-radeon-rx-7900-xtx-magair-review/page-4 "
                   "(96 CUs, 2.5 GHz boost, 96 MB Infinity Cache, 384-bit 20 Gbps = 960 GB/s, "
                   "3.5 TB/s 'effective' cache bandwidth)",
    "amd-9060xt": "RX 9060 XT 16 GB: TechPowerUp review https://techpowerup.com/review/asus-radeon-rx-9060-xt-prime-oc-16-gb "
                  "and TweakTown https://www.tweaktown.com/news/105296/amd-confirms-radeon-rx-9060-xt-8gb-and-16gb-models-coming/index.html "
                  "(32 CUs, 3.13 GHz boost, 128-bit 20 Gbps GDDR6 = 320 GB/s, PCIe 5.0 x16)",
    "navi44-caches": "Navi 44: 4 MB L2 and 32 MB Infinity Cache, https://usnhub.com/hardware-releases/xfx-swift-radeon-rx-9060-xt-16gb-oc-triple-fan-gaming-edition-review",
    "amd-9070xt": "RX 9070 XT: 64 CUs, 2.97 GHz boost, 256-bit 20 Gbps GDDR6 (640 GB/s), "
                  "https://pocketmags.com/it/linux-format-magazine/june-2025/articles/inside-the-dna-of-amd ; "
                  "64 MB Infinity Cache: AMD product page https://www.amd.com/en/products/graphics/desktops/radeon/9000-series/amd-radeon-rx-9070xt.html (not in the search store; figure widely reported)",
    "amd-7800xt": "RX 7800 XT (Navi 32, gfx1101): AMD's announcement table as printed by Sportskeeda, "
                  "https://www.sportskeeda.com/gaming-tech/news-amd-radeon-rx-7800-xt-specs-prices-performance "
                  "(60 CUs, 2430 MHz boost, 16 GB GDDR6, 256-bit 19.5 Gbps, 64 MB Infinity Cache); 624 GB/s: "
                  "https://www.gpu-monkey.com/en/gpu-amd_radeon_rx_7800_xt ; 4 MB L2: https://cputronic.com/gpu/amd-radeon-rx-7800-xt",
    "amd-7600": "RX 7600 (Navi 33, gfx1102): launch report https://propakistani.pk/2023/05/25/amds-new-radeon-rx-7600-gpu-starts-at-only-269/ "
                "(32 CUs, 2655 MHz boost, 8 GB GDDR6, 128-bit 18 Gbps = 288 GB/s, 32 MB Infinity Cache); 2 MB L2: "
                "https://fpsbench.com/compare/gpu/amd-radeon-rx-7600-vs-intel-hd-graphics-p4600",
    "amd-8060s": "Radeon 8060S (Strix Halo, gfx1151): Chips and Cheese's Strix Halo overview as summarised at "
                 "https://hb.int2inf.com/s/item/BVTuG35DLdEWWj1txUQHtr-AMD-Strix-Halo-APU-overview (40 CUs, 2.9 GHz boost, "
                 "32 MB Infinity Cache, 256-bit LPDDR5X-8000 = 256 GB/s, shared with the CPU; about 215 GB/s measured by "
                 "https://raw.githubusercontent.com/lhl/strix-halo-testing/main/llm-bench/README.md); up to 96 GB of the 128 "
                 "as device memory: https://rocm.docs.amd.com/en/latest/how-to/system-optimization/strixhalo.html",
    "amd-890m": "Radeon 890M (Strix Point, gfx1150): Chips and Cheese https://chipsandcheese.com/2024/08/24/amds-radeon-890m-strix-points-bigger-igpu "
                "(8 WGPs = 16 CUs, 2 MB L2, no Infinity Cache, LPDDR5(X)-7500 on a 128-bit bus = 120 GB/s shared with the CPU, "
                "'the cut down variant of RDNA 3.5 with 128 KB vector register files'); 2.9 GHz boost: "
                "https://fpsbench.com/compare/gpu/amd-radeon-890m-vs-amd-radeon-hd-6850-x2",
    "amd-780m": "Radeon 780M (Phoenix, gfx1103): fpsbench https://fpsbench.com/compare/gpu/amd-radeon-780m-vs-intel-hd-graphics-p4600 "
                "(12 CUs, 2700 MHz boost, 2 MB L2, no Infinity Cache, RDNA 3.0, memory system shared)",
    "amd-860m": "Radeon 860M (Krackan Point, gfx1152): fpsbench https://fpsbench.com/compare/gpu/amd-radeon-rx-6650m-xt-vs-amd-radeon-860m "
                "(8 CUs, 3000 MHz boost, 1 MB L2, no Infinity Cache, RDNA 3.5, memory system shared)",
    "apu-dram-assumed": "ASSUMPTION: the laptop APUs' shared memory taken as the 890M's 128-bit LPDDR5X-7500, 120 GB/s "
                        "(amd-890m); their spec pages say 'system dependent'",
    "apu-l2-assumed": "ASSUMPTION: Strix Halo's GPU L2 taken as Strix Point's 2 MB (amd-890m); no figure found in the search store",
    "llvm-vgprs-small": "1024 wave32 VGPRs per SIMD (128 KB) and allocation granule 16 on the gfx11 targets without "
                        "FeatureGFX11FullVGPRs (gfx1102, gfx1103, gfx1150, gfx1152, gfx1153): LLVM's AMDGPU.td gives the "
                        "feature to gfx1100, gfx1101 and gfx1151 alone (quoted at find_string 'FeatureGFX11FullVGPRs'); "
                        "measured: a 105-VGPR kernel gets 9 waves/SIMD there and 12 on gfx1100/gfx1101/gfx1151 "
                        "(clang-19 -Rpass-analysis=kernel-resource-usage, docs/amd_targets.md); Chips and Cheese calls "
                        "gfx1150's file 128 KB (amd-890m)",
    "cnc-rdna4": "Chips and Cheese, 'AMD's RDNA4 architecture': L2 1 MB per shader engine on RDNA3 (6 MB on the 7900 XTX), "
                 "banks per L2 slice doubled on RDNA4, 8 MB on the 9070 XT, https://chipsandcheese.com/p/amds-rdna4-architecture-video",
    "calc-rdna3": "AMD matrix instruction calculator, RDNA3 v_wmma_f32_16x16x16_bf16: 32 cycles, 1024 FLOPs/WGP/clk, "
                  "no VALU co-execution (quoted in docs/matrix_layouts.md section 2.1)",
    "calc-rdna4": "AMD matrix instruction calculator, RDNA4 v_wmma_f32_16x16x16_bf16: 16 cycles, 2048 FLOPs/WGP/clk, "
                  "no VALU co-execution (docs/matrix_layouts.md section 3.1)",
    "rdna3-iu8": "RDNA3 (gfx11) v_wmma_i32_16x16x16_iu8 issues at the bf16 WMMA's rate (32 cycles, 512 ops/CU/clk): "
                 "shared/spec/research/moss_files.md (INT8 ConvRot section, last bullet); AMD's RDNA3 ISA lists the iu8 "
                 "WMMA beside the f16/bf16 ones with the same 16x16x16 shape",
    "rdna4-iu8": "RDNA4 (gfx12) int8 WMMA (v_wmma_i32_16x16x16_iu8) at twice the dense bf16 rate: RX 9070 XT 195 TFLOPS "
                 "dense fp16 against 389 TOPS dense int8 (shared/spec/research/moss_files.md, INT8 ConvRot section); "
                 "AMD GPUOpen, 'Using the Matrix Cores of AMD RDNA 4 architecture GPUs' (its FLOPS/clock/CU table by "
                 "type; summarised at https://news.cgast.org/news/18287, the table itself not in the search store)",
    "h200-int8": "NVIDIA H200 SXM: dense INT8 1979 TOPS against dense bf16 989 TFLOPS (Hopper datasheet figures, the same "
                 "for H100 SXM): twice the rate",
    "sageattention": "SageAttention (Zhang et al. 2024, https://arxiv.org/abs/2410.02367): QK^T in int8 with Q and K "
                     "quantized per block of rows after K is smoothed (its mean over the tokens subtracted, which no "
                     "softmax row sees), P.V kept in 16-bit floats; the idea bench/amd_model.md section 6 models",
    "rdna4-fp8-assumed": "ASSUMPTION: RDNA4's fp8 WMMA (v_wmma_f32_16x16x16_fp8_fp8, gfx12 only: MLIR's AMDGPU dialect "
                         "lists F8E4M3FN/F8E5M2 WMMA operands, https://github.com/llvm/llvm-project/pull/164920) at the "
                         "int8 rate, twice bf16's; gfx11 has no fp8 WMMA",
    "layout-dup": "gfx11 wave32 WMMA needs A/B in both half-waves (8 VGPRs per operand), gfx12 does not (4 VGPRs): "
                  "docs/matrix_layouts.md sections 2-3; so a gfx11 fragment read moves 1024 bytes, a gfx12 one 512",
    "llvm-vgprs": "LLVM AMDGPU getTotalNumVGPRs: 1536 wave32 VGPRs per SIMD with FeatureGFX11FullVGPRs (gfx1100), "
                  "allocation granule 24 (https://forums.anandtech.com/threads/speculation-rdna3-cdna2-architectures-thread.2589999/page-67, "
                  "https://www.phoronix.com/news/AMD-RDNA3-More-VGPRs); the same granule and 1536 on gfx12 (occupancy steps at "
                  "96/120/144 VGPRs read off llc -mcpu=gfx1201, a public test file found with find_string 'FeatureGFX11FullVGPRs')",
    "rdna-lds": "LDS: 128 KB per WGP (two CUs) in WGP mode, 64 KB per workgroup: mesa radv commit 'It's 128KB per CU in WGP' "
                "https://android.googlesource.com/platform/external/mesa3d/+/568f1504098%5E%21/ ; 64 KB addressable per "
                "workgroup: LLVM getAddressableLocalMemorySize (65536 for gfx10+)",
    "rdna-lds-bw": "DERIVED: LDS 32 banks x 4 bytes per clock per CU (RDNA ISA guides' LDS description; 64 banks per WGP) = 128 B/clk/CU",
    "rdna-waves": "16 wave32 slots per SIMD: LLVM reports 'Occupancy [waves/SIMD]: 16' for a 73-VGPR kernel "
                  "(docs/toolchain.md, resource-usage remark)",
    "rdna-valu": "VALU: one wave32 instruction per SIMD per clock (32 lanes), two SIMDs per CU; "
                 "ROCm profiler docs: 128 FP32 FLOPs/CU/clk single issue, https://rocm.docs.amd.com/projects/rocprofiler-compute/en/docs-7.14.0/conceptual/rdna/wgp.html",
    "l2-bw-derived": "UNSOURCED, DERIVED: no public L2 bandwidth figure was found. Taken as 4 L2 channels per shader "
                     "engine x 64 B/clk on RDNA3 (6 SEs: 1536 B/clk) and 128 B/clk per channel on RDNA4 (banks per slice "
                     "doubled, cnc-rdna4): 2 SEs x 4 x 128 = 1024 B/clk (9060 XT), 4 SEs x 4 x 128 = 2048 B/clk (9070 XT); "
                     "RDNA3 boards by their shader engines: 3 (7800 XT) 768, 2 (7600, 8060S) 512, 1 (890M) 256 B/clk. "
                     "--l2-scale tests the sensitivity",
    "latency-assumed": "ASSUMPTION: a k-step whose loads are waited for before the multiply exposes ~600 core clocks "
                       "(L2 hit ~250-300 clk, LDS store, two barriers, issue); used for all targets",
    "launch-assumed": "ASSUMPTION: 4 us between back-to-back kernels on one stream (AMD), 2.5 us (H200)",
    "h200-nvidia": "NVIDIA H200 SXM: 132 SMs, 141 GB HBM3e at 4.8 TB/s, https://aiwiki.ai/wiki/nvidia_h200/raw and "
                   "https://www.aiminingco.com/gpu/h200/specs ; 50 MB L2, 228 KB shared memory per SM, 64K registers per SM "
                   "(Hopper architecture whitepaper)",
    "h200-peak-measured": "bf16 matmul peak measured in the same run as the step time: 745.2 TFLOP/s, "
                          "bench/results/2026-11-30-h200-s5.md; the clock under the 700 W cap falls to 1.4-1.8 GHz (README)",
    "fa3-mma-sync": "FlashAttention-3 (Shah et al. 2024, https://arxiv.org/abs/2407.08608): mma.sync reaches about 2/3 of "
                    "Hopper's tensor-core peak; wgmma is needed for the rest",
    "h200-smem-bw": "DERIVED: shared memory 32 banks x 4 B = 128 B/clk per SM",
    "h200-l2-assumed": "ASSUMPTION: H200 L2 bandwidth ~12 TB/s (no figure sourced here; the measured wgmma q/k/v/o GEMM, "
                       "700 TFLOP/s with 128x256x64 tiles pulling 48 KB per 4.2 MFLOP, implies at least 8.2 TB/s)",
    "h200-latency": "ASSUMPTION: same 600-clock exposed k-step latency as the AMD targets",
    "cache-fit": "MODEL RULE: an operand re-read by every raster group stays in cache when it fits in 3/4 of "
                 "L2 + Infinity Cache (H200: of L2)",
}

# ---- targets -------------------------------------------------------------------------------------
# Each figure: (value, source key). Derived peaks are computed, not stored.
# The AMD boards differ in their own figures (size, clock, caches, memory); the matrix unit and its
# register layout come with the generation, the rest is the same on every RDNA target.
RDNA_GENERATIONS = {
    3: {
        "mma_flops_per_unit_clk": (512, "calc-rdna3"),  # dense bf16 WMMA per CU
        "mma_clk": (32, "calc-rdna3"),                # cycles of one 16x16x16 WMMA on one SIMD
        "int8_rate": (1, "rdna3-iu8"),                # iu8 WMMA ops per bf16 WMMA flop, per clock
        "frag_dup": (2, "layout-dup"),
        "simds_per_unit": (2, "calc-rdna3"),
    },
    4: {
        "mma_flops_per_unit_clk": (1024, "calc-rdna4"),
        "mma_clk": (16, "calc-rdna4"),
        "int8_rate": (2, "rdna4-iu8"),
        "frag_dup": (1, "layout-dup"),
        "simds_per_unit": (2, "calc-rdna4"),
    },
}
RDNA_SHARED = {
    "regs_per_simd": (1536, "llvm-vgprs"),
    "reg_granule": (24, "llvm-vgprs"),
    "max_waves_per_simd": (16, "rdna-waves"),
    "lds_per_unit": (65536, "rdna-lds"),          # half of a WGP's 128 KB
    "lds_bytes_per_unit_clk": (128, "rdna-lds-bw"),
    "valu_lanes_per_simd_clk": (32, "rdna-valu"),
    "latency_clk": (600, "latency-assumed"),
    "launch_us": (4.0, "launch-assumed"),
}
# The order of an AMD target's figures (as --json writes them).
RDNA_FIGURES = ("name", "units", "clock_ghz", "mma_flops_per_unit_clk", "mma_clk", "int8_rate", "frag_dup", "simds_per_unit",
                "regs_per_simd", "reg_granule", "max_waves_per_simd", "lds_per_unit", "lds_bytes_per_unit_clk",
                "valu_lanes_per_simd_clk", "l2_mb", "l2_bytes_per_clk", "mall_mb", "dram_gbs", "vram_gb",
                "latency_clk", "launch_us")


def rdna_target(generation, sheet, **board):
    """The SPECS entry of an AMD board: its own figures (units: compute units, clock_ghz: boost clock),
    each a bare value from its spec sheet SHEET (a source key) or a (value, source) pair, then its
    generation's and the shared ones. A fresh dict: the tests change figures of one target."""
    own = {k: v if isinstance(v, tuple) else (v, sheet) for k, v in board.items()}
    figures = {**RDNA_GENERATIONS[generation], **RDNA_SHARED, **own}  # a board's own figures win
    assert set(figures) == set(RDNA_FIGURES), sorted(set(figures) ^ set(RDNA_FIGURES))
    return {k: figures[k] for k in RDNA_FIGURES}


L2_BW = "l2-bw-derived"
SPECS = {
    "gfx1100": rdna_target(3, "amd-7900xtx", name="Radeon RX 7900 XTX", units=96, clock_ghz=2.5,
                           l2_mb=(6, "cnc-rdna4"), l2_bytes_per_clk=(1536, L2_BW), mall_mb=96, dram_gbs=960, vram_gb=24),
    "gfx1101": rdna_target(3, "amd-7800xt", name="Radeon RX 7800 XT", units=60, clock_ghz=2.43,
                           l2_mb=4, l2_bytes_per_clk=(768, L2_BW), mall_mb=64, dram_gbs=624, vram_gb=16),
    "gfx1102": rdna_target(3, "amd-7600", name="Radeon RX 7600", units=32, clock_ghz=2.655,
                           l2_mb=2, l2_bytes_per_clk=(512, L2_BW), mall_mb=32, dram_gbs=288, vram_gb=8,
                           regs_per_simd=(1024, "llvm-vgprs-small"), reg_granule=(16, "llvm-vgprs-small")),
    "gfx1150": rdna_target(3, "amd-890m", name="Radeon 890M (Strix Point)", units=16, clock_ghz=2.9,
                           l2_mb=2, l2_bytes_per_clk=(256, L2_BW), mall_mb=0, dram_gbs=120, vram_gb=16,
                           regs_per_simd=(1024, "llvm-vgprs-small"), reg_granule=(16, "llvm-vgprs-small")),
    "gfx1151": rdna_target(3, "amd-8060s", name="Radeon 8060S (Strix Halo)", units=40, clock_ghz=2.9,
                           l2_mb=(2, "apu-l2-assumed"), l2_bytes_per_clk=(512, L2_BW), mall_mb=32, dram_gbs=256,
                           vram_gb=96),
    "gfx1200": rdna_target(4, "amd-9060xt", name="Radeon RX 9060 XT 16 GB", units=32, clock_ghz=3.13,
                           l2_mb=(4, "navi44-caches"), l2_bytes_per_clk=(1024, L2_BW), mall_mb=(32, "navi44-caches"),
                           dram_gbs=320, vram_gb=16),
    "gfx1201": rdna_target(4, "amd-9070xt", name="Radeon RX 9070 XT", units=64, clock_ghz=2.97,
                           l2_mb=(8, "cnc-rdna4"), l2_bytes_per_clk=(2048, L2_BW), mall_mb=64, dram_gbs=640, vram_gb=16),
    # Calibration target: the same method on the kernels measured in bench/results/2026-11-30-*.
    "h200": {
        "name": ("NVIDIA H200 SXM", "h200-nvidia"),
        "units": (132, "h200-nvidia"),
        "clock_ghz": (1.75, "h200-peak-measured"),   # mid of the 1.4-1.8 GHz seen under the power cap
        "mma_peak_tflops": (745.2, "h200-peak-measured"),
        "mma_sync_fraction": (2.0 / 3.0, "fa3-mma-sync"),
        "mma_clk": (8, "h200-peak-measured"),        # one 16x16x16 per sub-partition: 8192 / (4096/4) clk
        "int8_rate": (2, "h200-int8"),
        "frag_dup": (1, "h200-smem-bw"),
        "simds_per_unit": (4, "h200-nvidia"),
        "regs_per_simd": (512, "h200-nvidia"),        # 16384 registers per sub-partition / 32 lanes
        "reg_granule": (8, "h200-nvidia"),
        "max_waves_per_simd": (16, "h200-nvidia"),
        "lds_per_unit": (233472, "h200-nvidia"),
        "lds_bytes_per_unit_clk": (128, "h200-smem-bw"),
        "valu_lanes_per_simd_clk": (32, "h200-nvidia"),
        "l2_mb": (50, "h200-nvidia"),
        "l2_bytes_per_clk": (12.0e12 / 1.75e9, "h200-l2-assumed"),
        "mall_mb": (0, "h200-nvidia"),
        "dram_gbs": (4800, "h200-nvidia"),
        "vram_gb": (141, "h200-nvidia"),
        "latency_clk": (600, "h200-latency"),
        "launch_us": (2.5, "launch-assumed"),
    },
}
AMD_TARGETS = ("gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151", "gfx1200", "gfx1201")
# Two more release targets for the INT8 table (issue 49), not in the configs' tables: laptop APUs
# whose figures come from one spec listing each and whose memory is an assumption.
SPECS["gfx1103"] = rdna_target(3, "amd-780m", name="Radeon 780M (Phoenix)", units=12, clock_ghz=2.7, l2_mb=2,
                               l2_bytes_per_clk=(256, "l2-bw-derived"), mall_mb=0,
                               dram_gbs=(120, "apu-dram-assumed"), vram_gb=(16, "apu-dram-assumed"),
                               regs_per_simd=(1024, "llvm-vgprs-small"), reg_granule=(16, "llvm-vgprs-small"))
SPECS["gfx1152"] = rdna_target(3, "amd-860m", name="Radeon 860M (Krackan Point)", units=8, clock_ghz=3.0, l2_mb=1,
                               l2_bytes_per_clk=(256, "l2-bw-derived"), mall_mb=0,
                               dram_gbs=(120, "apu-dram-assumed"), vram_gb=(16, "apu-dram-assumed"),
                               regs_per_simd=(1024, "llvm-vgprs-small"), reg_granule=(16, "llvm-vgprs-small"))
INT8_TARGETS = ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1200", "gfx1201")
# The device classes of issue 31 (each a row above): the steps bench/amd_model.md reports for them.
NEW_DEVICE_CLASSES = ("gfx1101", "gfx1102", "gfx1151", "gfx1150")


def generation_reference(t):
    """The target whose estimates (vgpr_est) stand for t's generation where t has none of its own."""
    return "gfx1201" if t.startswith("gfx12") else "gfx1100"


def spec(t, key):
    return SPECS[t][key][0]


def peak_flops(t, fraction=1.0):
    if "mma_peak_tflops" in SPECS[t]:
        return spec(t, "mma_peak_tflops") * 1e12 * fraction
    return spec(t, "units") * spec(t, "mma_flops_per_unit_clk") * spec(t, "clock_ghz") * 1e9 * fraction


def leaf_gemm(bm, bn, wm, wn, prefetch, mirrors, x_type="std::bfloat16_t"):
    """A config of gemm.hip's AMD kernel, gemm_kernel<Tiles<bm, bn, wm, wn, 2 stages, 64 KB>, x_type, bf16>:
    its check_device row and its LDS use (two stages of A and B, k-steps of 32 padded by kPad 8; an f32 x
    is staged as bf16) follow from the tile. A register prefetch is the kernel's kHold (the Tiles' last
    argument, true)."""
    hold = ", true" if prefetch else ""
    return dict(kind="gemm", bm=bm, bn=bn, bk=32, wm=wm, wn=wn, stages=2, prefetch=prefetch, lds="ab", raster=8,
                products=1, table=[f"gemm_kernel<moss::Tiles<{bm}, {bn}, {wm}, {wn}, 2, 65536{hold}>, {x_type}, "
                                   "std::bfloat16_t"],
                lds_est=2 * (bm + bn) * 40 * 2, mirrors=mirrors)


def gemm_variant(cfg, m, eb_x):
    """The configuration a launch of cfg really runs: a config with `variants` (the portable GEMM:
    gemm.hip launch_portable) picks its narrow tile below wide_min_rows rows and its f32-x tile for an f32
    x; any other config is the one it names."""
    v = cfg.get("variants")
    if not v:
        return cfg
    name = ("narrow" if m < v["wide_min_rows"] else "wide") + ("_f32x" if eb_x == 4 else "")
    return v.get(name, cfg)


def attention_variant(cfg, d):
    """The configuration a launch of cfg runs at head dim d: a config with `by_head_dim` (the portable
    attention: attention.hip PortableTiling<D>) picks the first entry whose bound holds d."""
    for max_d, sub in cfg.get("by_head_dim", ()):
        if d <= max_d:
            return sub
    return cfg


def tiled_attention(waves, row_tiles, mirrors):
    """A config of attention.hip's kernel, Tiling<D, DV, 32 keys, waves, row_tiles, 1 stage>: waves x
    row_tiles tiles of 16 queries share each 32-key K/V tile, loaded synchronously (no prefetch)."""
    return dict(kind="attention", q_rows=16 * waves * row_tiles, kt=32, dv=128, waves=waves, row_tiles=row_tiles,
                stages=1, prefetch=0, q_in_regs=False,
                table=[f"attention_kernel<moss::Tiling<{{D}}, {{DV}}, 32, {waves}, {row_tiles}, 1, 1>"], mirrors=mirrors)


def direct_attention(mirrors):
    """attention.hip's direct tiling, Tiling<D, DV, 32 keys, 8 waves, 1 row tile, 0 stages>: each of 8
    waves (16 queries) reads its K and V^T fragments from the packed tensors (no LDS for K/V, no
    barrier in the key loop), the transposed scores stay in registers as the PV operand; Q is staged
    once in LDS (128 x 136 bf16) and held in registers on gfx12 (gfx11 re-reads it from LDS)."""
    return dict(kind="attention", q_rows=128, kt=32, dv=128, waves=8, row_tiles=1, stages=0, prefetch=0,
                q_in_regs=True, kv_lds=False, p_lds=False, lds_est=128 * 136 * 2,
                table=["attention_kernel<moss::Tiling<{D}, {DV}, 32, 8, 1, 0, 1>"], mirrors=mirrors,
                valu=DIRECT_VALU)


# The direct tiling's VALU issue slots a wave spends on one 32-key tile at head dim 128 (16 scores
# and 64 output accumulators a lane), counted in its gfx1200 code object (clang-19, check_device's
# build; the loop between the first score WMMA's K loads and the back branch, the unmasked path,
# each VALU instruction one slot, a v_dual pair one): bench/amd_model.md section 6. "softmax":
# the scale, max (v_max3 and one cross-half permute), exp2's argument, v_exp_f32, the sum;
# "addressing": the 64-bit address adds of the 32 16-byte K/V fragment loads; "convert": P's f32 ->
# bf16 (gfx12 has no convert instruction); "rescale": the output accumulators times alpha, which
# the kernel since issue 49 skips where no row of the wave raised its maximum (the fraction of
# (wave, tile) pairs that still multiply: bench/sage_attention_fidelity.py, 1024x1024).
DIRECT_VALU_BEFORE = dict(softmax_and_addressing=125, convert=88, rescale=64, rescale_fraction=1.0,
                          head_dim=128, source="gfx1200 disassembly of attention.hip before issue 49's change "
                          "(commit df99af3): 277 slots a tile; the convert five a value (v_bfe_u32, v_add3_u32, "
                          "v_cmp_u_f32, v_or_b32, v_cndmask) and a v_perm_b32 a pair")
# An idea, not code: the 32 fragment loads addressed as a scalar tile base plus a per-lane 32-bit
# offset that does not change from tile to tile (global_load_b128 with saddr), which removes the
# ~44 address adds (20 v_add_co_u32 + 20 v_add_co_ci_u32 + 4 v_add_nc_u32) from every tile; the
# same bits.
DIRECT_VALU_SADDR = None  # set below from DIRECT_VALU
DIRECT_VALU = dict(softmax_and_addressing=129, convert=24, rescale=64, rescale_fraction=0.36, head_dim=128,
                   source="gfx1200 disassembly of attention.hip (issue 49): 217 slots a tile, 153 without the "
                   "rescale; the convert one v_add_nc_u32 a value and a v_perm_b32 a pair (probability_bf16); "
                   "the scale inside exp2's argument (one v_fma_f32 a score where a v_mul_f32 and a v_sub_f32 "
                   "were); the rescale behind a branch taken by 36% of (wave, tile) pairs at 1024x1024 "
                   "(synthetic, sage_attention_fidelity.py; 67% at 512x512); of the 129: ~52 addressing, ~77 "
                   "softmax")
# The int8-score variant's key loop against the bf16 one's, counted the same way (session 26:
# bench/attention_valu_count.py on attention.hip's gfx1200 code object, clang-19; results/
# 2026-12-07-session26/i49m/valu_gfx1200.txt): 225 slots a tile against 217, 16 v_cvt_f32_i32 (a
# score each) less 6 address adds (K's fragments are half the bytes) and 2 moves' difference.
INT8_QK_VALU_DELTA = 225 - 217
DIRECT_VALU_SADDR = dict(DIRECT_VALU, softmax_and_addressing=DIRECT_VALU["softmax_and_addressing"] - 44,
                         source="DIRECT_VALU less the 44 address adds a tile (an idea, bench/amd_model.md section 6)")


# ---- the kernel configuration table ----------------------------------------------------------------
# kind gemm: bm, bn, bk, waves (wm x wn), stages (LDS), prefetch (k-steps whose loads are in flight
#   while a k-step multiplies: 0 = loaded, waited for and stored before the multiply), eb_x/eb_w
#   (bytes per element as loaded from global memory), lds (which operands pass through LDS),
#   raster (tile rows per raster group), products (matrix products per leaf step: 3 = bf16x3 split).
# kind attention: q_rows per workgroup, kt keys per tile, dv output dims per workgroup (head dims
#   above dv rerun the scores per chunk), waves, row_tiles per wave, stages, prefetch, q_in_regs.
# kind conv: implicit GEMM, bm output channels x bn pixels (rows x 16), bk input channels per step.
# table: substrings that pick the kernel's rows in check_device's table (per arch) for the VGPR and
#   LDS use; vgpr_est / lds_est are used where the code does not exist yet (candidates).
CONFIGS = {
    # The kernels as the seed had them (one wave per workgroup everywhere); table: DEFAULT_TABLE.
    "seed": {
        # H200 kernel of the same structure, whose measured/modelled ratio calibrates this config's family
        "analogue": {"gemm": "gemm leaf 128x128/4w raw 4160x3072x3072 (x f32)",
                     "attention": "attention[ref] T4173 h24x128 bf16"},
        "gemm": leaf_gemm(32, 64, 1, 1, prefetch=0,
                          mirrors="hip/src/kernels/gemm.hip:108 WaveTiles = Tiles<32, 64, 1, 1, 2, 64*1024>; kPad 8 (l.55); "
                                  "kRasterGroup 8 (l.56); AMD pipeline l.15-19 (step kt+1 loaded and stored before kt "
                                  "multiplies); launch l.1194"),
        "attention": tiled_attention(waves=1, row_tiles=1,
                                     mirrors="hip/src/kernels/attention.hip:368 Tiling<D, out_chunk(D, 128), 32, 1, 1, 1> "
                                             "(one wave, 16 queries, 32-key tiles, one K/V buffer, copies synchronous "
                                             "l.140-165, Q re-read from LDS per tile l.213); K/V packed first by "
                                             "attention_pack (attention_op.hip:82)"),
        "conv": dict(kind="conv", bm=32, bn=64, bk=16, wm=1, wn=1, stages=1, prefetch=0, products=3,
                     table=["conv2d_kernel<{K},", "mma72"], table_1x1=["conv2d_kernel<1,", "mma24"],
                     mirrors="hip/src/kernels/conv2d_layout.h:33-45 (portable: kWarpsM 1, kTilesM 2, kTilesN 4, warps_n 1) "
                             "and conv2d.hip:14 (single-buffered); AMD decode precision Bf16x3 (conv2d.h: three products)"),
    },
    # What the code runs now (MOSSINFER_KERNELS=portable on NVIDIA, everything on AMD): the GEMM of 4
    # waves of 64x32 with the next k-step held in registers and SiTU in its epilogue, the direct
    # attention tiling up to head dim 128, the 4-wave double-buffered F16 conv.
    "portable": {
        "check_device_table": (SESSION24_TABLE, PORTABLE_TABLE),
        # SiTU in the wide tile's epilogue (gemm.hip plan_fuses_unit: the DiT's bf16 weights, >= 65 rows).
        "fused_unit": True,
        # The direct tiling reads K's bf16 rows in place; only V is packed (transposed) first
        # (attention_op.hip, AttentionKvLayout::k_in_place; since session 17).
        "k_in_place": True,
        # q's RMS norm and RoPE applied while the attention stages Q (CoreOps::norm_rope_attention,
        # attention.hip stage_q_norm_rope; since session 17): norm_rope runs over k alone.
        "q_rope_in_attention": True,
        # The v projection's GEMM writes each row's zero-padded Vᵀ itself, in its epilogue
        # (CoreOps::linear_transposed, gemm_leaf.h leaf_transposed_store; since session 18): one v
        # GEMM per row, no attention_pack pass at all.
        "v_transposed_by_gemm": True,
        # The second norm normalises x + o's update without storing it; the next block's first norm
        # adds o's and ffn_down's updates and stores the sum, the head adds both and stores nothing
        # (CoreOps::add_norm_modulate, SumTo::Nowhere; model/dit.cpp RowState; since session 21).
        "deferred_attn_update": True,
        # The very kernels, run on the H200 (MOSSINFER_KERNELS=portable).
        "analogue": {"gemm": "gemm portable 128x64/4w 4160x3072x3072 x:bf16",
                     "attention": "attention[portable] T4173 h24x128 bf16"},
        "gemm": dict(leaf_gemm(128, 64, 2, 2, prefetch=1,
                               mirrors="hip/src/kernels/gemm_leaf.h PortableWide = Tiles<128, 64, 2, 2, 2, 64*1024, true> "
                                       "(kHold: the next k-step's chunks held in registers across the multiply, stored "
                                       "after it); gemm.hip launch_portable picks the variants below"),
                     variants=dict(
                         wide_min_rows=65,  # gemm_leaf.h kPortableWideMinRows
                         wide_f32x=leaf_gemm(64, 64, 2, 2, prefetch=1, x_type="float",
                                             mirrors="gemm_leaf.h PortableWideF32X = Tiles<64, 64, 2, 2, 2, 64*1024, true>"),
                         narrow=leaf_gemm(32, 64, 1, 1, prefetch=1,
                                          mirrors="gemm_leaf.h PortableNarrow = Tiles<32, 64, 1, 1, 2, 64*1024, true>"),
                         narrow_f32x=leaf_gemm(32, 32, 1, 1, prefetch=1, x_type="float",
                                               mirrors="gemm_leaf.h PortableNarrowF32X = Tiles<32, 32, 1, 1, 2, 64*1024, true>"))),
        "attention": dict(tiled_attention(waves=4, row_tiles=2,
                                          mirrors="hip/src/kernels/attention.hip PortableTiling<D <= 128> = Tiling<D, "
                                                  "out_chunk(D, 128), 32, 4, 2, 1> (4 waves x 2 row tiles = 128 queries "
                                                  "per workgroup, one K/V buffer)"),
                          by_head_dim=((128, direct_attention(mirrors="PortableTiling<D <= 128> = Tiling<D, "
                                                              "out_chunk(D, 128), 32, 8, 1, 0>: the direct tiling")),
                                       (256, tiled_attention(waves=4, row_tiles=1, mirrors="PortableTiling<D <= 256>: "
                                                             "Tiling<D, out_chunk(D, 128), 32, 4, 1, 1>")),
                                       (1 << 30, tiled_attention(waves=2, row_tiles=1, mirrors="PortableTiling<D > 256>: "
                                                                 "Tiling<D, out_chunk(D, 128), 32, 2, 1, 1>")))),
        "conv": dict(kind="conv", bm=64, bn=128, bk=16, wm=2, wn=2, stages=2, prefetch=1, products=1,
                     table=["conv2d_kernel<{K},", "mma24"], table_1x1=["conv2d_kernel<1,", "mma8"],
                     mirrors="hip/src/kernels/conv2d_layout.h (kWarpsM 2 x warps_n 2: 64 channels x 8 rows of 16 px) "
                             "and conv2d.hip (K-step c+1 staged into the second LDS buffer while c multiplies); "
                             "precision F16 on both platforms (vae_ops_hip.hip: one product, v_wmma_f32_16x16x16_f16)"),
    },
    "candidate": {
        # SiTU in the up|gate GEMM's epilogue (as gemm_wgmma does on the H200: gemm.hip:750) and K/V read
        # in place as [key][d] bf16 rows (as the NVIDIA flash kernel does: attention_op.hip:69-77).
        "fused_unit": True,
        "kv_in_place": True,
        "analogue": {"gemm": "gemm mma 128x128/4w 4160x3072x3072 x:bf16",
                     "attention": "attention[flash] T4173 h24x128 bf16"},
        "gemm": dict(kind="gemm", bm=128, bn=128, bk=32, wm=2, wn=2, stages=2, prefetch=1, lds="ab", raster=8,
                     products=1, table=None, vgpr_est={"gfx1100": 232, "gfx1200": 200, "gfx1201": 200},
                     lds_est=2 * (128 + 128) * 40 * 2,
                     mirrors="CANDIDATE (not in the code): 4 waves of 64x64 (16 accumulators = 128 VGPRs), the next "
                             "k-step fetched into 32 VGPRs while this one multiplies, two padded LDS stages (40 KB); "
                             "VGPRs estimated: 128 acc + 16/32 A + 4/8 B + 32 prefetch + ~20 addressing"),
        "attention": dict(kind="attention", q_rows=128, kt=64, dv=128, waves=8, row_tiles=1, stages=1, prefetch=1,
                          q_in_regs=True, table=None, vgpr_est={"gfx1100": 232, "gfx1200": 200, "gfx1201": 200},
                          lds_est=64 * 136 * 2 + 128 * 72 * 2,
                          mirrors="CANDIDATE: flash attention, 8 waves x 16 queries (128 per workgroup), 64-key K and "
                                  "V^T tiles in one LDS buffer (35 KB) refilled from registers fetched a tile ahead, Q "
                                  "fragments held in VGPRs; VGPRs: Q 32/64 + O 64 + S 32 + prefetch 32 + ~40"),
        "conv": dict(kind="conv", bm=64, bn=128, bk=16, wm=2, wn=2, stages=2, prefetch=1, products=1,
                     table=None, vgpr_est={"gfx1100": 200, "gfx1200": 168, "gfx1201": 168},
                     lds_est=2 * (64 * 16 * 9 * 2 + 10 * 18 * 16 * 2),
                     mirrors="CANDIDATE: 4 waves (64 channels x 8 rows x 16 px), double-buffered, one f16 product "
                             "(v_wmma_f32_16x16x16_f16 runs at the bf16 rate; the NVIDIA decode's F16 precision, conv2d.h)"),
    },
    # What the H200 build runs (for calibration); same keys.
    "h200": {
        "gemm_wgmma": dict(kind="gemm", bm=128, bn=256, bk=64, wm=2, wn=1, stages=4, prefetch=3, lds="ab", raster=8,
                           products=1, wgmma=True, waves_per_simd=2, lds_est=4 * (128 + 256) * 128,
                           mirrors="gemm.hip:705 WgmmaTiles 128x256, BK 64 (sw128), 4 stages, 2 consumer warpgroups + producer"),
        "gemm_mma256": dict(kind="gemm", bm=128, bn=256, bk=32, wm=2, wn=4, stages=4, prefetch=3, lds="ab", raster=8,
                            products=1, mma_sync=True, ldmatrix=True, waves_per_simd=2, lds_est=4 * (128 + 256) * 64,
                            mirrors="gemm.hip:409 MmaLarge = MmaTiles<128, 256, 2, 4, 4>"),
        "gemm_mma128": dict(kind="gemm", bm=128, bn=128, bk=32, wm=2, wn=2, stages=4, prefetch=3, lds="ab", raster=8,
                            products=1, mma_sync=True, ldmatrix=True, waves_per_simd=2, lds_est=4 * 256 * 64,
                            mirrors="gemm.hip:411 MmaMedium = MmaTiles<128, 128, 2, 2, 4>"),
        "gemm_leaf128": dict(kind="gemm", bm=128, bn=128, bk=32, wm=2, wn=2, stages=4, prefetch=3, lds="ab", raster=8,
                             products=1, mma_sync=True, waves_per_simd=2, lds_est=4 * 256 * 40 * 4,
                             mirrors="gemm.hip:102 MediumTiles = Tiles<128, 128, 2, 2, 4, 110*1024> (the leaf kernel, as on AMD)"),
        "attention_wgmma": dict(kind="attention", q_rows=128, kt=128, dv=128, waves=8, row_tiles=4, stages=2,
                                prefetch=1, q_in_regs=True, wgmma=True, waves_per_simd=3,
                                mirrors="attention_hopper.h:51-53 2 consumer warpgroups x 64 queries, 128-key tiles, 2 stages"),
        "attention_flash": dict(kind="attention", q_rows=128, kt=64, dv=128, waves=4, row_tiles=2, stages=2,
                                prefetch=1, q_in_regs=True, mma_sync=True, ldmatrix=True, waves_per_simd=2,
                                mirrors="attention_flash_nvidia.h:40 4 warps x 2 row tiles (128 queries), 64-key tiles"),
        # The portable kernels themselves (MOSSINFER_KERNELS=portable: the AMD source, tile and launch shapes
        # with NVIDIA's leaf), measured on the H200 in bench/results/2026-12-01-session7.
        "gemm_portable": dict(kind="gemm", bm=128, bn=64, bk=32, wm=2, wn=2, stages=2, prefetch=1, lds="ab", raster=8,
                              products=1, mma_sync=True, waves_per_simd=2, lds_est=2 * (128 + 64) * 40 * 2,
                              mirrors="gemm.hip PortableWide = Tiles<128, 64, 2, 2, 2, 64*1024, true>"),
        "attention_portable": dict(kind="attention", q_rows=128, kt=32, dv=128, waves=8, row_tiles=1, stages=0,
                                   prefetch=0, q_in_regs=True, kv_lds=False, p_lds=False, mma_sync=True,
                                   waves_per_simd=2,
                                   mirrors="attention.hip PortableTiling<128> = Tiling<128, 128, 32, 8, 1, 0> (direct)"),
        "attention_ref": dict(kind="attention", q_rows=128, kt=32, dv=128, waves=4, row_tiles=2, stages=2, prefetch=1,
                              q_in_regs=False, mma_sync=True, waves_per_simd=2,
                              mirrors="attention.hip:362 Tiling<D, kDv, 32, 4, 2, 2, 2> (the reference kernel, as on AMD)"),
    },
}

# INT8 ConvRot (issue 49): the portable config with the DiT block's four projections as int8 GEMMs
# (kernels/int8_gemm.hip, code since session 23) and the activations' rotation and quantization
# where the kernels put it (act_quant below). The int8 GEMM as written: its tiled kernel, 128x64
# tiles of 4 waves (64x32 each, 4x2 iu8 leaves), K in steps of 64 bytes through two LDS stages of
# rows padded to 80 bytes (30 KiB), the next step held in registers (kHold, as the bf16 kernel);
# VGPRs and LDS from its own check_device rows (SESSION24_TABLE: 166 VGPRs on gfx12, LDS-bound
# to 4 waves a SIMD). Its epilogue writes bf16 or f32 (int8_gemm.hip store_int8_output), or the SiTU
# unit of the up|gate product's halves in f32 (store_int8_unit, session 25).
INT8_GEMM = dict(leaf_gemm(128, 64, 2, 2, prefetch=1,
                           mirrors="hip/src/kernels/int8_gemm.hip int8_gemm_tiled_kernel: 128x64 tiles, 4 waves of "
                                   "64x32 (WaveAcc<4, 2>), kTileK 64 bytes, two LDS stages (TiledStage, rows of 80 "
                                   "bytes), the next step's chunks held in registers; v_wmma_i32_16x16x16_iu8 "
                                   "(matrix_leaf.h mma_i8), the two scales in the epilogue"),
                 bk=64, int8=True, table=["int8_gemm_tiled_kernel"], lds_est=2 * (128 + 64) * 80)
# act_quant "planned" is the code as it is since session 25 (issue 49): the two norm-modulate rows
# write the rotated int8 rows themselves (a whole row is in one workgroup: exact), the attention's
# output takes a rotate_quantize pass (bf16 read), and SiTU's output, f32 from the up|gate GEMM's
# epilogue (CoreOps::linear_int8_gated_unit), another (f32 read). "product" (a variant row) is what
# the code was until then: the whole up|gate product in f32, for one pass that applies the unit
# and quantizes: twice the bytes written and read.
CONFIGS["int8"] = dict(CONFIGS["portable"], int8_gemm=True, gemm_int8=INT8_GEMM, act_quant="planned", int8_qk=True)
# Calibrated on Radeons like the code it extends: each family by the portable kernels' cases (the
# int8 GEMM reaching the same share of its peak as the card's bf16 library GEMM: an assumption).
amd_calibration.RADEON_ANALOGUE.setdefault("int8", amd_calibration.RADEON_ANALOGUE["portable"])
# The steps between the code and the int8 config, for the table `--config int8` prints: name -> the
# int8 config's keys changed (None: the portable config itself). int8 QK^T (SageAttention's scores,
# docs/attention_int8_qk.md) is in the config since session 26: the DiT-level bar of
# bench/amd_model.md section 6 passed (bench/results/2026-12-07-session26), and so did P.V in fp8.
INT8_VARIANTS = (
    ("bf16: the code as it is (portable)", None),
    ("int8 GEMMs, quantization passes apart, bf16 attention", dict(act_quant="separate", int8_qk=False)),
    ("int8 GEMMs, norms fused, up|gate product f32 + SiTU pass, bf16 attention (the code before session 25)",
     dict(act_quant="product", int8_qk=False)),
    ("int8 GEMMs, norms fused, attention-out pass, SiTU epilogue f32 + pass, bf16 attention (session 25)",
     dict(int8_qk=False)),
    ("the same + int8 QK^T (config int8: the code; DiT-level bar ADMISSIBLE)", {}),
    ("config int8, the attention before issue 49's VALU change", dict(attention_valu=DIRECT_VALU_BEFORE)),
    ("config int8 + P.V in fp8 (gfx12 only, fp8 rate ASSUMED; DiT-level bar ADMISSIBLE; not code)", dict(fp8_pv=True)),
    ("config int8 + K/V fragment addresses loop-invariant (idea, not code)", dict(attention_valu=DIRECT_VALU_SADDR)),
    ("config int8 + fp8 P.V + loop-invariant addresses (not code): the goals' path",
     dict(fp8_pv=True, attention_valu=DIRECT_VALU_SADDR)),
    ("config int8 + quantization fused everywhere (SiTU and attention epilogues; not code)", dict(act_quant="fused")),
    ("every idea: fp8 P.V, loop-invariant addresses, quantization fused everywhere (not code)",
     dict(fp8_pv=True, attention_valu=DIRECT_VALU_SADDR, act_quant="fused")),
)
INT8_DESIGN = 4  # the row of config int8 (the per-target lines report it)
# The goals for the int8 step at 1024x1024, Radeon-calibrated (s).
INT8_GOALS = {"gfx1200": 1.0, "gfx1201": 0.55}
# The ten release targets (docs/amd_targets.md); the model has figures for AMD_TARGETS only.
RELEASE_TARGETS = ("gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx1200",
                   "gfx1201")


def variant_config(changes):
    return CONFIGS["portable"] if changes is None else dict(CONFIGS["int8"], **changes)


def h200_int8_steps(tc=64, tu=10):
    """The H200 build's step (wgmma GEMMs and attention, calibration's h_conf, with the deferred
    update the code has since session 21) in bf16 and with the block projections as int8 wgmma
    GEMMs (k-step 128 int8: the bf16 kernel's bytes), the quantization passes apart or fused; the
    attention stays bf16 there. {name: modelled s}: what bench/h200_int8.sh's ratio is to be read
    against (the issue's target: INT8 at most 0.7x bf16 on the native path)."""
    conf = CONFIGS["h200"]
    base = {"gemm": conf["gemm_wgmma"], "attention": conf["attention_wgmma"], "fused_unit": True,
            "kv_in_place": True, "deferred_attn_update": True}
    q8 = dict(base, int8_gemm=True, gemm_int8=dict(conf["gemm_wgmma"], bk=128, int8=True))
    out = {"bf16": summarize(dit_step("h200", base, None, tc, tu))}
    for quant in ("separate", "fused"):
        out["int8 " + quant] = summarize(dit_step("h200", dict(q8, act_quant=quant), None, tc, tu))
    return out


def int8_memory_plan(vram_gib=8.0, desktop_gib=None):
    """The 8 GB card with the INT8 DiT: its resident bytes and the 1024x1024 activation peak against the
    card's usable memory, by the planner's rule (amd_streaming.resident_blocks). A block's projections
    are 1 byte a weight plus one f32 scale an output row; the rest of the DiT (embedders, text blocks,
    head: the planner's fixed part) stays bf16 as in the Comfy-Org files. The activations grow by what
    config int8's flow keeps beside the bf16 ones, for the stacked rows: SiTU's output in f32 where
    the bf16 one was (2 more bytes, rows x ffn), its int8 copy (rows x ffn), the attention
    output's (rows x dim) and int8 QK^T's quantized keys (one buffer for the stacked rows' keys,
    rows x dim; their scales, one f32 a 32-key block and head, not counted); the norms' int8 rows
    reuse the y buffer's bytes."""
    st = amd_streaming.STAGES
    desktop = amd_streaming.DESKTOP_GIB if desktop_gib is None else desktop_gib
    d, f = DIT["dim"], DIT["ffn"]
    gib = 2.0 ** 30
    weights = 4 * d * d + 3 * f * d                      # qkv (3 d x d), o, ffn_up_gate (2f x d), ffn_down
    scales = (3 * d + d + 2 * f + d) * 4
    block_bf16 = weights * 2 / gib
    block_int8 = (weights + scales) / gib
    rows = 2 * (1024 // 16) ** 2 + 77 + 10
    act_extra = (rows * f * (2 + 1) + rows * d + rows * d) / gib
    stages = dict(st, block_gib=block_int8, activation_gib=st["activation_gib"] + act_extra)
    resident = amd_streaming.resident_blocks(vram_gib, desktop, stages)
    need = (st["blocks"] * block_int8 + st["fixed_gib"] + stages["activation_gib"] + st["vae_gib"] +
            st["reserve_gib"])
    return dict(block_bf16_gib=block_bf16, block_int8_gib=block_int8, blocks=st["blocks"], resident=resident,
                dit_int8_gib=st["blocks"] * block_int8 + st["fixed_gib"], activation_gib=stages["activation_gib"],
                act_extra_gib=act_extra, need_gib=need, usable_gib=vram_gib - desktop, vram_gib=vram_gib,
                bf16_resident=amd_streaming.resident_blocks(vram_gib, desktop))


def int8_memory_lines():
    out = []
    for desktop in (amd_streaming.DESKTOP_GIB, 0.0):
        p = int8_memory_plan(desktop_gib=desktop)
        out.append(f"8 GB card, {p['usable_gib']:.1f} GiB usable ({desktop:.1f} GiB to the desktop): INT8 DiT "
                   f"{p['dit_int8_gib']:.2f} GiB resident ({p['blocks']} blocks x {p['block_int8_gib']:.4f} GiB, bf16 "
                   f"{p['block_bf16_gib']:.4f}; fixed bf16 part {amd_streaming.STAGES['fixed_gib']:.2f}) + activations "
                   f"{p['activation_gib']:.2f} (int8 copies +{p['act_extra_gib']:.3f}) + VAE weights "
                   f"{amd_streaming.STAGES['vae_gib']:.2f} + reserve {amd_streaming.STAGES['reserve_gib']:.2f} = "
                   f"{p['need_gib']:.2f} GiB: {p['resident']} of {p['blocks']} blocks resident "
                   f"({'all: fits' if p['resident'] == p['blocks'] else 'does NOT fit'}, "
                   f"{p['usable_gib'] - p['need_gib']:+.2f} GiB spare; bf16: {p['bf16_resident']} of {p['blocks']})")
    return out


# Row (bandwidth) kernels: bytes moved per element of the [rows, cols] they walk, as the fused kernels
# in hip/src/kernels/rows.hip and hip/src/ops/hip/core_ops_hip.hip read and write them.
ROW_BYTES = {
    "add_norm_modulate": 4 + 2 + 4 + 2,  # x f32 in/out, delta bf16 in, y bf16 out
    # with the o update pending (deferred_attn_update): the first norm adds both updates and stores
    # the sum, the second reads x and o's update and stores nothing, the head stores nothing
    "add2_norm_modulate": 4 + 2 + 2 + 4 + 2,
    "add_norm_modulate_unstored": 4 + 2 + 2,
    "add2_norm_modulate_unstored": 4 + 2 + 2 + 2,
    "norm_modulate": 4 + 2,
    # INT8 ConvRot (issue 49): the norms rotate and quantize their output row themselves and write
    # it as int8 (+ one f32 scale a row, not counted); apart, a pass reads the bf16 row and writes int8
    "add2_norm_modulate_q8": 4 + 2 + 2 + 4 + 1,
    "add_norm_modulate_unstored_q8": 4 + 2 + 1,
    "rotate_quantize": 2 + 1,
    # SiTU's f32 output (the up|gate GEMM's epilogue) read, int8 written
    "rotate_quantize_f32": 4 + 1,
    # the int8 up|gate product kept in f32, read by one pass that applies SiTU and writes int8 rows
    "situ_quantize_f32": 4 + 4 + 1,
    # SageAttention's K (CoreOps::quantize_keys): the bf16 k rows read twice (the channel means,
    # then the smoothed values quantized per block of 32 keys), written as int8
    "smooth_quantize_k": 2 + 2 + 1,
    "norm_rope": 2 + 2,                  # in place, bf16; the f32 sin/cos rows are shared by 24 heads
    "gated_unit": 2 + 2 + 2,             # [h | g] bf16 in, bf16 out (AMD: not fused into the GEMM)
    "attention_pack": 2 * (2 + 2),       # K and V read, packed (V transposed) written
    "attention_pack_v": 2 + 2,           # V alone read and written transposed (K read in place)
    "add": 4 + 4 + 4,
    "rms_norm": 4 + 4,
    "silu_gate": 4 + 4 + 4,
    "gn_stats": 4 * 2,                   # the two passes of group_norm_stats (partial sum, sq dev)
    "copy": 8,
    "te_misc": 4 * 4,
}
ROW_EFFICIENCY = 0.8  # fraction of DRAM bandwidth a streaming row kernel reaches (H200 measured 0.42-0.91)


# ---- check_device table ----------------------------------------------------------------------------
def parse_check_device(path):
    """Rows of check_device's table, by its header: kernel arch kind mma wave wg vgpr [occ] sgpr lds
    scratch spill dyn undef result (occ, the compiler's waves per SIMD, since 2026-12-03; None
    in older tables and in --binary runs)."""
    ints = ("mma", "wave", "wg", "vgpr", "sgpr", "lds", "scratch", "spill", "undef")
    rows, names = [], None
    with open(path) as f:
        for line in f:
            parts = re.split(r"\s{2,}", line.strip())
            if parts and parts[0] == "kernel":
                names = parts[1:]
                continue
            if names is None or len(parts) < len(names) + 1:
                continue
            cols = dict(zip(names, parts[-len(names):]))
            if not re.match(r"^gfx\d+(-generic)?$", cols["arch"]):
                continue
            try:
                row = dict(kernel=" ".join(parts[:-len(names)]), arch=cols["arch"], kind=cols["kind"],
                           dyn=cols["dyn"], result=cols["result"], **{k: int(cols[k]) for k in ints})
            except (ValueError, KeyError):
                continue
            occ = cols.get("occ", "-")
            row["occ"] = int(occ) if occ.isdigit() else None
            rows.append(row)
    return rows


def load_rows(tables):
    """The rows of a check_device table, or of several (a tuple: in order, so the first match wins);
    a file that does not exist gives none."""
    paths = (tables,) if isinstance(tables, str) else tuple(tables or ())
    return [r for p in paths if p and os.path.exists(p) for r in parse_check_device(p)]


def table_lookup(rows, arch, patterns):
    """The first row of `arch` whose kernel holds every pattern ('mmaN' matches the mma column)."""
    for r in rows:
        if r["arch"] != arch:
            continue
        ok = True
        for p in patterns:
            if p.startswith("mma") and p[3:].isdigit():
                ok = ok and r["mma"] == int(p[3:])
            else:
                ok = ok and p.replace(" ", "") in r["kernel"].replace(" ", "")
        if ok:
            return r
    return None


def round_up(x, g):
    return int(math.ceil(x / g) * g)


def occupancy(t, vgpr, lds_wg, waves_wg):
    """Waves per SIMD from VGPRs (allocation granule), LDS per workgroup and the wave slots."""
    regs = spec(t, "regs_per_simd")
    w_reg = regs // max(1, round_up(vgpr, spec(t, "reg_granule")))
    w_max = spec(t, "max_waves_per_simd")
    simds = spec(t, "simds_per_unit")
    if lds_wg > 0:
        wg_per_unit = spec(t, "lds_per_unit") // lds_wg
        w_lds = (wg_per_unit * waves_wg) // simds
    else:
        w_lds = w_max
    waves = max(1, min(w_reg, w_lds, w_max))
    limit = "vgpr" if waves == w_reg else ("lds" if waves == w_lds else "slots")
    return waves, limit


# ---- resources of one config on one target ---------------------------------------------------------
def resources(cfg, t, rows, fmt=None):
    """(vgpr, sgpr, lds bytes, source) for a config on a target."""
    fmt = fmt or {}
    if t == "h200":
        return None
    if cfg.get("table") and rows:
        pats = [p.format(**fmt) for p in (cfg["table_1x1"] if fmt.get("K") == 1 and "table_1x1" in cfg else cfg["table"])]
        r = table_lookup(rows, t, pats)
        if r:
            lds = r["lds"] if r["lds"] > 0 else fmt.get("lds_dyn", cfg.get("lds_est", 0))
            return r["vgpr"], r["sgpr"], lds, "check_device: " + r["kernel"][:90]
    est = cfg.get("vgpr_est", {})
    v = est.get(t, est.get(generation_reference(t), 128))
    return v, 0, fmt.get("lds_dyn", cfg.get("lds_est", 0)), "estimate (config table)"


def finish(t, name, family, calls, bounds, extra):
    launch = spec(t, "launch_us") * 1e-6
    bound = max(bounds, key=bounds.get)
    time = bounds[bound] + launch
    d = dict(name=name, family=family, calls=calls, bounds_ms={k: v * 1e3 for k, v in bounds.items()},
             time_ms=time * 1e3, bound=bound, total_ms=time * 1e3 * calls)
    d.update(extra)
    return d


def latency_util(t, waves_res, busy_clk, exposed_clk):
    if busy_clk <= 0:
        return 1.0
    return min(1.0, waves_res * busy_clk / (busy_clk + exposed_clk))


def latency_hiding(t, busy, prefetch, waves_res_max, total_waves):
    """(resident waves per SIMD, latency_util of them, fill of the last round of waves) for a launch
    of total_waves whose waves do busy clocks of work per k-step with prefetch k-steps in flight."""
    exposed = max(0.0, spec(t, "latency_clk") - prefetch * busy)
    n_simd = spec(t, "units") * spec(t, "simds_per_unit")
    resident = min(waves_res_max, total_waves / n_simd)
    u = latency_util(t, resident, busy, exposed)
    slots = n_simd * waves_res_max
    rounds = math.ceil(total_waves / slots)
    tail = total_waves / (rounds * slots) if rounds > 1 else min(1.0, total_waves / n_simd)
    return resident, u, tail


def tile_bounds(t, t_mma, t_lat, l2_bytes, lds_bytes, dram_bytes):
    """The bounds of a tiled matrix kernel (gemm, attention, conv): the whole launch's traffic at each peak."""
    clk = spec(t, "clock_ghz") * 1e9
    return dict(mma=t_mma, latency=t_lat, l2=l2_bytes / (spec(t, "l2_bytes_per_clk") * clk),
                lds=lds_bytes / (spec(t, "units") * spec(t, "lds_bytes_per_unit_clk") * clk),
                dram=dram_bytes / (spec(t, "dram_gbs") * 1e9))


def occupancy_record(vgpr, sgpr, lds_wg, waves_res_max, limit, resident, u, tail, source):
    """The occupancy figures a kernel's row reports (--json)."""
    return dict(vgpr=vgpr, sgpr=sgpr, lds=lds_wg, waves_per_simd=waves_res_max, limit=limit,
                resident=round(resident, 2), util=round(u, 3), tail=round(tail, 3), source=source)


def model_gemm(t, cfg, name, m, n, k, calls=1, eb_x=2, eb_w=2, eb_y=2, rows=None, family="gemm"):
    cfg = gemm_variant(cfg, m, eb_x)
    bm, bn, bk = cfg["bm"], cfg["bn"], cfg["bk"]
    waves_wg = cfg["wm"] * cfg["wn"]
    tm, tn = bm // cfg["wm"] // 16, bn // cfg["wn"] // 16
    tiles_m, tiles_n = math.ceil(m / bm), math.ceil(n / bn)
    tiles, ksteps = tiles_m * tiles_n, math.ceil(k / bk)
    products = cfg.get("products", 1)
    flops = 2.0 * m * n * k
    flops_exec = 2.0 * tiles * bm * bn * ksteps * bk * products
    frac = spec(t, "mma_sync_fraction") if cfg.get("mma_sync") else 1.0
    # an int8 GEMM (cfg int8: iu8 WMMA, int32 accumulation) issues its 16x16x16 products int8_rate
    # times as fast as the bf16 ones: the same per-clock flops on gfx11, twice on gfx12
    rate = spec(t, "int8_rate") if cfg.get("int8") else 1
    frac *= rate
    mma_clk = spec(t, "mma_clk") / frac
    # per tile and k-step
    l2_step = (bm * eb_x + bn * eb_w) * bk
    lds_write = l2_step if cfg["lds"] == "ab" else 0
    dup = spec(t, "frag_dup")
    if cfg.get("wgmma"):
        eb_frag = 1 if cfg.get("int8") else 2
        lds_read = (cfg["wm"] * 64 * bk + cfg["wm"] * bn * bk) * eb_frag  # each consumer: its A rows and all of B
    else:
        lds_read = waves_wg * (tm + tn) * (bk // 16) * 512 * dup + (waves_wg * tm * (bk // 16) * 512 * dup if eb_x == 4 else 0)
        if cfg.get("int8"):
            lds_read //= 2  # a 16x16 int8 fragment is half a bf16 one's bytes
    # occupancy
    if t == "h200":
        waves_res_max, occ_src, limit = cfg["waves_per_simd"], "launch bounds (code)", "code"
        vgpr = sgpr = lds_wg = None
    else:
        vgpr, sgpr, lds_wg, occ_src = resources(cfg, t, rows)
        waves_res_max, limit = occupancy(t, vgpr, lds_wg, waves_wg)
    total_waves = tiles * waves_wg
    if cfg.get("wgmma"):
        busy = (bm // 64) * (bn // 16) * (bk // 16) * 4 * mma_clk / (spec(t, "simds_per_unit"))
        total_waves = tiles * 4
        waves_res_max = 4
    else:
        busy = tm * tn * (bk // 16) * mma_clk * products
    resident, u, tail = latency_hiding(t, busy, cfg["prefetch"], waves_res_max, total_waves)
    t_mma = flops_exec / peak_flops(t, frac)
    t_lat = t_mma / max(1e-9, u * tail)
    l2_bytes = tiles * ksteps * l2_step + m * n * eb_y
    lds_bytes = tiles * ksteps * (lds_write + lds_read)
    cache = 0.75 * (spec(t, "l2_mb") + spec(t, "mall_mb")) * 2 ** 20
    x_bytes, w_bytes, y_bytes = m * k * eb_x, n * k * eb_w, m * n * eb_y
    sweeps = math.ceil(tiles_m / cfg["raster"])
    w_reads = 1 if w_bytes <= cache else sweeps
    # x: a raster group's rows are re-read by every tile column of the group; once from DRAM when they fit
    x_reads = 1 if x_bytes <= cache or cfg["raster"] * bm * k * eb_x <= cache else tiles_n
    dram_bytes = x_bytes * x_reads + w_bytes * w_reads + y_bytes
    bounds = tile_bounds(t, t_mma, t_lat, l2_bytes, lds_bytes, dram_bytes)
    extra = dict(shape=f"{m}x{k}x{n}", flops=flops * calls, tile=f"{bm}x{bn}x{bk}/{waves_wg}w",
                 per_tile_bytes=dict(l2=l2_step * ksteps, lds=(lds_write + lds_read) * ksteps,
                                     dram=dram_bytes / tiles),
                 occupancy=occupancy_record(vgpr, sgpr, lds_wg, waves_res_max, limit, resident, u, tail, occ_src),
                 dram_bytes=dram_bytes * calls)
    return finish(t, name, family, calls, bounds, extra)


def model_attention(t, cfg, name, tq, tk, heads, d, calls=1, causal=False, rows=None, eb_q=2, eb_o=2,
                    q_tables=False, int8_qk=False, fp8_pv=False, valu=None):
    """q_tables: Q is normalised and rotated while staged, so each workgroup also reads its rows'
    f32 sin and cos (d each) and the DRAM sees the tables once (the heads share them).
    int8_qk: the scores come from int8 Q and K (SageAttention's idea, SOURCES 'sageattention'): the
    QK^T WMMAs at the int8 rate, K read as 1 byte an element, the int32 scores converted (on a
    counted kernel INT8_QK_VALU_DELTA slots a tile, its own count; else one more slot a score; the
    per-block scales fold into the softmax's existing scale), P.V unchanged.
    fp8_pv: P.V in fp8 as SageAttention2 has it (a variant, not the design): at the int8 rate where
    the target has fp8 WMMA (gfx12; SOURCES 'rdna4-fp8-assumed'), V read as 1 byte.
    valu: VALU issue slots a wave and key tile counted in the kernel's code (DIRECT_VALU's keys) in
    place of the config's own (cfg "valu") or, for a config without, the estimate of ~8 a score."""
    cfg = attention_variant(cfg, d)
    dv = min(cfg["dv"], d)
    chunks = d // dv
    q_rows, kt, waves_wg, r = cfg["q_rows"], cfg["kt"], cfg["waves"], cfg["row_tiles"]
    qblocks = math.ceil(tq / q_rows)
    wgs = qblocks * heads * chunks
    ktiles = math.ceil(tk / kt) * (0.5 if causal else 1.0)
    flops = 4.0 * tq * tk * heads * d * (0.5 if causal else 1.0)
    qk_rate = spec(t, "int8_rate") if int8_qk else 1
    eb_k = 1 if int8_qk else 2
    fp8 = fp8_pv and t.startswith("gfx12")
    pv_rate, eb_v = (spec(t, "int8_rate"), 1) if fp8 else (1, 2)
    # the flops count at the bf16 rate: int8 (fp8) ones are qk_rate (pv_rate) times cheaper
    flops_exec = wgs * ktiles * (2.0 * q_rows * kt * d / qk_rate + 2.0 * q_rows * kt * dv / pv_rate)
    frac = spec(t, "mma_sync_fraction") if cfg.get("mma_sync") else 1.0
    mma_clk = spec(t, "mma_clk") / frac
    dup = spec(t, "frag_dup")
    l2_tile = kt * d * eb_k + kt * dv * eb_v
    lds_write = l2_tile
    if cfg.get("wgmma"):
        lds_read = 2 * (kt * d * 2 + kt * dv * 2)  # each consumer warpgroup reads K and V once per tile
    else:
        q_read = 0 if cfg["q_in_regs"] else r * (d // 16) * 512 * dup
        lds_read = waves_wg * (q_read + (kt // 16) * (d // 16) * 512 * dup + (dv // 16) * (kt // 16) * 512 * dup)
    if not cfg.get("kv_lds", True):
        # K/V fragments loaded from global memory straight into registers; only each wave's P tile
        # passes through LDS (written as scores, read back as the PV operand), unless the scores
        # already sit in the PV operand's layout (p_lds false)
        lds_write = lds_read = waves_wg * r * 16 * kt * 2 if cfg.get("p_lds", True) else 0
    wmma_wave = r * (kt // 16) * (d // 16) / qk_rate + r * (kt // 16) * (dv // 16) / pv_rate
    # softmax: ~8 VALU issue slots per score per 32 lanes (scale-fma, max, exp2 at quarter rate, sum,
    # convert), and the O rescale; on RDNA they cannot co-issue with WMMA, on NVIDIA they overlap.
    # int8 scores: one more slot (v_cvt_f32_i32).
    valu_wave = (r * 16 * kt * (9 if int8_qk else 8) + r * 16 * dv) / spec(t, "valu_lanes_per_simd_clk")
    counted = valu if valu is not None else cfg.get("valu")
    if counted and d == counted["head_dim"] and t != "h200":
        # the kernel's own instructions (DIRECT_VALU), and the int8-score variant's own count beside them
        valu_wave = (counted["softmax_and_addressing"] + counted["convert"] +
                     counted["rescale"] * counted["rescale_fraction"] + (INT8_QK_VALU_DELTA if int8_qk else 0))
    if t == "h200":
        busy = wmma_wave * mma_clk if not cfg.get("wgmma") else wmma_wave * mma_clk / 4
        valu_add = 0.0 if cfg.get("wgmma") else valu_wave * 0.5
        waves_res_max, limit, occ_src = cfg["waves_per_simd"], "code", "launch bounds (code)"
        vgpr = sgpr = lds_wg = None
    else:
        busy = wmma_wave * mma_clk
        valu_add = valu_wave
        lds_dyn = (q_rows * (d + 8) + kt * (d + 8) + dv * (kt + 8)) * 2 * cfg["stages"] if not cfg.get("lds_est") else cfg["lds_est"]
        if not cfg["q_in_regs"]:
            lds_dyn = q_rows * (d + 8) * 2 + cfg["stages"] * (kt * (d + 8) + dv * (kt + 8)) * 2
        vgpr, sgpr, lds_wg, occ_src = resources(cfg, t, rows, dict(D=d, DV=dv, lds_dyn=lds_dyn))
        waves_res_max, limit = occupancy(t, vgpr, lds_wg, waves_wg)
    busy_all = busy + valu_add
    resident, u, tail = latency_hiding(t, busy_all, cfg["prefetch"], waves_res_max, wgs * waves_wg)
    t_mma = flops_exec / peak_flops(t, frac) * (busy_all / busy)
    t_lat = t_mma / max(1e-9, u * tail)
    l2_bytes = wgs * ktiles * l2_tile + tq * heads * d * (eb_q + eb_o) + (wgs * q_rows * d * 8 if q_tables else 0)
    lds_bytes = wgs * ktiles * (lds_write + lds_read)
    dram_bytes = tq * heads * d * (eb_q + eb_o) + tk * heads * d * (eb_k + eb_v) + (tq * d * 8 if q_tables else 0)
    bounds = tile_bounds(t, t_mma, t_lat, l2_bytes, lds_bytes, dram_bytes)
    extra = dict(shape=f"T{tq}x{tk} h{heads}x{d}{' causal' if causal else ''}", flops=flops * calls,
                 tile=f"{q_rows}q x {kt}k /{waves_wg}w",
                 per_tile_bytes=dict(l2=l2_tile, lds=lds_write + lds_read, dram=dram_bytes / (wgs * ktiles)),
                 occupancy=occupancy_record(vgpr, sgpr, lds_wg, waves_res_max, limit, resident, u, tail, occ_src),
                 dram_bytes=dram_bytes * calls)
    return finish(t, name, "attention", calls, bounds, extra)


def model_conv(t, cfg, name, cin, cout, h, w, ksize, calls=1, rows=None):
    """Implicit GEMM: M = cout, N = h*w pixels, K = cin*k^2; input patch staged per bk channels."""
    clk = spec(t, "clock_ghz") * 1e9
    bm, bn, bk = cfg["bm"], cfg["bn"], cfg["bk"]
    waves_wg = cfg["wm"] * cfg["wn"]
    taps = ksize * ksize
    tiles = math.ceil(cout / bm) * math.ceil(h * w / bn)
    ksteps = math.ceil(cin / bk)
    products = cfg["products"]
    flops = 2.0 * cout * cin * taps * h * w
    flops_exec = 2.0 * tiles * bm * bn * ksteps * bk * taps * products
    rows_px = bn // 16
    patch = (rows_px + ksize - 1) * (16 + ksize - 1) * bk
    split = 2 if products == 3 else 1
    l2_step = bm * bk * taps * 2 * split + patch * 4  # packed weights (hi [+ lo]) + the f32 input patch
    lds_write = bm * bk * taps * 2 * split + patch * 2 * split
    tm, tn = bm // cfg["wm"] // 16, bn // cfg["wn"] // 16
    dup = spec(t, "frag_dup")
    lds_read = waves_wg * taps * (tm + tn) * 512 * dup * split
    vgpr, sgpr, lds_wg, occ_src = resources(cfg, t, rows, dict(K=ksize))
    waves_res_max, limit = occupancy(t, vgpr, lds_wg, waves_wg)
    busy = tm * tn * taps * spec(t, "mma_clk") * products + patch * 6 / spec(t, "valu_lanes_per_simd_clk") / waves_wg
    resident, u, tail = latency_hiding(t, busy, cfg["prefetch"], waves_res_max, tiles * waves_wg)
    n_simd = spec(t, "units") * spec(t, "simds_per_unit")
    valu_clk_total = tiles * ksteps * patch * 6 / spec(t, "valu_lanes_per_simd_clk")  # norm, SiLU, split, pack
    t_mma = flops_exec / peak_flops(t) + valu_clk_total / (n_simd * clk)
    t_lat = t_mma / max(1e-9, u * tail)
    l2_bytes = tiles * ksteps * l2_step + cout * h * w * 4
    lds_bytes = tiles * ksteps * (lds_write + lds_read)
    dram_bytes = cin * h * w * 4 + cout * h * w * 4 + cout * cin * taps * 2 * split
    bounds = tile_bounds(t, t_mma, t_lat, l2_bytes, lds_bytes, dram_bytes)
    extra = dict(shape=f"{cin}->{cout} {h}x{w} k{ksize}", flops=flops * calls, tile=f"{bm}co x {bn}px /{waves_wg}w",
                 per_tile_bytes=dict(l2=l2_step * ksteps, lds=(lds_write + lds_read) * ksteps, dram=dram_bytes / tiles),
                 occupancy=occupancy_record(vgpr, sgpr, lds_wg, waves_res_max, limit, resident, u, tail, occ_src),
                 dram_bytes=dram_bytes * calls)
    return finish(t, name, "conv", calls, bounds, extra)


def model_rows(t, name, op, rows_, cols, calls=1):
    b = ROW_BYTES[op] * rows_ * cols
    cache = 0.75 * spec(t, "mall_mb") * 2 ** 20
    bw = spec(t, "dram_gbs") * 1e9 * ROW_EFFICIENCY
    bounds = dict(dram=b / bw)
    del cache
    return finish(t, name, "rows", calls, bounds, dict(shape=f"{rows_}x{cols}", flops=0, tile="-",
                                                         per_tile_bytes={}, occupancy={}, dram_bytes=b * calls))


def model_valu_gemm(t, name, m, n, k, calls=1):
    """linear_f32 (the VAE's f32 projections): a VALU FMA GEMM with 32x32 tiles staged through LDS."""
    clk = spec(t, "clock_ghz") * 1e9
    flops = 2.0 * m * n * k
    n_simd = spec(t, "units") * spec(t, "simds_per_unit")
    t_valu = flops / (n_simd * spec(t, "valu_lanes_per_simd_clk") * 2 * clk)
    tiles = math.ceil(m / 32) * math.ceil(n / 32)
    l2 = tiles * (32 + 32) * k * 4
    bounds = dict(valu=t_valu, l2=l2 / (spec(t, "l2_bytes_per_clk") * clk),
                  dram=(m * k + n * k + m * n) * 4 / (spec(t, "dram_gbs") * 1e9))
    return finish(t, name, "valu", calls, bounds, dict(shape=f"{m}x{k}x{n}", flops=flops * calls, tile="32x32 f32",
                                                         per_tile_bytes=dict(l2=(64) * k * 4), occupancy={},
                                                         dram_bytes=(m * k + n * k + m * n) * 4 * calls))


# ---- workloads ---------------------------------------------------------------------------------------
DIT = dict(dim=3072, ffn=8192, heads=24, head_dim=128, layers=42, latent=128, text_dim=4096, skip=(22,))
TE = dict(hidden=4096, layers=32, inter=12288, heads=16, kv_heads=4, head_dim=256,
          lin_k_heads=16, lin_v_heads=32, lin_dim=128, conv=4)


def dit_step(t, conf, rows, tc, tu, size=1024):
    """One denoise step: cond + uncond stacked (hip/src/model/dit.cpp forward_tokens / main_block)."""
    g = conf["gemm"]
    att = conf["attention"]
    d, f, h, hd = DIT["dim"], DIT["ffn"], DIT["heads"], DIT["head_dim"]
    n_img = (size // 16) ** 2
    nc, nu = n_img + tc, n_img + tu
    both = DIT["layers"] - len(DIT["skip"])
    deferred = conf.get("deferred_attn_update", False)
    norm1_op = "add2_norm_modulate" if deferred else "add_norm_modulate"
    norm2_op = "add_norm_modulate_unstored" if deferred else "add_norm_modulate"
    head_op = "add2_norm_modulate_unstored" if deferred else "add_norm_modulate"
    # INT8 ConvRot (issue 49; section 6 of bench/amd_model.md): the block's four projections (qkv, o,
    # ffn_up_gate, ffn_down) run as int8 GEMMs on int8 weights and activations rotated and quantized
    # per row; act_quant says where: "separate" (a row pass after each producer), "norms" (the two
    # norm-modulate rows quantize their own output, the attention output and SiTU's take a pass) or
    # "fused" (every producer writes int8: the norms, the attention's epilogue, SiTU's epilogue)
    q8 = conf.get("int8_gemm", False)
    quant = conf.get("act_quant", "separate") if q8 else None
    norms_q8, outs_q8 = quant in ("norms", "fused", "planned"), quant == "fused"
    # where SiTU's output is quantized: "planned" (the config) SiTU in the up|gate GEMM's epilogue,
    # its f32 output read by a pass; "product" the up|gate product kept in f32 and one pass that
    # applies the unit and quantizes (the int8 GEMM's epilogue as it is)
    situ_f32 = quant in ("planned", "product")
    norms_q8 = norms_q8 or quant == "product"
    assert not norms_q8 or deferred, "the int8 norms are modelled on the deferred-update flow"
    gb = conf["gemm_int8"] if q8 else g
    kb = dict(eb_x=1, eb_w=1) if q8 else {}
    # int8 QK^T where the code takes it (the HIP backend's attention_int8_qk): where int8 matrix
    # products run faster than bf16 ones (gfx12; gfx11's iu8 WMMA runs at the bf16 rate, and the
    # keys' pass and the scores' conversion would make the step slower there)
    int8_qk = conf.get("int8_qk", False) and spec(t, "int8_rate") > 1
    out = []

    def quant_pass(label, m, cols, blocks):
        out.append(model_rows(t, "rotate_quantize " + label, "rotate_quantize", m, cols, blocks))

    for label, m, rows_t, blocks in (("stacked", nc + nu, (nc, nu), both), ("cond only", nc, (nc,), len(DIT["skip"]))):
        tag = f" [{label}]"
        out.append(model_rows(t, "add_norm_modulate norm1" + tag, norm1_op + ("_q8" if norms_q8 else ""), m, d, blocks))
        if q8 and not norms_q8:
            quant_pass("norm1 out" + tag, m, d, blocks)
        vt_gemm = conf.get("v_transposed_by_gemm", False)
        for p in ("q", "k") if vt_gemm else ("q", "k", "v"):
            out.append(model_gemm(t, gb, f"gemm proj.{p}" + tag, m, d, d, blocks, rows=rows, **kb))
        if vt_gemm:  # one v GEMM per row (each row's Vᵀ its own matrix), the same bytes written
            for tr in rows_t:
                out.append(model_gemm(t, gb, f"gemm proj.v T{tr} -> V^T" + tag, tr, d, d, blocks, rows=rows, **kb))
        q_rope = conf.get("q_rope_in_attention", False)
        out.append(model_rows(t, ("norm_rope k" if q_rope else "norm_rope q,k") + tag, "norm_rope", m, d,
                              (1 if q_rope else 2) * blocks))
        if int8_qk:
            out.append(model_rows(t, "smooth_quantize_k" + tag, "smooth_quantize_k", m, d, blocks))
        for tr in rows_t:
            if vt_gemm:
                pass  # K's rows in place, Vᵀ from the v GEMM: nothing to pack
            elif conf.get("k_in_place"):
                out.append(model_rows(t, f"attention_pack V T{tr}" + tag, "attention_pack_v", tr, d, blocks))
            elif not conf.get("kv_in_place"):
                out.append(model_rows(t, f"attention_pack T{tr}" + tag, "attention_pack", tr, d, blocks))
            out.append(model_attention(t, att, f"attention T{tr}" + tag, tr, tr, h, hd, blocks, rows=rows,
                                       q_tables=q_rope, int8_qk=int8_qk, fp8_pv=conf.get("fp8_pv", False),
                                       eb_o=1 if outs_q8 else 2, valu=conf.get("attention_valu")))
        if q8 and not outs_q8:
            quant_pass("attention out" + tag, m, d, blocks)
        out.append(model_gemm(t, gb, "gemm proj.o" + tag, m, d, d, blocks, rows=rows, **kb))
        out.append(model_rows(t, "add_norm_modulate norm2" + tag, norm2_op + ("_q8" if norms_q8 else ""), m, d, blocks))
        if q8 and not norms_q8:
            quant_pass("norm2 out" + tag, m, d, blocks)
        out.append(model_gemm(t, gb, "gemm ffn_up_gate" + tag, m, 2 * f, d, blocks, rows=rows,
                              **dict(kb, eb_y=4 if quant == "product" else 1 if outs_q8 else 2)))
        if situ_f32:  # (the unit's f columns in f32 are the bytes of 2f columns in bf16: eb_y 2)
            op = "situ_quantize_f32" if quant == "product" else "rotate_quantize_f32"
            out.append(model_rows(t, f"{op} SiTU out" + tag, op, m, f, blocks))
        elif not conf.get("fused_unit"):
            out.append(model_rows(t, "gated_unit situ" + tag, "gated_unit", m, f, blocks))
        if q8 and not outs_q8 and not situ_f32:
            quant_pass("SiTU out" + tag, m, f, blocks)
        out.append(model_gemm(t, gb, "gemm ffn_down" + tag, m, d, f, blocks, rows=rows, **kb))
    # per step: timestep embedding and modulation (1 row), video_embedder, head (per row)
    for nm, n, k in (("time_embedding.0", d, 256), ("time_embedding.2", d, d), ("shared_block_modulation", 6 * d, d),
                     ("video_head_modulation", 2 * d, d)):
        out.append(model_gemm(t, g, "gemm " + nm + " (1 row)", 1, n, k, 1, eb_x=4, eb_y=4, rows=rows))
    out.append(model_gemm(t, g, "gemm video_embedder", n_img, d, DIT["latent"], 1, eb_x=4, eb_y=4, rows=rows))
    out.append(model_rows(t, "copy image/text rows", "copy", nc + nu, d, 1))
    out.append(model_rows(t, "head add_norm_modulate", head_op, n_img, d, 2))
    out.append(model_gemm(t, g, "gemm final_linear_video", n_img, DIT["latent"], d, 2, eb_y=4, rows=rows))
    return out


def text_encoder(t, conf, rows, tc, tu):
    """Qwen3.5-9B language tower over both prompts stacked (text_encoder.cpp), weights on the device,
    plus the DiT's text embedder (run once per prompt)."""
    g, att = conf["gemm"], conf["attention"]
    H, I = TE["hidden"], TE["inter"]
    m = tc + tu
    full = TE["layers"] // 4
    lin = TE["layers"] - full
    kw = TE["lin_k_heads"] * TE["lin_dim"]
    vw = TE["lin_v_heads"] * TE["lin_dim"]
    out = [model_rows(t, "embedding gather", "copy", m, H, 1),
           model_rows(t, "rms_norm (input, post-attention)", "rms_norm", m, H, 2 * TE["layers"] + 1),
           model_rows(t, "add (residual)", "add", m, H, 2 * TE["layers"]),
           model_gemm(t, g, "gemm mlp gate|up", m, 2 * I, H, TE["layers"], eb_x=4, eb_y=4, rows=rows, family="gemm-te"),
           model_rows(t, "gated_unit swiglu", "silu_gate", m, I, TE["layers"]),
           model_gemm(t, g, "gemm mlp down", m, H, I, TE["layers"], eb_x=4, eb_y=4, rows=rows, family="gemm-te"),
           # DeltaNet layers
           model_gemm(t, g, "gemm deltanet in (qkv|z|a|b)", m, 2 * kw + vw + vw + 2 * TE["lin_v_heads"], H, lin,
                      eb_x=4, eb_y=4, rows=rows, family="gemm-te"),
           model_rows(t, "deltanet conv1d/gates/l2norm/gated norm", "te_misc", m, 2 * kw + vw, 4 * lin),
           model_gemm(t, g, "gemm deltanet out_proj", m, H, vw, lin, eb_x=4, eb_y=4, rows=rows, family="gemm-te")]
    for tr in (tc, tu):
        # chunked delta rule (deltanet_chunked.hip): ~ T x (dk x dv) state updates per head in chunks of 64;
        # modelled as its f32 state traffic (32 heads x 128 x 128 x 4 B per chunk, read and written)
        chunks = math.ceil(tr / 64)
        out.append(model_rows(t, f"delta_rule_chunked T{tr} (prep + scan)", "copy",
                              TE["lin_v_heads"] * chunks, 128 * 128, lin * 2))
    out += [model_gemm(t, g, "gemm attn q_proj (query|gate)", m, 2 * TE["heads"] * TE["head_dim"], H, full,
                       eb_x=4, eb_y=4, rows=rows, family="gemm-te"),
            model_gemm(t, g, "gemm attn k|v", m, 2 * TE["kv_heads"] * TE["head_dim"], H, full, eb_x=4, eb_y=4,
                       rows=rows, family="gemm-te"),
            model_rows(t, "attn q/k norm, rope, gate", "te_misc", m, TE["heads"] * TE["head_dim"], 4 * full)]
    for tr in (tc, tu):
        out.append(model_rows(t, f"attention_pack T{tr}", "attention_pack", tr, TE["kv_heads"] * TE["head_dim"], full))
        out.append(model_attention(t, att, f"attention T{tr} causal", tr, tr, TE["heads"], TE["head_dim"], full,
                                   causal=True, rows=rows, eb_q=4, eb_o=4))
    out.append(model_gemm(t, g, "gemm attn o_proj", m, H, TE["heads"] * TE["head_dim"], full, eb_x=4, eb_y=4,
                          rows=rows, family="gemm-te"))
    # DiT text embedder (dit.cpp embed_text), once per prompt: proj + two text blocks (f32 rows)
    d, f = DIT["dim"], DIT["ffn"]
    out.append(model_gemm(t, g, "dit text_embedder.proj", m, d, DIT["text_dim"], 1, eb_x=4, eb_y=4, rows=rows,
                          family="gemm-te"))
    for nm, n, k in (("qkv", 3 * d, d), ("proj", d, d), ("ffn_up", f, d), ("ffn_gate", f, d), ("ffn_down", d, f)):
        out.append(model_gemm(t, g, f"dit text block {nm}", m, n, k, 2, eb_x=4, eb_y=4, rows=rows, family="gemm-te"))
    for tr in (tc, tu):
        out.append(model_attention(t, att, f"dit text block attention T{tr}", tr, tr, DIT["heads"], DIT["head_dim"], 2,
                                   rows=rows, eb_q=4, eb_o=4))
    out.append(model_rows(t, "dit text block rows", "te_misc", m, d, 2 * 10))
    return out


def vae_decode(t, conf, rows, size=1024):
    """FLUX.2 small decoder (docs/vae.md; hip/src/model/vae.cpp), channels [96,192,384,384]."""
    c = conf["conv"]
    out = []
    lat = size // 8
    chans = [384, 384, 192, 96]

    def conv(name, cin, cout, hw, k, calls=1):
        out.append(model_conv(t, c, name, cin, cout, hw, hw, k, calls, rows=rows))

    def norm(name, ch, hw, calls=1):
        out.append(model_rows(t, name, "gn_stats", ch, hw * hw, calls))

    conv("post_quant_conv 1x1", 32, 32, lat, 1)
    conv("conv_in", 32, 384, lat, 3)
    norm("group_norm stats mid", 384, lat, 5)
    conv("mid resnets conv", 384, 384, lat, 3, 4)
    tokens = lat * lat
    out.append(model_valu_gemm(t, "mid attention to_qkv (linear_f32)", tokens, 3 * 384, 384))
    out.append(model_rows(t, "mid attention pack K/V (f32 -> bf16)", "attention_pack", tokens, 384, 1))
    out.append(model_attention(t, conf["attention"], "mid attention T16384 h1x384", tokens, tokens, 1, 384, 1, rows=rows,
                               eb_q=4, eb_o=4))
    out.append(model_valu_gemm(t, "mid attention to_out (linear_f32)", tokens, 384, 384))
    prev = 384
    hw = lat
    for i, ch in enumerate(chans):
        for j in range(3):
            cin = prev if j == 0 else ch
            norm(f"group_norm stats up{i}", cin, hw, 2)
            conv(f"up{i} resnet{j} conv1", cin, ch, hw, 3)
            conv(f"up{i} resnet{j} conv2", ch, ch, hw, 3)
            if cin != ch:
                conv(f"up{i} resnet{j} shortcut 1x1", cin, ch, hw, 1)
        prev = ch
        if i < 3:
            hw *= 2
            conv(f"up{i} upsample conv", ch, ch, hw, 3)
    norm("group_norm stats out", 96, hw, 1)
    conv("conv_out", 96, 3, hw, 3)
    out.append(model_rows(t, "to u8 / unpatchify", "copy", 3, hw * hw, 2))
    return out


def summarize(kernels):
    return sum(k["total_ms"] for k in kernels) / 1e3


def by_family(kernels):
    fam = {}
    for k in kernels:
        fam[k["family"]] = fam.get(k["family"], 0.0) + k["total_ms"]
    return fam


# ---- calibration on the H200 -------------------------------------------------------------------------
# Measured: bench/results/2026-11-30-session5/final-hip_dit_kernel_check.log (lines 283-306, 239-246)
# and the step time bench/results/2026-11-30-h200-s5.md (1024x1024, 64-token prompt, 10-token negative).
H200_MEASURED = [
    ("gemm leaf 128x128/4w raw 4160x3072x3072 (x f32)", "gemm_leaf128", (4160, 3072, 3072), dict(eb_x=4, eb_y=4), 0.2957),
    ("gemm mma 128x128/4w 4160x3072x3072 x:bf16", "gemm_mma128", (4160, 3072, 3072), dict(eb_y=4), 0.2164),
    ("gemm mma 128x256/8w 4160x3072x3072 x:bf16", "gemm_mma256", (4160, 3072, 3072), dict(eb_y=4), 0.1953),
    ("gemm mma 128x256/8w ffn_up_gate 4160x3072x16384 (x f32)", "gemm_mma256", (4160, 16384, 3072), dict(eb_x=4, eb_y=4), 1.2605),
    ("gemm wgmma q/k/v/o 4160x3072x3072 x:bf16", "gemm_wgmma", (4160, 3072, 3072), dict(eb_y=4), 0.1122),
    ("gemm wgmma ffn_up_gate 4160x3072x16384 x,y:bf16", "gemm_wgmma", (4160, 16384, 3072), dict(), 0.5761),
    ("gemm wgmma ffn_down 4160x8192x3072 x,y:bf16", "gemm_wgmma", (4160, 3072, 8192), dict(), 0.2652),
    ("attention[ref] T4173 h24x128 bf16", "attention_ref", 4173, {}, 1.1715),
    ("attention[flash] T4173 h24x128 bf16", "attention_flash", 4173, {}, 0.7905),
    ("attention (wgmma) T4173 h24x128 bf16", "attention_wgmma", 4173, {}, 0.3297),
    # bench/results/2026-12-01-session7/amd-bench-sm_90.txt (MOSSINFER_KERNELS=portable)
    ("gemm portable 128x64/4w 4160x3072x3072 x:bf16", "gemm_portable", (4160, 3072, 3072), dict(eb_y=4), 0.4737),
    # bench/results/2026-12-03-session15 (the direct tiling; the LDS-staged kernel before it: 1.1939 ms)
    ("attention[portable] T4173 h24x128 bf16", "attention_portable", 4173, {}, 3.9261),
]
H200_STEP_MEASURED_S = 0.164


def calibrate():
    rows = []
    conf = CONFIGS["h200"]
    for label, key, shape, kw, ms in H200_MEASURED:
        cfg = conf[key]
        if cfg["kind"] == "gemm":
            m, n, k = shape
            r = model_gemm("h200", cfg, label, m, n, k, 1, **kw)
        else:
            r = model_attention("h200", cfg, label, shape, shape, 24, 128, 1)
        rows.append(dict(kernel=label, modelled_ms=r["time_ms"], measured_ms=ms, ratio=ms / r["time_ms"],
                         bound=r["bound"], bounds_ms=r["bounds_ms"]))
    # The H200 step with what the H200 build runs: wgmma GEMMs (SiTU fused), wgmma attention, K/V in place.
    h_conf = {"gemm": conf["gemm_wgmma"], "attention": conf["attention_wgmma"], "fused_unit": True, "kv_in_place": True}
    ks = dit_step("h200", h_conf, None, 64, 10)
    step = summarize(ks)
    return rows, dict(modelled_s=step, measured_s=H200_STEP_MEASURED_S, ratio=H200_STEP_MEASURED_S / step)


# ---- report ------------------------------------------------------------------------------------------
def run(config_name, table_path, tc, tu, l2_scale=1.0):
    """table_path None: the config's own check_device table (DEFAULT_TABLE unless it names one)."""
    if table_path is None:
        table_path = CONFIGS[config_name].get("check_device_table", DEFAULT_TABLE)
    rows = load_rows(table_path)
    if l2_scale != 1.0:
        for t in AMD_TARGETS:
            v, s = SPECS[t]["l2_bytes_per_clk"]
            SPECS[t]["l2_bytes_per_clk"] = (v * l2_scale, s)
    conf = CONFIGS[config_name]
    res = {}
    for t in AMD_TARGETS:
        step = dit_step(t, conf, rows, tc, tu)
        te = text_encoder(t, conf, rows, tc, tu)
        vae = vae_decode(t, conf, rows)
        res[t] = dict(step=step, te=te, vae=vae, step_s=summarize(step), te_s=summarize(te), vae_s=summarize(vae),
                      step_flops=sum(k["flops"] for k in step))
    if l2_scale != 1.0:
        for t in AMD_TARGETS:
            v, s = SPECS[t]["l2_bytes_per_clk"]
            SPECS[t]["l2_bytes_per_clk"] = (v / l2_scale, s)
    return res, len(rows)


def calibration_factors(config_name, cal_rows):
    """Per-family measured/modelled ratios of the H200 kernels built like this config's kernels."""
    ratios = {r["kernel"]: r["ratio"] for r in cal_rows}
    return {fam: ratios[k] for fam, k in CONFIGS[config_name].get("analogue", {}).items()}



def int8_table(rows, tc, tu, radeon_factors):
    """The lines of the INT8 table: each step of INT8_VARIANTS on the modelled targets, Radeon-calibrated
    (radeon_factors(t): the portable kernels' factors on t), with the issue's goals met or missed."""
    variants = [(name, {t: dit_step(t, variant_config(ch), rows, tc, tu) for t in INT8_TARGETS})
                for name, ch in INT8_VARIANTS]
    out = ["1024x1024 step, Radeon-calibrated (plain model in brackets), s; goal: " +
           ", ".join(f"{t} <= {v} s" for t, v in INT8_GOALS.items())]
    head = f"{'variant':74s}" + "".join(f" {t:>14s}" for t in INT8_TARGETS)
    out.append(head)
    for name, steps in variants:
        cells = []
        for t in INT8_TARGETS:
            cells.append(f"{calibrated_step_s(steps[t], radeon_factors(t)):6.3f} ({summarize(steps[t]):5.3f})")
        out.append(f"{name:74s}" + "".join(f" {c:>14s}" for c in cells))
    final = variants[INT8_DESIGN][1]
    for t in RELEASE_TARGETS:
        if t not in INT8_TARGETS:
            out.append(f"{t}: not modelled (no device class of the model has its figures; docs/amd_targets.md)")
            continue
        ks = final[t]
        f = radeon_factors(t)
        fam = {}
        for k in ks:
            fam[k["family"]] = fam.get(k["family"], 0.0) + k["total_ms"] * f.get(k["family"], 1.0) / 1e3
        quant = sum(k["total_ms"] for k in ks if k["name"].startswith(("rotate_quantize", "smooth_quantize"))) / 1e3
        step = calibrated_step_s(ks, f)
        goal = INT8_GOALS.get(t)
        verdict = "" if goal is None else (f"  goal <= {goal} s: " + ("met" if step <= goal else "MISSED"))
        out.append(f"{t} int8 step 1024x1024: {step:.3f} s Radeon-calibrated (" +
                   ", ".join(f"{k} {v:.3f}" for k, v in sorted(fam.items())) +
                   f"; quantization passes {quant:.3f}){verdict}")
    return out


def calibrated_step_s(kernels, factors):
    return sum(k["total_ms"] * factors.get(k["family"], 1.0) for k in kernels) / 1e3


def summary_lines(config_name, res, factors=None, tc=77, tu=10, radeon=None):
    """radeon: target -> its Radeon-calibrated family factors (amd_calibration.radeon_factors)."""
    lines = []
    for t in AMD_TARGETS:
        r = res[t]
        lines.append(f"{t} step 1024x1024: {r['step_s']:.2f} s (modelled)")
        lines.append(f"{t} text encoder {tc}+{tu} tokens: {r['te_s']:.3f} s (modelled)")
        lines.append(f"{t} vae decode 1024x1024: {r['vae_s']:.2f} s (modelled)")
        if factors:
            f = ", ".join(f"{k} x{v:.2f}" for k, v in sorted(factors.items()))
            lines.append(f"{t} step 1024x1024: {calibrated_step_s(r['step'], factors):.2f} s (modelled, H200-calibrated: {f})")
        if radeon and radeon.get(t):
            f = ", ".join(f"{k} x{v:.2f}" for k, v in sorted(radeon[t].items()))
            lines.append(f"{t} step 1024x1024: {calibrated_step_s(r['step'], radeon[t]):.2f} s (modelled, "
                         f"Radeon-calibrated: {f})")
    return lines


def print_table(t, name, kernels, out):
    out.write(f"\n== {t} ({spec(t, 'name')}) {name} ==\n")
    out.write(f"{'kernel':58s} {'shape':24s} {'tile':16s} {'calls':>5s} {'ms/call':>9s} {'total ms':>9s} {'bound':8s}"
              f" {'mma':>8s} {'lat':>8s} {'l2':>8s} {'lds':>8s} {'dram':>8s} occ\n")
    for k in kernels:
        b = k["bounds_ms"]
        occ = k.get("occupancy") or {}
        occ_s = f"{occ.get('waves_per_simd', '-')}w/SIMD({occ.get('limit', '-')}) u={occ.get('util', '-')}" if occ else "-"
        cell = lambda key: f"{b[key]:8.3f}" if key in b else f"{'-':>8s}"
        out.write(f"{k['name'][:58]:58s} {k['shape'][:24]:24s} {k['tile'][:16]:16s} {k['calls']:5d} {k['time_ms']:9.3f}"
                  f" {k['total_ms']:9.2f} {k['bound']:8s} {cell('mma')} {cell('latency')} {cell('l2')} {cell('lds')}"
                  f" {cell('dram') if 'dram' in b else cell('valu')} {occ_s}\n")
    out.write(f"{'sum':58s} {'':24s} {'':16s} {'':5s} {'':9s} {summarize(kernels) * 1e3:9.2f}\n")


# The configs in the order `all` prints them, each with what it is: the code as it is comes first.
CONFIG_LABELS = {
    "portable": "the code as it is: what the AMD build runs, and NVIDIA under MOSSINFER_KERNELS=portable",
    "candidate": "a DESIGN, NOT code: fused SiTU, K/V read in place, register-prefetched 64-key attention, 4-wave conv",
    "seed": "history: the one-wave kernels before the redesign, no longer in the code",
    "int8": "issue 49's INT8 ConvRot DiT: portable + the int8 GEMM as written; the quantization's fusion not code yet",
}


def this_module():
    """This module as the object amd_calibration and amd_streaming take: its sys.modules entry, or, when it
    was loaded without one (importlib from a path), a namespace over its globals (the same tables)."""
    mod = sys.modules.get(__name__)
    if mod is not None and getattr(mod, "main", None) is main:
        return mod
    return types.SimpleNamespace(**globals())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=list(CONFIG_LABELS) + ["all"], default="portable",
                    help="default: portable, the code as it is")
    ap.add_argument("--check-device-table", default=None, help="default: each config's own table")
    ap.add_argument("--json")
    ap.add_argument("--prompt-tokens", type=int, default=77)
    ap.add_argument("--negative-tokens", type=int, default=10)
    ap.add_argument("--l2-scale", type=float, default=1.0, help="multiply the (unsourced) AMD L2 bandwidths")
    ap.add_argument("--quiet", action="store_true", help="summary lines only")
    a = ap.parse_args(argv)
    out = sys.stdout
    cal_rows, cal_step = calibrate()
    me = this_module()
    radeon_rows = amd_calibration.calibrate(me)
    names = list(CONFIG_LABELS) if a.config == "all" else [a.config]
    report = dict(calibration=dict(kernels=cal_rows, step=cal_step, radeon=radeon_rows), configs={}, sources=SOURCES,
                  specs={t: {k: v[0] for k, v in SPECS[t].items()} for t in SPECS})
    for name in names:
        res, nrows = run(name, a.check_device_table, a.prompt_tokens, a.negative_tokens, a.l2_scale)
        if not a.quiet:
            out.write(f"\n######## config: {name} (check_device rows read: {nrows}) ########\n")
            for t in AMD_TARGETS:
                print_table(t, "denoise step (cond + uncond stacked)", res[t]["step"], out)
                print_table(t, "text encoder", res[t]["te"], out)
                print_table(t, "VAE decode", res[t]["vae"], out)
        out.write(f"\n-- summary, config {name} ({CONFIG_LABELS[name]}) --\n")
        factors = calibration_factors(name, cal_rows)
        radeon = {t: amd_calibration.radeon_factors(me, name, t, radeon_rows) for t in AMD_TARGETS}
        for line in summary_lines(name, res, factors, a.prompt_tokens, a.negative_tokens, radeon):
            out.write(line + "\n")
        for t in AMD_TARGETS:
            fam = by_family(res[t]["step"])
            out.write(f"{t} step by family (s): " + ", ".join(f"{k} {v / 1e3:.3f}" for k, v in sorted(fam.items())) + "\n")
        report["configs"][name] = {t: dict(step_s=res[t]["step_s"], te_s=res[t]["te_s"], vae_s=res[t]["vae_s"],
                                           step_calibrated_s=calibrated_step_s(res[t]["step"], factors),
                                           step_radeon_calibrated_s=calibrated_step_s(res[t]["step"], radeon[t]),
                                           step_tflop=res[t]["step_flops"] / 1e12, step=res[t]["step"], te=res[t]["te"],
                                           vae=res[t]["vae"]) for t in AMD_TARGETS}
    if "int8" in names:
        rows = load_rows(a.check_device_table or CONFIGS["int8"].get("check_device_table", DEFAULT_TABLE))
        out.write("\n-- INT8 ConvRot (issue 49; bench/amd_model.md section 6): from the code to the int8 config --\n")
        for line in int8_table(rows, a.prompt_tokens, a.negative_tokens,
                               lambda t: amd_calibration.radeon_factors(me, "portable", t, radeon_rows)):
            out.write(line + "\n")
        h = h200_int8_steps()
        out.write("h200 step 1024x1024 (modelled, wgmma; what h200_int8.sh measures): bf16 %.3f s, INT8 %.3f s with the "
                  "quantization apart (x%.2f), %.3f s fused (x%.2f); target x0.70\n"
                  % (h["bf16"], h["int8 separate"], h["int8 separate"] / h["bf16"], h["int8 fused"],
                     h["int8 fused"] / h["bf16"]))
        out.write("\n-- INT8 DiT on an 8 GB card at 1024x1024 (the planner's rule) --\n")
        for line in int8_memory_lines():
            out.write(line + "\n")
    out.write("\n-- calibration: the same model on the H200 kernels --\n")
    for r in cal_rows:
        out.write(f"{r['kernel'][:60]:60s} modelled {r['modelled_ms']:8.4f} ms  measured {r['measured_ms']:8.4f} ms"
                  f"  measured/modelled {r['ratio']:5.2f}  ({r['bound']})\n")
    out.write(f"h200 step 1024x1024: {cal_step['modelled_s']:.3f} s (modelled), measured {cal_step['measured_s']:.3f} s,"
              f" measured/modelled {cal_step['ratio']:.2f}\n")
    out.write("\n-- calibration on Radeons: published kernels modelled from their code (amd_calibration.py) --\n")
    for line in amd_calibration.report_lines(radeon_rows):
        out.write(line + "\n")
    if "portable" in names:
        rows = load_rows(a.check_device_table or CONFIGS["portable"].get("check_device_table", DEFAULT_TABLE))
        out.write("\n-- streamed step on 8 GB cards, config portable (amd_streaming.py) --\n")
        for line in amd_streaming.report_lines(me, "portable", rows, a.prompt_tokens, a.negative_tokens,
                                               lambda t: amd_calibration.radeon_factors(me, "portable", t, radeon_rows)):
            out.write(line + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
