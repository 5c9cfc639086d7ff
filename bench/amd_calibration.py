"""Calibration of bench/amd_model.py on Radeons (issue 33).

Published measurements on RDNA3 / RDNA4 cards of kernels whose code is public, each modelled with
amd_model's own method from that code (tile, waves, k-step, pipeline, LDS use, VGPRs), and the ratio
measured / modelled that says how much the model misses on a Radeon. The calibrated step multiplies
each kernel family of a config by the ratio of the published kernel built most like it
(RADEON_ANALOGUE), for the target's RDNA generation. bench/amd_model.md section 3b says which of
these ratios to trust and why.

Nothing here is fetched at run time: every number below was read from the source it names, and the
kernels were modelled from the code at the commit it names (no code of theirs is in this repository).
The functions take the amd_model module as their first argument: amd_model imports this file, and
importing amd_model back would make a second copy of its tables (SPECS, CONFIGS).
Standard library only.
"""


def attention_flops(batch_heads, seq, head_dim):
    """Non-causal attention forward: QK^T and PV, 2 flops per multiply-add each (4 * B*H * N^2 * D),
    the formula opus_attn_gfx1201's benchmark divides by its time."""
    return 4.0 * batch_heads * seq * seq * head_dim


def gemm_flops(m, n, k):
    return 2.0 * m * n * k


def ms_from_tflops(flops, tflops):
    return flops / (tflops * 1e12) * 1e3


# ---- the published measurements -----------------------------------------------------------------
# kernel: a config dict in amd_model's CONFIGS format, read off the kernel's code; where the code
# does not state a figure (VGPRs of a kernel whose code object is not published) vgpr_est says so.
# flops / measured_ms: the case's work and its published time (or the time from its published rate).
OPUS_COMMIT = "31d6326a8cc26e4b6924daf0a332fb7879375bb0"
OPUS_CODE = ("carlushuang/gcnasm, branch carhuang/opus_attn_gfx1201 (pull request "
             "https://github.com/carlushuang/gcnasm/pull/24), commit " + OPUS_COMMIT)
OPUS_TABLE = ("opus_attn_gfx1201/README.md at that commit, 'Performance - v0 through v11 results (bf16)': "
              "RX 9070 XT, bf16 in/out, f32 accumulation, D 128, column 'H=32 N=2048' (B 1), TFLOPS = "
              "4*B*H*N^2*D / time, hipEvent timing of 100 launches after 5 warm-ups (attn_gfx1201_host.cc)")

