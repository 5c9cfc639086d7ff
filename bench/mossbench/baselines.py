"""The PyTorch measurements: the bf16 matmul peak, the DiT step (DiffSynth eager, moss_ref
eager and under torch.compile), the text encoder (transformers) and the VAE decode
(diffusers). Every timing is warm-up calls first, then timed calls bracketed by CUDA events
(wall clock on the CPU), median reported; peak memory from the allocator's statistics."""
import gc
import time

GIB = float(1 << 30)


def _torch():
    import torch
    return torch


def sync(device):
    torch = _torch()
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def time_fn(fn, device, warmup, reps):
    torch = _torch()
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    cuda = str(device).startswith("cuda")
    for _ in range(reps):
        if cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1000.0)
        else:
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    times.sort()
    return {"median_s": times[len(times) // 2], "min_s": times[0], "reps": reps, "warmup": warmup}


class PeakMemory:
    """Allocator peak over a block, and the bytes allocated when it began."""

    def __init__(self, device):
        self.cuda = str(device).startswith("cuda")
        self.base = self.peak = None

    def __enter__(self):
        torch = _torch()
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
        return self

    def __exit__(self, *exc):
        torch = _torch()
        if self.cuda:
            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated()
        return False

    def report(self):
        if self.peak is None:
            return None
        return {"peak_gib": self.peak / GIB, "above_start_gib": (self.peak - self.base) / GIB,
                "at_start_gib": self.base / GIB}


def release():
    torch = _torch()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def matmul_peak(device, n=8192, warmup=3, reps=10):
    """bf16 n x n x n matrix product on random data: the practical ceiling the TFLOP/s
    figures are compared with."""
    torch = _torch()
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    t = time_fn(lambda: a @ b, device, warmup, reps)
    a = b = None
    release()
    return {"n": n, "seconds": t["median_s"], "tflops": 2 * n ** 3 / t["median_s"] / 1e12}


def dit_step_inputs(cfg, height, width, cond_tokens, uncond_tokens, device, seed=0):
    """Noise latents (fp32), random text states (bf16) of the two prompts' lengths, a
    mid-schedule timestep and its step size."""
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    c = cfg["latent_channels"]
    x = torch.randn(1, c, height // 16, width // 16, generator=g).to(device)
    cond = torch.randn(1, cond_tokens, cfg["text_dim"], generator=g).to(device, torch.bfloat16)
    uncond = torch.randn(1, uncond_tokens, cfg["text_dim"], generator=g).to(device, torch.bfloat16)
    return x, cond, uncond, 0.5, -0.02


def diffsynth_step(dit, x, cond, uncond, sigma, dt, cfg_scale, skip):
    """One step as DiffSynth's pipeline runs it: latents cast to bf16, a cond and an uncond
    forward (the uncond one skipping `skip`), guidance and the Euler update in fp32."""
    torch = _torch()
    t = torch.tensor([sigma * 1000.0], device=x.device, dtype=torch.float32)

    def step():
        xin = x.to(torch.bfloat16)
        vc = dit(hidden_states=xin, timestep=t, encoder_hidden_states=cond).float()
        if cfg_scale == 1.0:
            return x + vc * dt
        vu = dit(hidden_states=xin, timestep=t, encoder_hidden_states=uncond, skip_layers=tuple(skip)).float()
        return x + (vu + cfg_scale * (vc - vu)) * dt
    return step


def moss_ref_step(dit, x, cond, uncond, sigma, dt, cfg_scale, skip):
    """The same step through moss_ref.MossDiT (unbatched [C, h, w] latents, [T, D] text)."""
    torch = _torch()
    x3, c2, u2 = x[0], cond[0], uncond[0]
    t = float(torch.tensor(sigma * 1000.0, dtype=torch.float32))

    def step():
        xin = x3.to(torch.bfloat16)
        vc = dit(xin, c2, t)
        if cfg_scale == 1.0:
            return x3 + vc * dt
        vu = dit(xin, u2, t, skip_layers=tuple(skip))
        return x3 + (vu + cfg_scale * (vc - vu)) * dt
    return step


COMPILE_SCOPES = ("blocks", "model")


def compile_moss_ref(dit, scope, mode="default"):
    """torch.compile on moss_ref: 'blocks' compiles the 42 main blocks (regional compilation:
    one graph per token count, shared by every block, so the compile costs one block's), 'model'
    the whole forward (a graph per shape and timestep guard: much longer to compile). Every
    shape gets its own static graph (dynamic=False, and no automatic switch to a dynamic graph
    when a second size arrives): each size is compiled and timed for itself, as a user running
    one resolution gets it. mode: torch.compile's mode ('default' or e.g.
    'max-autotune-no-cudagraphs')."""
    torch = _torch()
    if scope not in COMPILE_SCOPES:
        raise ValueError(f"compile scope {scope!r}: one of {', '.join(COMPILE_SCOPES)}")
    cfg = torch._dynamo.config
    cfg.cache_size_limit = max(64, cfg.cache_size_limit)
    if hasattr(cfg, "accumulated_cache_size_limit"):
        cfg.accumulated_cache_size_limit = max(512, cfg.accumulated_cache_size_limit)
    cfg.automatic_dynamic_shapes = False
    kw = {"dynamic": False}
    if mode and mode != "default":
        kw["mode"] = mode
    if scope == "model":
        return torch.compile(dit, **kw)
    for blk in dit.layers:
        blk.compile(**kw)
    return dit


def stop_compile_workers():
    """Ends inductor's compile-worker processes (a later compile starts new ones with the
    environment of that time); False where this torch has no such call."""
    try:
        from torch._inductor.async_compile import shutdown_compile_workers
    except ImportError:
        return False
    shutdown_compile_workers()
    return True


def compile_counters():
    """Graphs dynamo compiled so far in this process (unique graphs, and frames it recompiled
    after a guard failed): a run that recompiles every step shows here."""
    try:
        from torch._dynamo.utils import counters
        st = counters["stats"]
        return {"unique_graphs": int(st.get("unique_graphs", 0)), "calls_captured": int(st.get("calls_captured", 0))}
    except Exception:
        return None


def measure_step(step, device, warmup, reps):
    with PeakMemory(device) as mem:
        t0 = time.perf_counter()
        step()
        sync(device)
        first = time.perf_counter() - t0
        t = time_fn(step, device, max(0, warmup - 1), reps)
    t["first_call_s"] = first
    t["memory"] = mem.report()
    return t


def kernel_profile(step, device, steps=2, top=30):
    """Where a step's device time goes, by kernel (torch.profiler, CUDA activity only): each
    kernel's milliseconds and launches per step, largest first, and their sum. Issue 19 compares
    it with moss-infer-hip's op profile at the same size (MOSSINFER_PROFILE=1)."""
    from torch.profiler import ProfilerActivity, profile
    cuda = str(device).startswith("cuda")
    sync(device)
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            step()
        sync(device)
    rows = []
    for e in prof.key_averages():
        # on the CPU (development runs) the ops' own time stands in for kernels
        us = getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)) if cuda else e.self_cpu_time_total
        if us > 0:
            rows.append({"kernel": e.key[:200], "ms_per_step": us / 1000.0 / steps, "calls_per_step": e.count / steps})
    rows.sort(key=lambda r: -r["ms_per_step"])
    return {"steps": steps, "total_ms_per_step": sum(r["ms_per_step"] for r in rows), "kernels": rows[:top]}


def text_encoder_forward(model, ids):
    def fwd():
        return model(input_ids=ids, use_cache=False).last_hidden_state
    return fwd
