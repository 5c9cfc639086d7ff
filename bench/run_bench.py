#!/usr/bin/env python3
"""MOSS-Image speed benchmark on one GPU, in one go (issue 8): moss-infer-hip stage by stage
next to the PyTorch implementations on the same shapes and weights, in the same run.

Phases, in this order (each optional, each in its own try so one failure loses nothing else;
a phase that would start past --time-budget is skipped and says so):
  model      write the full-size random model with bench_random_model (or reuse it)
  ours       moss-infer-hip on the GPU: DiT step at --dit-sizes, streamed vs resident DiT,
             text encoder at --te-tokens, VAE decode at --vae-sizes; memory sampled by NVML
  peak       bf16 8192^3 matmul: the TFLOP/s ceiling the shares are taken of
  dit        DiffSynth MOSSImageDiT eager; moss_ref eager (--moss-ref) and under
             torch.compile (--compile); bf16, SDPA
  te         transformers Qwen3_5TextModel, bf16, sdpa
  vae        diffusers AutoencoderKLFlux2 decode
Then one table on stdout and bench/results/<date>-<gpu>.{json,md} (and --copy-to DIR).

Typical (H200, from the repo root, wheels carried in .whl):
  python3 bench/run_bench.py --build build --copy-to "$OUT"
See bench/README.md.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from mossbench import flops as F  # noqa: E402
from mossbench import report as R  # noqa: E402
from mossbench.engine import EngineRun, budget_for_resident  # noqa: E402
from mossbench.gpu_memory import MemoryPoller  # noqa: E402
from mossbench.prompts import load_tokenizer, prompt_with_tokens, templated_ids  # noqa: E402

GIB = float(1 << 30)


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def ints(text):
    return [int(x) for x in str(text).split(",") if x.strip()]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="folder with moss-infer-hip, bench_random_model")
    ap.add_argument("--model", help="an existing model folder to run on (no model is written)")
    ap.add_argument("--model-dir", default="/tmp/moss-random-full",
                    help="where the random model is written, or reused when already complete")
    ap.add_argument("--tokenizer", default=os.path.join(ROOT, "hip/tests/data/qwen35-tokenizer/tokenizer.json"))
    ap.add_argument("--dit-layers", type=int, default=42)
    ap.add_argument("--te-layers", type=int, default=32)
    ap.add_argument("--skip", default="",
                    help="phases to leave out (comma list): model, ours, torch (all PyTorch), peak, dit, stream, te, vae")
    ap.add_argument("--only", default="", help="run only these phases (same names)")
    ap.add_argument("--dit-sizes", default="512,1024,1456")
    ap.add_argument("--dit-steps", default="8,4,3", help="steps per DiT size (the first is warm-up, not counted)")
    ap.add_argument("--te-tokens", default="64,512")
    ap.add_argument("--vae-sizes", default="1024,2048")
    ap.add_argument("--prompt-tokens", type=int, default=64, help="templated tokens of the DiT runs' prompt")
    ap.add_argument("--cfg", type=float, default=3.0)
    ap.add_argument("--skip-layers", default="22")
    ap.add_argument("--stream-size", type=int, default=1024)
    ap.add_argument("--stream-resident", type=int, default=2)
    ap.add_argument("--moss-ref", default=os.path.join(ROOT, "hip", "tests", "data", "reference", "moss_ref.py"),
                    help="the reference DiT (default: the repository's copy of shared/reference/moss_ref.py)")
    ap.add_argument("--compile", action="store_true", help="also time moss_ref under torch.compile (takes minutes)")
    ap.add_argument("--compile-scope", choices=["blocks", "model"], default="blocks")
    ap.add_argument("--compile-sizes", default="512,1024")
    ap.add_argument("--compile-reserve", type=float, default=150,
                    help="seconds of the time budget the compiled phase needs to start")
    ap.add_argument("--vae-dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--wheels", default=os.path.join(ROOT, ".whl"), help="folder of wheels to put on sys.path")
    ap.add_argument("--time-budget", type=float, default=560, help="seconds; later phases are skipped past it")
    ap.add_argument("--run-timeout", type=float, default=240, help="seconds for one moss-infer-hip run")
    ap.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", help="file name tag (default: from the GPU name, e.g. h200)")
    ap.add_argument("--copy-to", help="also write the result files here (e.g. $OUT)")
    ap.add_argument("--backend", help="MOSSINFER_BACKEND for our runs (development: 'host'); unset = the GPU")
    ap.add_argument("--torch-device", default="cuda", help="device of the PyTorch baselines (development: cpu)")
    ap.add_argument("--gpu-index", type=int, default=0)
    return ap.parse_args(argv)


class Bench:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.skip = set(x for x in a.skip.split(",") if x)
        self.only = set(x for x in a.only.split(",") if x)
        self.errors, self.skipped = {}, []
        self.results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                        "args": vars(a), "env": {}, "ours": {}, "torch": {}, "rows": [], "memory": [],
                        "targets": [], "errors": self.errors, "skipped": self.skipped}
        self.model = a.model
        self.tmp = tempfile.mkdtemp(prefix="mossbench-")
        self.poller = None
        self.skip_layers = ints(a.skip_layers)
        self.dit_cfg = self.uncond_tokens = None  # known once the model folder is read (prepare_prompts)

    def elapsed(self):
        return time.monotonic() - self.t0

    def wants(self, phase):
        if self.only:
            return phase in self.only
        return phase not in self.skip

    def phase(self, name, fn, *args, need_s=0):
        """Runs one phase; its failure is recorded and printed, never raised. A phase that
        would start after the time budget, or with less than need_s seconds of it left, is
        skipped. The result files are rewritten after every phase, so a run stopped from
        outside keeps what it measured."""
        left = self.a.time_budget - self.elapsed()
        if left <= need_s:
            self.skipped.append(f"{name}: {max(0, left):.0f} s of the {self.a.time_budget:.0f} s budget left, "
                                f"needs {need_s} s")
            log(f"skip {name}: {max(0, left):.0f} s of the time budget left")
            return None
        log(f"{name} ...")
        t = time.monotonic()
        try:
            out = fn(*args)
            log(f"{name} done in {time.monotonic() - t:.1f} s")
            return out
        except Exception as e:  # one failing phase must not lose the others
            self.errors[name] = f"{type(e).__name__}: {e}"
            log(f"{name} FAILED: {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stdout)
            sys.stdout.flush()
            return None
        finally:
            self.save(final=False)

    # ---- environment -----------------------------------------------------------------------
    def environment(self):
        env = {"python": platform.python_version(), "platform": platform.platform()}
        try:
            q = subprocess.run(["nvidia-smi", f"--id={self.a.gpu_index}", "--query-gpu=name,driver_version,memory.total",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
            name, driver, mem = [x.strip() for x in q.stdout.strip().split(",")]
            env.update(gpu=name, driver=driver, gpu_memory=mem)
        except Exception as e:
            env["gpu"] = f"unknown ({type(e).__name__})"
        try:
            v = subprocess.run([self.binary("moss-infer-hip"), "--version"], capture_output=True, text=True, timeout=30)
            env["engine_version"] = (v.stdout + v.stderr).strip()
        except Exception as e:
            env["engine_version"] = f"unknown ({type(e).__name__})"
        try:
            env["git"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                        text=True, timeout=10).stdout.strip()
        except Exception:
            pass
        self.results["env"].update(env)

    def library_versions(self):
        env = self.results["env"]
        for name in ("torch", "transformers", "diffusers", "tokenizers", "safetensors"):
            try:
                env[name] = __import__(name).__version__
            except Exception as e:
                env[name] = f"missing ({type(e).__name__})"

    def binary(self, name):
        return os.path.join(self.a.build, name)

    # ---- model -----------------------------------------------------------------------------
    def ensure_model(self):
        d = self.a.model_dir
        stamp = os.path.join(d, ".bench_random_model.done")
        if os.path.exists(stamp):
            log(f"reusing the random model in {d}")
        else:
            cmd = [self.binary("bench_random_model"), "--out", d, "--tokenizer", self.a.tokenizer,
                   "--dit-layers", str(self.a.dit_layers), "--te-layers", str(self.a.te_layers)]
            os.makedirs(d, exist_ok=True)
            t = time.monotonic()
            subprocess.run(cmd, check=True)
            with open(stamp, "w") as f:
                f.write(" ".join(cmd) + "\n")
            self.results["model_write_s"] = time.monotonic() - t
        self.model = d

    def prepare_prompts(self):
        tok = load_tokenizer(os.path.join(self.model, "tokenizer", "tokenizer.json"))
        self.prompts = {n: prompt_with_tokens(tok, n) for n in sorted(set(ints(self.a.te_tokens) + [self.a.prompt_tokens]))}
        self.uncond_tokens = len(templated_ids(tok, ""))
        self.results["prompts"] = {"tokens": {str(n): len(templated_ids(tok, p)) for n, p in self.prompts.items()},
                                   "negative_tokens": self.uncond_tokens}
        self.dit_cfg = json.load(open(os.path.join(self.model, "transformer", "config.json")))

    # ---- ours --------------------------------------------------------------------------------
    def engine(self, name, args):
        timeout = max(30.0, min(self.a.run_timeout, self.a.time_budget - self.elapsed() + 20))
        run = EngineRun(self.binary("moss-infer-hip"), self.model, args, self.poller, self.a.backend, timeout).run()
        s = run.summary()
        s["log_tail"] = run.log_text()[-4000:]
        self.results["ours"][name] = s
        if run.rc != 0:
            raise RuntimeError(f"moss-infer-hip exited {run.rc}: {run.log_text()[-1500:]}")
        d = s["denoise"]
        log(f"  {name}: step {R.fmt(d['wall_gap_s'])} s (printed {R.fmt(d['printed_s'])}), done {s['done']}")
        return s

    def dit_args(self, size, steps, extra=()):
        return ["--size", f"{size}x{size}", "--steps", str(steps), "--cfg", str(self.a.cfg), "--skip-layers",
                self.a.skip_layers, "--prompt", self.prompts[self.a.prompt_tokens], "--negative", "", "--seed", "42",
                "--latent-out", os.path.join(self.tmp, f"dit_{size}.npy")] + list(extra)

    def steps_for(self, size):
        """Steps of the DiT run at this size: the --dit-steps entry at its place in --dit-sizes
        (the last entry for sizes beyond the list)."""
        sizes, steps = ints(self.a.dit_sizes), ints(self.a.dit_steps)
        i = sizes.index(size) if size in sizes else len(sizes) - 1
        return steps[min(i, len(steps) - 1)]

    def ours_dit(self):
        for size in ints(self.a.dit_sizes):
            self.phase(f"ours DiT {size}", self.engine, f"dit_{size}", self.dit_args(size, self.steps_for(size)))

    def ours_stream(self):
        """A run whose --vram-budget leaves --stream-resident blocks on the device, next to the
        resident run at the same size. The budget comes from the resident run's memory plan
        (its DiT peak less the blocks) and the block size in the safetensors header."""
        size = self.a.stream_size
        steps = self.steps_for(size)
        resident = self.results["ours"].get(f"dit_{size}") or self.engine(f"dit_{size}", self.dit_args(size, steps))
        plan = resident.get("plan") or {}
        if "dit_peak_gib" not in plan:
            raise RuntimeError("the resident run printed no memory plan (host backend?): cannot size the budget")
        block = dit_block_bytes(self.model) / GIB
        want = self.a.stream_resident
        out = {"block_gib": block, "tries": []}
        budget = budget_for_resident(plan["dit_peak_gib"], plan["total_blocks"], block, want)
        for _ in range(2):
            s = self.engine(f"dit_{size}_stream", self.dit_args(size, steps, ["--vram-budget", f"{budget:.3f}"]))
            got = (s.get("done") or {}).get("resident_blocks")
            out["tries"].append({"budget_gib": budget, "resident": got})
            if got == want or got is None:
                break
            budget += (want - got) * block
        out.update(budget_gib=budget, resident_blocks=got, streamed_s=s["denoise"]["wall_gap_s"],
                   resident_s=resident["denoise"]["wall_gap_s"])
        if out["streamed_s"] and out["resident_s"]:
            out["ratio"] = out["streamed_s"] / out["resident_s"]
        self.results["stream"] = out
        return out

    def ours_te(self):
        for n in ints(self.a.te_tokens):
            self.phase(f"ours text encoder {n}", self.engine, f"te_{n}",
                       ["--size", "256x256", "--steps", "1", "--cfg", "1", "--skip-layers", self.a.skip_layers,
                        "--prompt", self.prompts[n],
                        "--latent-out", os.path.join(self.tmp, f"te_{n}.npy")])

    def ours_vae(self):
        for size in ints(self.a.vae_sizes):
            self.phase(f"ours VAE {size}", self.engine, f"vae_{size}",
                       ["--size", f"{size}x{size}", "--steps", "1", "--cfg", "1", "--skip-layers", self.a.skip_layers,
                        "--no-metadata",
                        "--prompt", self.prompts[self.a.prompt_tokens], "-o", os.path.join(self.tmp, f"vae_{size}.png")])

    # ---- PyTorch -----------------------------------------------------------------------------
    def torch_setup(self):
        from mossbench.torch_models import add_wheels
        site = add_wheels(self.a.wheels)
        if site:
            self.results["env"]["wheels"] = sorted(os.listdir(self.a.wheels))
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False  # the library defaults, stated
        self.library_versions()
        self.device = self.a.torch_device
        if self.device.startswith("cuda"):
            self.results["env"]["torch_gpu"] = torch.cuda.get_device_name(0)

    def torch_peak(self):
        from mossbench.baselines import matmul_peak
        n = 8192 if self.device.startswith("cuda") else 1024
        self.results["torch"]["matmul_peak"] = p = matmul_peak(self.device, n)
        log(f"  bf16 matmul {n}^3: {p['tflops']:.1f} TFLOP/s")

    def torch_dit(self, compiled=False):
        """DiT step baselines on the model's own weights, loaded once and shared: DiffSynth
        eager and moss_ref eager, or (compiled=True) moss_ref under torch.compile, run last
        because its compilation takes minutes."""
        from mossbench import baselines as B
        from mossbench import torch_models as M
        import torch
        cfg = M.dit_config(self.model)
        t = time.perf_counter()
        state = M.load_dit_state(self.model, self.device)
        B.sync(self.device)
        self.results["torch"].setdefault("dit_load_s", time.perf_counter() - t)
        out = self.results["torch"].setdefault("dit", {})
        impls = []
        have_ref = bool(self.a.moss_ref) and os.path.exists(self.a.moss_ref)
        if self.a.moss_ref and not have_ref and not compiled:
            self.skipped.append(f"moss_ref rows: {self.a.moss_ref} does not exist")
        if not compiled:
            ds, version = M.build_diffsynth_dit(self.model, state, self.device)
            self.results["env"]["diffsynth"] = version
            impls.append(("diffsynth eager", ds, B.diffsynth_step, ints(self.a.dit_sizes)))
            if have_ref:
                ref = M.build_moss_ref_dit(M.import_moss_ref(self.a.moss_ref), self.model, state)
                impls.append(("moss_ref eager", ref, B.moss_ref_step, ints(self.a.dit_sizes)))
        elif have_ref:
            ref_c = B.compile_moss_ref(M.build_moss_ref_dit(M.import_moss_ref(self.a.moss_ref), self.model, state),
                                       self.a.compile_scope)
            impls.append((f"moss_ref compile ({self.a.compile_scope})", ref_c, B.moss_ref_step, ints(self.a.compile_sizes)))
        for name, model, make_step, sizes in impls:
            for size in sizes:
                def one(name=name, model=model, make_step=make_step, size=size):
                    x, c, u, sigma, dt = B.dit_step_inputs(cfg, size, size, self.a.prompt_tokens, self.uncond_tokens,
                                                           self.device)
                    with torch.inference_mode():
                        step = make_step(model, x, c, u, sigma, dt, self.a.cfg, self.skip_layers)
                        r = B.measure_step(step, self.device, self.a.warmup + (1 if compiled else 0), self.a.reps)
                    out.setdefault(name, {})[str(size)] = r
                    log(f"  {name} {size}: {r['median_s']:.4f} s/step (first call {r['first_call_s']:.1f} s)")
                self.phase(f"torch {name} {size}", one, need_s=self.a.compile_reserve / 2 if compiled else 0)
        impls = state = None
        B.release()

    def torch_te(self):
        from mossbench import baselines as B
        from mossbench import torch_models as M
        import torch
        t = time.perf_counter()
        model = M.build_qwen_text_model(self.model, self.device, torch.bfloat16)
        B.sync(self.device)
        out = self.results["torch"].setdefault("text_encoder", {"load_s": time.perf_counter() - t})
        tok = load_tokenizer(os.path.join(self.model, "tokenizer", "tokenizer.json"))
        for n in ints(self.a.te_tokens):
            def one(n=n):
                ids = torch.tensor([templated_ids(tok, self.prompts[n])], device=self.device)
                with torch.inference_mode():
                    r = B.measure_step(B.text_encoder_forward(model, ids), self.device, self.a.warmup + 1,
                                       max(self.a.reps, 5))
                out[str(n)] = r
                log(f"  transformers text encoder {n} tokens: {r['median_s']:.4f} s")
            self.phase(f"torch text encoder {n}", one)
        model = None  # frees the weights before the next phase
        B.release()

    def torch_vae(self):
        from mossbench import baselines as B
        from mossbench import torch_models as M
        import torch
        dtype = getattr(torch, self.a.vae_dtype)
        vae = M.build_diffusers_vae(self.model, self.device, dtype)
        weights = sum(p.numel() * p.element_size() for n, p in vae.named_parameters() if not p.is_meta)
        out = self.results["torch"].setdefault("vae", {"weights_gib": weights / GIB, "dtype": self.a.vae_dtype})
        decode = M.vae_decode_fn(vae)
        c = M.vae_config(self.model)["latent_channels"] * 4
        for size in ints(self.a.vae_sizes):
            def one(size=size):
                x = torch.randn(1, c, size // 16, size // 16, device=self.device)
                with torch.inference_mode():
                    r = B.measure_step(lambda: decode(x), self.device, self.a.warmup,
                                       self.a.reps if size <= 1024 else max(1, self.a.reps - 1))
                out[str(size)] = r
                log(f"  diffusers VAE {size}: {r['median_s']:.4f} s")
            self.phase(f"torch VAE {size}", one)
        vae = decode = None
        B.release()

    # ---- report ------------------------------------------------------------------------------
    def dit_flops(self, size):
        if not self.dit_cfg or self.uncond_tokens is None:
            return None
        return F.dit_step_flops(self.dit_cfg, size, size, self.a.prompt_tokens, self.uncond_tokens,
                                len(self.skip_layers), self.a.cfg)

    def build_rows(self):
        from mossbench.torch_models import text_layer_params, vae_config, text_config
        peak = (self.results["torch"].get("matmul_peak") or {}).get("tflops")
        ours, th = self.results["ours"], self.results["torch"]
        rows, mem = [], []
        for size in ints(self.a.dit_sizes):
            o = ours.get(f"dit_{size}") or {}
            o_s = (o.get("denoise") or {}).get("wall_gap_s")
            fl = self.dit_flops(size)
            shape = f"{size}x{size}"
            base = [(name, v.get(str(size))) for name, v in (th.get("dit") or {}).items() if v.get(str(size))]
            for name, b in base or [(None, {})]:
                note = "cond + uncond"
                if name and "compile" in name:
                    note += f"; first call (compile) {b.get('first_call_s', 0):.0f} s"
                rows.append(R.speed_row("DiT step", shape, o_s, name, b.get("median_s"), fl, peak, note))
            mo = o.get("memory_gib") or {}
            plan = o.get("plan") or {}
            for name, v in (th.get("dit") or {}).items():
                if not v.get(str(size)):
                    continue
                m = v[str(size)].get("memory") or {}
                mem.append({"stage": "DiT", "shape": shape, "ours_gib": mo.get("dit"), "planner_gib": plan.get("dit_peak_gib"),
                            "baseline": name, "baseline_gib": m.get("peak_gib"), "baseline_above_gib": m.get("above_start_gib")})
            if not th.get("dit") and o:
                mem.append({"stage": "DiT", "shape": shape, "ours_gib": mo.get("dit"), "planner_gib": plan.get("dit_peak_gib")})
        st = self.results.get("stream")
        if st:
            size = self.a.stream_size
            fl = self.dit_flops(size)
            rows.append(R.speed_row("DiT step streamed", f"{size}x{size}", st.get("streamed_s"), "ours resident",
                                    st.get("resident_s"), fl, peak,
                                    f"{st.get('resident_blocks')} blocks resident, budget {st.get('budget_gib', 0):.2f} GiB"))
            so = ours.get(f"dit_{size}_stream") or {}
            mem.append({"stage": "DiT streamed", "shape": f"{size}x{size}", "ours_gib": (so.get("memory_gib") or {}).get("dit"),
                        "planner_gib": (so.get("plan") or {}).get("dit_peak_gib")})
        load_src = ours.get(f"dit_{self.a.stream_size}") or next((v for k, v in ours.items() if k.startswith("dit_")), None)
        if load_src:
            rows.append(R.speed_row("DiT load", "weights to device", (load_src.get("done") or {}).get("dit_load_s"),
                                    "safetensors to cuda (torch)" if th.get("dit_load_s") else None, th.get("dit_load_s"),
                                    None, peak, "ours includes the text rows of both prompts"))
        try:
            tcfg, lp = text_config(self.model), text_layer_params(self.model)
        except Exception:
            tcfg, lp = None, None
        tokens = ints(self.a.te_tokens)
        flops_of = (lambda n: F.text_encoder_flops(tcfg, lp, n)) if tcfg and lp else None
        te_rows, te_mem = R.text_encoder_rows({n: ours.get(f"te_{n}") for n in tokens}, th.get("text_encoder"), tokens,
                                              flops_of, peak)
        rows += te_rows
        mem += te_mem
        try:
            vcfg = vae_config(self.model)
        except Exception:
            vcfg = None
        for size in ints(self.a.vae_sizes):
            o = ours.get(f"vae_{size}") or {}
            o_s = (o.get("done") or {}).get("vae_s")
            b = (th.get("vae") or {}).get(str(size)) or {}
            fl = F.vae_decode_flops(vcfg, size, size) if vcfg else None
            rows.append(R.speed_row("VAE decode", f"{size}x{size}", o_s, "diffusers" if b else None, b.get("median_s"), fl,
                                    peak, f"baseline {self.a.vae_dtype}"))
            m, mo = b.get("memory") or {}, o.get("memory_gib") or {}
            mem.append({"stage": "VAE decode", "shape": f"{size}x{size}", "ours_gib": mo.get("vae"),
                        "ours_above_gib": mo.get("vae_above_start"), "planner_gib": (o.get("plan") or {}).get("vae_peak_gib"),
                        "baseline": "diffusers" if b else None, "baseline_gib": m.get("peak_gib"),
                        "baseline_above_gib": m.get("above_start_gib")})
        return rows, mem

    def save(self, final):
        try:
            self.finish(final)
        except Exception as e:  # a report that cannot be built must not stop the measuring
            log(f"report failed: {type(e).__name__}: {e}")

    def finish(self, final=True):
        rows, mem = self.build_rows()
        tg = R.targets(rows, mem, self.results.get("stream"))
        self.results.update(rows=rows, memory=mem, targets=tg, elapsed_s=self.elapsed())
        env = self.results["env"]
        peak = (self.results["torch"].get("matmul_peak") or {}).get("tflops")
        lines = [f"# MOSS-Image speed: moss-infer-hip vs PyTorch ({self.results['date']})", "",
                 f"GPU {env.get('gpu')} (driver {env.get('driver')}, {env.get('gpu_memory')}); engine "
                 f"{env.get('engine_version', '-').splitlines()[0] if env.get('engine_version') else '-'} (repo {env.get('git', '-')}); "
                 f"torch {env.get('torch', '-')}, transformers {env.get('transformers', '-')}, diffusers "
                 f"{env.get('diffusers', '-')}, diffsynth {env.get('diffsynth', '-')}; model {self.model}.",
                 f"bf16 matmul peak measured in this run: {R.fmt(peak, 1)} TFLOP/s. DiT: {self.a.prompt_tokens}-token prompt, "
                 f"empty negative ({getattr(self, 'uncond_tokens', '-')} tokens), cfg {self.a.cfg}, skip layers "
                 f"{self.a.skip_layers}; ours s/step = median gap between `denoise` lines after the first step.", "",
                 "## Speed", ""] + R.speed_table(rows) + ["", "## Peak device memory", "",
                 "Ours: NVML samples in each stage's window, above the device's use before the process started "
                 "(includes its CUDA context); the DiT's window opens when its load starts, the VAE's 'above' is "
                 "over the window's lowest sample (its weights and the context); planner: the engine's own plan. "
                 "Baselines: torch allocator peak.", ""] \
            + R.memory_table(mem) + ["", "## Targets (issue 8)", ""] \
            + [f"- {t['status']}: {t['target']}: {R.fmt(t['value'], 3)}" for t in tg]
        if self.results.get("stream"):
            st = self.results["stream"]
            lines += ["", f"Streamed run: budget {R.fmt(st.get('budget_gib'), 2)} GiB, {st.get('resident_blocks')} blocks "
                          f"resident (block {R.fmt(st.get('block_gib'), 3)} GiB; tries {st.get('tries')})."]
        if self.errors or self.skipped:
            lines += ["", "## Not measured", ""] + [f"- {k}: {' '.join(v.split())[:400]}" for k, v in self.errors.items()] + \
                     [f"- {s}" for s in self.skipped]
        lines += ["", f"Total bench time {self.elapsed():.0f} s" + ("." if final else " so far (incomplete run).")]
        self.results["complete"] = final
        tag = self.a.tag or gpu_tag(env.get("gpu", ""))
        stem = f"{datetime.date.today().isoformat()}-{tag}"
        paths = R.write(self.results, lines, self.a.results_dir, stem, self.a.copy_to)
        if final:
            print("\n".join(lines), flush=True)
            for p in paths:
                log(f"wrote {p}")


def gpu_tag(name):
    n = name.lower()
    for key in ("h200", "h100", "a100", "l40s", "mi300"):
        if key in n:
            return key
    cleaned = "".join(c if c.isalnum() else "-" for c in n).strip("-")
    return cleaned[:24] or "gpu"


def dit_block_bytes(model_dir):
    """Bytes of the largest `layers.N.` block, from the safetensors headers."""
    from mossbench.torch_models import _weight_files
    per = {}
    for path in _weight_files(os.path.join(model_dir, "transformer")):
        with open(path, "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        for k, v in header.items():
            if k.startswith("layers."):
                b, e = v["data_offsets"]
                i = int(k.split(".")[1])
                per[i] = per.get(i, 0) + (e - b)
    return max(per.values())


def main(argv=None):
    a = parse_args(argv)
    b = Bench(a)
    b.phase("environment", b.environment)
    if a.model:
        b.model = a.model
    elif b.wants("model"):
        b.phase("random model", b.ensure_model)
    elif os.path.exists(os.path.join(a.model_dir, ".bench_random_model.done")):
        b.model = a.model_dir
    if b.model:
        b.phase("prompts", b.prepare_prompts)
    if not b.model or "prompts" in b.errors:
        log("no usable model folder: stopping")
        b.finish()
        return 1
    if b.wants("ours"):
        b.poller = MemoryPoller(a.gpu_index).start()
        b.results["env"]["memory_sampler"] = b.poller.source
        if b.wants("dit"):
            b.ours_dit()
        if b.wants("stream"):
            b.phase("ours streamed DiT", b.ours_stream)
        if b.wants("te"):
            b.ours_te()
        if b.wants("vae"):
            b.ours_vae()
        b.poller.stop()
    if b.wants("torch"):
        b.phase("torch setup", b.torch_setup)
        if "torch setup" not in b.errors:
            if b.wants("peak"):
                b.phase("torch bf16 peak", b.torch_peak)
            if b.wants("dit"):
                b.phase("torch DiT", b.torch_dit)
            if b.wants("te"):
                b.phase("torch text encoder", b.torch_te)
            if b.wants("vae"):
                b.phase("torch VAE", b.torch_vae)
            if b.wants("dit") and a.compile:
                b.phase("torch DiT compiled", b.torch_dit, True, need_s=a.compile_reserve)
    b.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