CASES = [
    dict(
        key="ck-wmma-64x128-gfx1100",
        label="CK DeviceGemmWmma_CShuffle 64x128x64/4w fp16 16384^3 (RX 7900 XTX)",
        target="gfx1100", family="gemm", op="gemm", shape=(16384, 16384, 16384), eb=dict(eb_x=2, eb_w=2, eb_y=2),
        flops=gemm_flops(16384, 16384, 16384), measured_ms=105.451,
        published="Perf: 105.451 ms, 83.4141 TFlops, DeviceGemmWmma_CShuffle<128, 64, 128, 64, 8, 16, 16, 2, 4> "
                  "AEnableLds: 1, BEnableLds: 1, NumPrefetch: 1, LoopScheduler: Default, PipelineVersion: v1 "
                  "(./example_gemm_wmma_fp16 0 2 1 16384 16384 16384 0 0 0)",
        source="https://github.com/evshiron/rocm_lab/issues/14 (comment by sdli1995, 2023-10-09, on an RX 7900 XTX)",
        code="ROCm/composable_kernel: include/ck/tensor_operation/gpu/device/impl/device_gemm_wmma.hpp (template "
             "order BlockSize, MPerBlock, NPerBlock, KPerBlock, K1, MPerWmma, NPerWmma, MRepeat, NRepeat; commit "
             "0202ecce604981020be4d28d6fa30a4d6daee4a0) and include/ck/tensor_operation/gpu/grid/"
             "gridwise_gemm_pipeline_v1.hpp, GridwiseGemmPipeline_v1<1, true, true> (commit "
             "04c6a9787e6ee62b796e210a9a1a152987467321): the next k-step read into registers (RunRead) before "
             "the block multiplies, written to the one LDS buffer after it (RunWrite), two barriers per k-step",
        structure="128 threads = 4 wave32, 64x128 tile, each wave 2x4 WMMA tiles (32x64), K 64 per step, A and B "
                  "through one LDS buffer, next step held in registers: the portable GEMM's pipeline (kHold) "
                  "with one LDS stage instead of two",
        kernel=dict(kind="gemm", bm=64, bn=128, bk=64, wm=2, wn=2, stages=1, prefetch=1, lds="ab", raster=8,
                    products=1, table=None, lds_est=(64 + 128) * 64 * 2,
                    # 64 accumulator + 16 A + 32 B fragment VGPRs (gfx11 duplicates A/B), 48 for the held
                    # next step ((64+128) x 64 x 2 B / 128 lanes), ~20 addressing: LDS limits occupancy anyway
                    vgpr_est={"gfx1100": 184}),
    ),
    dict(
        key="tensile-128x128x32-gfx1201",
        label="hipBLASLt/Tensile MT128x128x32 MIWT4_4 WG32_4_1 fp16 8192^3 (RX 9070 XT)",
        target="gfx1201", family="gemm", op="gemm", shape=(8192, 8192, 8192), eb=dict(eb_x=2, eb_w=2, eb_y=2),
        flops=gemm_flops(8192, 8192, 8192), measured_ms=9.69,
        published="torch.float16 9.69 ms 113.53 TFLOP/s (torch.bfloat16 9.50 ms 115.68 TFLOP/s), kernel "
                  "Cijk_Ailk_Bljk_HHS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x32_MI16x16x1_..._ISA1201_..._MIWT4_4_..._WG32_4_1",
        source="https://github.com/ROCm/rocm-libraries/issues/10861 (2026-08-16, RX 9070 XT, PyTorch ROCm wheel; "
               "the time and rate give 1.1e12 flops: 8192^3)",
        code="Tensile's solution naming (ROCm/rocm-libraries projects/hipblaslt/tensilelite): MT = macro tile "
             "M x N x depth-U, MIWT = wave tile in 16x16 WMMA blocks, WG = workgroup 32 x 4 (4 wave32); the "
             "parts of the name the issue elides (prefetch, LDS buffers) are taken as Tensile's usual "
             "PGR1 (next step in registers) with two LDS buffers (1LDSB0), as in the gfx1100 solution name "
             "quoted in https://github.com/tinygrad/tinygrad/issues/5569",
        structure="4 wave32, 128x128 tile, each wave 4x4 WMMA tiles (64x64), depth 32, next step in registers, "
                  "two LDS buffers: the candidate GEMM's structure, in tuned assembly",
        kernel=dict(kind="gemm", bm=128, bn=128, bk=32, wm=2, wn=2, stages=2, prefetch=1, lds="ab", raster=8,
                    products=1, table=None, lds_est=2 * (128 + 128) * 32 * 2, vgpr_est={"gfx1201": 200}),
    ),
    dict(
        key="opus-attn-v1-gfx1201",
        label="opus_attn v1 4w x 16q, 16-key K/V in LDS, bf16 D128 H32 N2048 (RX 9070 XT)",
        target="gfx1201", family="attention", op="attention", shape=(2048, 32, 128), eb=dict(eb_q=2, eb_o=2),
        flops=attention_flops(32, 2048, 128), measured_tflops=27.5,
        published="v1: 27.5 TFLOPS at H=32 N=2048 (" + OPUS_TABLE + ")",
        source="https://github.com/carlushuang/gcnasm/pull/24",
        code=OPUS_CODE + ": opus_attn_gfx1201/attn_gfx1201_kernel_v1_template.hpp (4 waves of 16 queries, BLOCK_N "
             "16, K and V tiles copied by all 128 threads into LDS then a barrier, Q in registers, P through a "
             "per-wave LDS scratch, 10 KB LDS); VGPRs not published for v1: the README's v2 note puts v1's "
             "occupancy at 9 waves, at most 170 VGPRs",
        structure="several waves sharing each K/V tile through LDS, copies synchronous (no prefetch): the "
                  "portable attention's structure, with 16-key tiles and 16 queries per wave",
        kernel=dict(kind="attention", q_rows=64, kt=16, dv=128, waves=4, row_tiles=1, stages=1, prefetch=0,
                    q_in_regs=True, table=None, lds_est=10 * 1024, vgpr_est={"gfx1201": 168}),
    ),
    dict(
        key="opus-attn-v0-gfx1201",
        label="opus_attn v0 1w x 16q, K/V from global, bf16 D128 H32 N2048 (RX 9070 XT)",
        target="gfx1201", family="attention", op="attention", shape=(2048, 32, 128), eb=dict(eb_q=2, eb_o=2),
        flops=attention_flops(32, 2048, 128), measured_tflops=30.3,
        published="v0: 30.3 TFLOPS at H=32 N=2048 (" + OPUS_TABLE + "); 168 VGPRs (README, v11 note)",
        source="https://github.com/carlushuang/gcnasm/pull/24",
        code=OPUS_CODE + ": opus_attn_gfx1201/attn_gfx1201_kernel_v0_template.hpp (one wave of 16 queries per "
             "workgroup, 16-key steps, K and V fragments loaded from global memory into registers, only P "
             "through a 16x16 LDS scratch)",
        structure="one wave per workgroup, no K/V sharing: the seed's attention (which staged K/V in LDS)",
        kernel=dict(kind="attention", q_rows=16, kt=16, dv=128, waves=1, row_tiles=1, stages=1, prefetch=0,
                    q_in_regs=True, kv_lds=False, table=None, lds_est=16 * 16 * 2, vgpr_est={"gfx1201": 168}),
    ),
    dict(
        key="opus-attn-v11-gfx1201",
        label="opus_attn v11 1w x 16q, transposed scores, no LDS, bf16 D128 H32 N2048 (RX 9070 XT)",
        target="gfx1201", family="attention", op="attention", shape=(2048, 32, 128), eb=dict(eb_q=2, eb_o=2),
        flops=attention_flops(32, 2048, 128), measured_tflops=37.2,
        published="v11: 37.2 TFLOPS at H=32 N=2048 (" + OPUS_TABLE + "); 144 VGPRs, no LDS (README)",
        source="https://github.com/carlushuang/gcnasm/pull/24",
        code=OPUS_CODE + ": opus_attn_gfx1201/attn_gfx1201_kernel_v11_template.hpp (v0's one wave of 16 queries "
             "and 16-key steps, the scores computed transposed (K as the A operand) so that they already are "
             "the PV product's operand: no LDS at all; row max and sum one cross-half permute)",
        structure="one wave, transposed scores kept in registers: the operand scheme of our AMD attention "
                  "(S^T = K Q^T, O^T = V^T P^T), without its LDS-shared K/V tiles",
        kernel=dict(kind="attention", q_rows=16, kt=16, dv=128, waves=1, row_tiles=1, stages=1, prefetch=0,
                    q_in_regs=True, kv_lds=False, p_lds=False, table=None, lds_est=0, vgpr_est={"gfx1201": 144}),
    ),
]

