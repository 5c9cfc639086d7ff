#!/usr/bin/env python3
"""cuBLAS (through PyTorch) at the DiT's GEMM shapes, timed the way `moss-check kernels --sustain`
times ours: each shape back to back for SECONDS after as long a warm-up, so both run at the clock
the power cap leaves. Beside ours in the same call (bench/h200_gemm_sustain.sh) it says whether a
GEMM of ours is behind the vendor's at that clock, shape by shape.

y = x · wᵀ with x [M, K] and w [N, K] bf16 (w K-major, as the DiT stores it), y bf16. Each line
gives the wall-clock window (Unix seconds) so the clock samples of that window can be matched.

    python3 bench/gemm_reference.py [--seconds S] [--shapes NAME,...] [--json OUT]
"""
import argparse
import json
import math
import sys
import time

# (name, M, K, N): the check's timed Wgmma cases (kernels_dit.hip: 4160 = 64·64 + 64 rows,
# 8345 = 91·91 + 64) and the stacked cond + uncond rows the DiT step multiplies (twice those).
SHAPES = [
    ("q/k/v/o", 4160, 3072, 3072),
    ("ffn_up_gate", 4160, 3072, 16384),
    ("ffn_down", 4160, 8192, 3072),
    ("q/k/v/o@1456", 8345, 3072, 3072),
    ("ffn_up_gate@1456", 8345, 3072, 16384),
    ("q/k/v/o step1024", 8320, 3072, 3072),
    ("ffn_up_gate step1024", 8320, 3072, 16384),
    ("ffn_down step1024", 8320, 8192, 3072),
    ("q/k/v/o step1456", 16690, 3072, 3072),
    ("ffn_up_gate step1456", 16690, 3072, 16384),
    ("ffn_down step1456", 16690, 8192, 3072),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="timed seconds per shape (and as long a warm-up)")
    ap.add_argument("--shapes", default="", help="comma-separated names (default: all)")
    ap.add_argument("--json", default="", help="also write the rows here")
    args = ap.parse_args()
    if not (0 < args.seconds <= 600):
        print(f"gemm_reference: --seconds must be in (0, 600], got {args.seconds}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("gemm_reference: no CUDA device", file=sys.stderr)
        return 2
    wanted = [s for s in args.shapes.split(",") if s]
    unknown = [s for s in wanted if s not in {n for n, *_ in SHAPES}]
    if unknown:
        print(f"gemm_reference: unknown shape(s) {unknown}", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    rows = []
    for name, m, k, n in SHAPES:
        if wanted and name not in wanted:
            continue
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * (1.0 / math.sqrt(k))
        y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

        def run(times: int) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(times):
                torch.mm(x, w.t(), out=y)
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / times

        run(3)
        launches = max(1, math.ceil(args.seconds * 1000.0 / max(run(1), 1e-3)))
        run(launches)  # warm the card up to the power cap's clock
        t0 = time.time()
        ms = run(launches)
        t1 = time.time()
        tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12
        row = {"name": name, "m": m, "k": k, "n": n, "ms": ms, "tflops": tflops, "t0": t0, "t1": t1}
        rows.append(row)
        print(f"cublas {name:24s} {m}x{k}x{n:<6d} {ms:9.4f} ms {tflops:7.1f} TFLOP/s  window {t0:.2f} {t1:.2f}",
              flush=True)
        del x, w, y
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "seconds": args.seconds, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