# opus_attn_gfx1201's later versions (the same pull request, grown to v88, and its follow-ups): v39, the
# fastest kernel of #24 that builds from HIP source, timed again by the follow-up pull requests.
OPUS_V39_COMMIT = "9d5c7d76b6db4affbcef06cf75ce29bd3a9fdb71"
CASES.append(dict(
    key="opus-attn-v39-gfx1201",
    label="opus_attn v39 8w x 16q, 32-key steps, K/V^T fragments from global, bf16 D128 H32 N2048 (RX 9070 XT)",
    target="gfx1201", family="attention", op="attention", shape=(2048, 32, 128), eb=dict(eb_q=2, eb_o=2),
    flops=attention_flops(32, 2048, 128), measured_tflops=86.4,
    published="v39 ('#24 best HIP'): 86.4 TFLOPS at b=1 h=32 n=2048 (verify on), 86.6 at b=4 h=32 n=4096, RX 9070 "
              "XT, ROCm 7.2.3, best of 7 (the v153 pull request's table); #24's README table: 88.5 best, 205 VGPRs",
    source="https://github.com/carlushuang/gcnasm/pull/30",
    code="carlushuang/gcnasm opus_attn_gfx1201/attn_gfx1201_kernel_v39_template.hpp (commit " + OPUS_V39_COMMIT +
         ") instantiated as opus_attn_traits<128, 32, 128> (attn_gfx1201_kernel_v39.cc): 8 waves of 16 queries, "
         "Q pre-scaled in registers, per 32 keys two 16x16 score blocks computed transposed (K the A operand, "
         "16-byte fragment loads from global), P kept in registers as the PV operand, V pre-transposed in "
         "global memory and loaded the same way, the rescale skipped when the row max holds; no LDS",
    structure="8 waves sharing no LDS, each reading its K and V^T fragments from global memory, Q in "
              "registers, 32-key steps: the portable attention's direct tiling up to head dim 128 "
              "(attention.hip PortableTiling, Stages 0)",
    kernel=dict(kind="attention", q_rows=128, kt=32, dv=128, waves=8, row_tiles=1, stages=1, prefetch=0,
                q_in_regs=True, kv_lds=False, p_lds=False, table=None, lds_est=0, vgpr_est={"gfx1201": 205}),
))

# v139 (the same project's follow-up, PR #31 "lane A"): v39's kernel plus "K-load software pipelining in
# QK^T + s_setprio wave-priority scheduling of the WMMA bursts -- pure issue-window levers, no extra
# VGPR liveness" (its own words). The model does not see priorities or the load order, so it models
# v139 as v39 (the same waves, tiles, bytes and registers); the ratio carries what they buy. The
# portable attention has both since session 18: all 16 K fragments of a 32-key step issued before its
# first score WMMA (the gfx1200 disassembly), and priorities 3 for the scores, 0 for the softmax, 1 for
# P·V (attention.hip, wave_priority).
OPUS_V139_COMMIT = "4898c2f4eff938b7cecf88f2cb43d32cf5778bd8"
CASES.append(dict(
    CASES[-1],  # v39's case: its shape, flops and the kernel the model is given
    key="opus-attn-v139-gfx1201",
    label="opus_attn v139 = v39 + K loads ahead of the score WMMAs + s_setprio, bf16 D128 H32 N2048 (RX 9070 XT)",
    measured_tflops=91.0,
    published="v139: 91.0 TFLOPS at b=1 h=32 n=2048 (verify on), 93.5 at b=4 h=32 n=4096 against v39's 86.4 and "
              "86.6 in the same table, RX 9070 XT, ROCm 7.2.3, best of 7 (PR #31's table; PR #28: 92.8 best of 3)",
    source="https://github.com/carlushuang/gcnasm/pull/31",
    code="carlushuang/gcnasm opus_attn_gfx1201/attn_gfx1201_kernel_v139_template.hpp (commit " + OPUS_V139_COMMIT +
         ") instantiated as opus_attn_traits<128, 32, 128>: v39's 8 waves of 16 queries, 32-key steps, K/V^T "
         "fragments from global memory, no LDS; the next D-tile's K fragments loaded while the current one "
         "multiplies; s_setprio 3 over the score WMMAs, 0 over the softmax, 1 over P·V",
    structure="v39's structure (the portable attention's direct tiling) with the K loads issued ahead of the "
              "score WMMAs and wave priorities by phase: the portable attention since session 18",
))

# The very cards' library GEMMs: PyTorch's bf16 matmul (hipBLASLt/Tensile) at 4096^3, reported to
# zzc0721/torch-performance-test-data by their owners (the rate is 2 * 4096^3 / time, the
# benchmark's own formula). The kernel each run picked is not named; it is modelled with the
# structure of the gfx1201 bf16/fp16 solution named above (Tensile MT128x128x32, 4 wave32 of 64x64,
# depth 32, next step in registers, two LDS buffers), which the model's bound (mma) does not depend
# on beyond a few percent. 4096^3 is the size nearest the DiT's GEMMs (8279 x 3072..16384 x
# 3072..8192) that every report has; several reports show a worse solution at 8192^3 (the 9060 XT:
# 44.87 TFLOP/s there against 66.14 at 4096), which the 8192^3 Tensile case above may share.
TORCH_BENCH = ("https://github.com/zzc0721/torch-performance-test-data (PyTorch matmul benchmark, issues "
               "filed by the cards' owners; 'BF16: 4096x4096' line)")


def library_gemm_case(key, target, card, tflops, issue, published):
    return dict(
        key=key, label=f"hipBLASLt via torch.matmul bf16 4096^3 ({card})", target=target, family="gemm", op="gemm",
        shape=(4096, 4096, 4096), eb=dict(eb_x=2, eb_w=2, eb_y=2), flops=gemm_flops(4096, 4096, 4096),
        measured_tflops=tflops, published=published,
        source=f"https://github.com/zzc0721/torch-performance-test-data/issues/{issue}",
        code=TORCH_BENCH + "; the solution is hipBLASLt's pick for the card, modelled as Tensile "
             "MT128x128x32 MIWT4_4 WG32_4_1 (the solution name of tensile-128x128x32-gfx1201)",
        structure="the vendor library's tuned GEMM on the very card (assembly: a floor for our HIP C++ GEMM's "
                  "ratio, not an estimate of it)",
        kernel=dict(kind="gemm", bm=128, bn=128, bk=32, wm=2, wn=2, stages=2, prefetch=1, lds="ab", raster=8,
                    products=1, table=None, lds_est=2 * (128 + 128) * 32 * 2, vgpr_est={target: 232}))


CASES += [
    library_gemm_case("hipblaslt-bf16-4096-gfx1200", "gfx1200", "RX 9060 XT 16 GB", 66.14, 165,
                      "BF16 4096x4096: 66.14 TFLOPS (8192: 44.87, 10240: 62.47), torch 2.13.0a0+rocm7.13, "
                      "2026-04-19"),
    library_gemm_case("hipblaslt-bf16-4096-gfx1201", "gfx1201", "RX 9070 XT", 125.21, 201,
                      "BF16 4096x4096: 125.21 TFLOPS (CV 0.3%, n=5x206; 8192: 91.17), torch 2.12.0+rocm7.14, "
                      "2026-09-21 (another owner, issue 173, torch 2.12+rocm7.2: 133.36)"),
    library_gemm_case("hipblaslt-bf16-4096-gfx1100", "gfx1100", "RX 7900 XTX", 92.10, 68,
                      "BF16 4096x4096: 92.10 TFLOPS (8192: 93.65), torch 2.10.0.dev+rocm7.0, 2025-10-10 (other "
                      "owners: issue 58, rocm6.3: 99.37; issue 103, rocm7.10: 82.57)"),
]

# The card's own library GEMM, where a report exists, calibrates every config's GEMM family on that
# card (it is the same card, clocks and power limit included); other targets take their
# generation's case below. bench/amd_model.md 3b.
SAME_CARD = {"gemm": {"gfx1100": "hipblaslt-bf16-4096-gfx1100", "gfx1200": "hipblaslt-bf16-4096-gfx1200",
                      "gfx1201": "hipblaslt-bf16-4096-gfx1201"}}

# Which case calibrates each family of a config, per RDNA generation of the target (the case built
# most like that config's kernel; the same generation where there is one). bench/amd_model.md 3b.
RADEON_ANALOGUE = {
    "portable": {"gemm": {3: "ck-wmma-64x128-gfx1100", 4: "tensile-128x128x32-gfx1201"},
                 "attention": {3: "opus-attn-v139-gfx1201", 4: "opus-attn-v139-gfx1201"}},
    "candidate": {"gemm": {3: "ck-wmma-64x128-gfx1100", 4: "tensile-128x128x32-gfx1201"},
                  "attention": {3: "opus-attn-v1-gfx1201", 4: "opus-attn-v1-gfx1201"}},
    "seed": {"gemm": {3: "ck-wmma-64x128-gfx1100", 4: "tensile-128x128x32-gfx1201"},
             "attention": {3: "opus-attn-v0-gfx1201", 4: "opus-attn-v0-gfx1201"}},
}


def measured_ms(case):
    """The published time, or the time the published rate gives for the case's work."""
    if "measured_ms" in case:
        return case["measured_ms"]
    return ms_from_tflops(case["flops"], case["measured_tflops"])


def model_case(model, case):
    """amd_model's result for the published kernel at the published shape on the published card."""
    cfg = case["kernel"]
    if case["op"] == "gemm":
        m, n, k = case["shape"]
        return model.model_gemm(case["target"], cfg, case["label"], m, n, k, 1, **case["eb"])
    seq, heads, d = case["shape"]
    return model.model_attention(case["target"], cfg, case["label"], seq, seq, heads, d, 1, **case["eb"])


def calibrate(model):
    """One row per published case: modelled and measured ms, their ratio, the bound the model names."""
    rows = []
    for case in CASES:
        r = model_case(model, case)
        ms = measured_ms(case)
        rows.append(dict(key=case["key"], kernel=case["label"], target=case["target"], family=case["family"],
                         modelled_ms=r["time_ms"], measured_ms=ms, ratio=ms / r["time_ms"], bound=r["bound"],
                         bounds_ms=r["bounds_ms"], source=case["source"], code=case["code"]))
    return rows


def generation(model, t):
    """The RDNA generation of an AMD target, from the source its matrix rate cites."""
    source = model.SPECS[t]["mma_flops_per_unit_clk"][1]
    for gen in sorted(model.RDNA_GENERATIONS):
        if model.RDNA_GENERATIONS[gen]["mma_flops_per_unit_clk"][1] == source:
            return gen
    raise KeyError(f"{t}: no RDNA generation cites {source!r}")


def radeon_factors(model, config_name, t, rows):
    """Per-family measured/modelled ratios that calibrate config_name's kernels on target t: t's own
    card's case (SAME_CARD), else the analogue of t's RDNA generation, or of the nearest generation
    that has one."""
    ratios = {r["key"]: r["ratio"] for r in rows}
    gen = generation(model, t)
    # a tie (RDNA 3.5) goes to the older generation, whose ISA and matrix rate the refresh keeps
    nearest = lambda by_gen: by_gen[min(by_gen, key=lambda g: (abs(g - gen), g))]
    return {fam: ratios[SAME_CARD.get(fam, {}).get(t) or nearest(by_gen)]
            for fam, by_gen in RADEON_ANALOGUE.get(config_name, {}).items()}


def report_lines(rows):
    out = []
    for r in rows:
        out.append(f"{r['kernel'][:84]:84s} {r['target']:8s} modelled {r['modelled_ms']:9.3f} ms  measured "
                   f"{r['measured_ms']:9.3f} ms  measured/modelled {r['ratio']:5.2f}  ({r['bound']})")
    return out
