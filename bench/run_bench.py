#!/usr/bin/env python3
"""MOSS-Image speed benchmark on one GPU, in one go (issue 8): moss-infer-hip stage by stage
next to the PyTorch implementations on the same shapes and weights, in the same run.

Phases, in this order (each optional, each in its own try so one failure loses nothing else;
a phase that would start past --time-budget is skipped and says so):
  model      write the full-size random model with bench_random_model (or reuse it)
  ours       moss-infer-hip on the GPU: DiT step at --dit-sizes, streamed vs resident DiT,
             text encoder at --te-tokens, VAE decode at --vae-sizes; memory sampled by NVML
  peak       bf16 8192^3 matmul: the TFLOP/s ceiling the shares are taken of
  dit        DiffSynth MOSSImageDiT eager; moss_ref eager (--moss-ref); bf16, SDPA
  te         transformers Qwen3_5TextModel, bf16, sdpa
  vae        diffusers AutoencoderKLFlux2 decode
  compile    moss_ref under torch.compile (--compile, or --only compile): each of
             --compile-mode x --compile-scope at --compile-sizes, its compile (first call) timed
  first_image  (--first-image, or --only first_image) one generation from process start to a
             written PNG, loads included: ours, the DiffSynth path and the compiled reference,
             each a fresh process, page cache warm and (where it can be dropped) cold
Then one table on stdout and bench/results/<date>-<gpu>.{json,md} (and --copy-to DIR).
--merge-results puts an earlier run's numbers (e.g. the compile call's) into this report,
marked as from another process; --report-only does only that.

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
from mossbench.merge import facts_for  # noqa: E402
from mossbench.prompts import load_tokenizer, prompt_with_tokens, templated_ids  # noqa: E402

GIB = float(1 << 30)


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def ints(text):
    return [int(x) for x in str(text).split(",") if x.strip()]


def _choices_list(allowed, what):
    def parse(text):
        items = [x.strip() for x in str(text).split(",") if x.strip()]
        bad = [x for x in items if allowed and x not in allowed]
        if not items or bad:
            raise argparse.ArgumentTypeError(f"{what}: {','.join(bad) or 'empty'}; expected a comma list of "
                                             f"{', '.join(allowed)}")
        return items
    return parse


scopes = _choices_list(("blocks", "model"), "compile scope")
modes = _choices_list(("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"), "compile mode")
FIRST_IMPLS = ("ours", "diffsynth", "compiled")
FIRST_CACHES = ("warm", "cold")


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
                    help="phases to leave out (comma list): model, ours, torch (all PyTorch), peak, dit, stream, te, "
                         "vae, compile, first_image")
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
    ap.add_argument("--compile-scope", type=scopes, default="blocks,model",
                    help="comma list, in this order: blocks (the 42 blocks, regional) and/or model (whole forward)")
    ap.add_argument("--compile-mode", type=modes, default="default",
                    help="comma list of torch.compile modes, e.g. default,max-autotune-no-cudagraphs; each later "
                         "mode runs only while the time budget allows")
    ap.add_argument("--compile-sizes", default="512,1024,1456")
    ap.add_argument("--compile-reserve", type=float, default=150,
                    help="seconds of the time budget one whole-model compiled size needs to start (blocks: half); "
                         "raised to 1.2x the longest first call seen in the same scope and mode")
    ap.add_argument("--inductor-cache", choices=["fresh", "keep"], default="fresh",
                    help="fresh: compile into new inductor and triton cache folders, so a compile is timed cold "
                         "(unless TORCHINDUCTOR_CACHE_DIR is set)")
    ap.add_argument("--first-image", action="store_true", help="also run the first_image phase")
    ap.add_argument("--first-impls", type=_choices_list(FIRST_IMPLS, "first-image implementation"),
                    default="ours,diffsynth,compiled",
                    help="first image: comma list of ours, diffsynth, compiled")
    ap.add_argument("--first-cache", type=_choices_list(FIRST_CACHES, "page cache state"), default="warm,cold",
                    help="first image: page cache states, warm and/or cold")
    ap.add_argument("--first-size", type=int, default=1024)
    ap.add_argument("--first-steps", type=int, default=50)
    ap.add_argument("--first-compile-mode", type=modes, default="default",
                    help="first image: torch.compile mode of the compiled reference")
    ap.add_argument("--first-timeout", type=float, default=420, help="seconds for one first-image process")
    ap.add_argument("--merge-results", default="",
                    help="comma list of earlier results JSON files whose numbers fill what this run did not measure")
    ap.add_argument("--report-only", action="store_true",
                    help="measure nothing: the report of the --merge-results files (no model folder needed)")
    ap.add_argument("--vae-dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--profile-sizes", default="",
                    help="DiT sizes at which each PyTorch DiT baseline's step is also profiled by kernel")
    ap.add_argument("--wheels", default=os.path.join(ROOT, ".whl"), help="folder of wheels to put on sys.path")
    ap.add_argument("--time-budget", type=float, default=560, help="seconds; later phases are skipped past it")
    ap.add_argument("--run-timeout", type=float, default=240, help="seconds for one moss-infer-hip run")
    ap.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    ap.add_argument("--tag", help="file name tag (default: from the GPU name, e.g. h200)")
    ap.add_argument("--copy-to", help="also write the result files here (e.g. $OUT)")
    ap.add_argument("--backend", help="MOSSINFER_BACKEND for our runs (development: 'host'); unset = the GPU")
    ap.add_argument("--torch-device", default="cuda", help="device of the PyTorch baselines (development: cpu)")
    ap.add_argument("--gpu-index", type=int, default=0)
    a = ap.parse_args(argv)
    if a.report_only and not a.merge_results:
        ap.error("--report-only needs --merge-results")
    return a


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

    def wants_compile(self):
        """The compiled anchors: named in --only, or --compile with the PyTorch DiT phases on."""
        if "compile" in self.skip:
            return False
        if "compile" in self.only:
            return True
        return self.a.compile and self.wants("torch") and self.wants("dit")

    def wants_first_image(self):
        if "first_image" in self.skip:
            return False
        return "first_image" in self.only or (self.a.first_image and not self.only)

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
            # "-dirty" when the tree differs from its HEAD (the GPU machine's copy carries the
            # working tree over a checkout that may be older: the engine's version names its build)
            env["git"] = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=7"],
                                        capture_output=True, text=True, timeout=10).stdout.strip()
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
        self.results["model_facts"] = self.model_facts()

    def model_facts(self):
        """What the report's FLOP counts need from the model folder, kept in the results so a
        report of merged results files needs no model folder."""
        from mossbench.torch_models import text_config, text_layer_params, vae_config
        facts = {"dit_config": self.dit_cfg, "uncond_tokens": self.uncond_tokens}
        for key, fn in (("text_config", text_config), ("text_layer_params", text_layer_params),
                        ("vae_config", vae_config)):
            try:
                facts[key] = fn(self.model)
            except Exception as e:  # a folder without that part: its FLOPs stay empty
                facts[key] = None
                log(f"  model facts: no {key} ({type(e).__name__})")
        return facts

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

    def generation_args(self, size, steps):
        """One of our generations as the benchmark runs them: the run's prompt, empty negative,
        guidance, skipped layers and seed."""
        return ["--size", f"{size}x{size}", "--steps", str(steps), "--cfg", str(self.a.cfg), "--skip-layers",
                self.a.skip_layers, "--prompt", self.prompts[self.a.prompt_tokens], "--negative", "", "--seed", "42"]

    def dit_args(self, size, steps, extra=()):
        return self.generation_args(size, steps) + ["--latent-out", os.path.join(self.tmp, f"dit_{size}.npy")] + list(extra)

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
    def wheel_site(self):
        """The carried wheels unpacked once (None without any); child processes get it on PYTHONPATH."""
        if not hasattr(self, "_site"):
            from mossbench.torch_models import add_wheels
            self._site = add_wheels(self.a.wheels)
            if self._site:
                self.results["env"]["wheels"] = sorted(os.listdir(self.a.wheels))
        return self._site

    def torch_setup(self):
        self.wheel_site()
        # fresh: before torch is imported, so a compile timed here finds no earlier run's kernels
        self.fresh_caches = self.a.inductor_cache == "fresh" and "TORCHINDUCTOR_CACHE_DIR" not in os.environ
        if self.fresh_caches:
            os.environ.update(fresh_compile_caches(self.tmp, "bench"))
        self.results["env"]["inductor_cache"] = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "torch's default")
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

    def torch_dit(self):
        """DiT step baselines on the model's own weights, loaded once and shared: DiffSynth
        eager and moss_ref eager."""
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
        if self.a.moss_ref and not have_ref:
            self.skipped.append(f"moss_ref rows: {self.a.moss_ref} does not exist")
        ds, version = M.build_diffsynth_dit(self.model, state, self.device)
        self.results["env"]["diffsynth"] = version
        impls.append(("diffsynth eager", ds, B.diffsynth_step))
        if have_ref:
            ref = M.build_moss_ref_dit(M.import_moss_ref(self.a.moss_ref), self.model, state)
            impls.append(("moss_ref eager", ref, B.moss_ref_step))
        for name, model, make_step in impls:
            for size in ints(self.a.dit_sizes):
                self.phase(f"torch {name} {size}", self.torch_step, cfg, name, model, make_step, size, 0)
        impls = state = None
        B.release()

    def torch_step(self, cfg, name, model, make_step, size, extra_warmup):
        """One DiT step baseline at one size: first call (for a compiled model: its compile),
        warm-up, timed steps."""
        from mossbench import baselines as B
        import torch
        x, c, u, sigma, dt = B.dit_step_inputs(cfg, size, size, self.a.prompt_tokens, self.uncond_tokens, self.device)
        with torch.inference_mode():
            step = make_step(model, x, c, u, sigma, dt, self.a.cfg, self.skip_layers)
            r = B.measure_step(step, self.device, self.a.warmup + extra_warmup, self.a.reps)
            if size in ints(self.a.profile_sizes):
                r["kernel_profile"] = B.kernel_profile(step, self.device)
        self.results["torch"].setdefault("dit", {}).setdefault(name, {})[str(size)] = r
        log(f"  {name} {size}: {r['median_s']:.4f} s/step (first call {r['first_call_s']:.1f} s)")
        for k in (r.get("kernel_profile") or {}).get("kernels", [])[:12]:
            log(f"    {k['ms_per_step']:8.2f} ms/step {k['calls_per_step']:6.0f} calls  {k['kernel'][:110]}")
        return r

    def torch_dit_compiled(self):
        """moss_ref under torch.compile, the anchors of issue 19: for each mode (the first
        always, later ones while the budget allows) and scope, a freshly built model compiled at
        each size; the first call of each size is its compile and is recorded. dynamo's caches
        are reset between scopes and modes, so each one compiles for itself."""
        from mossbench import baselines as B
        from mossbench import report as R
        from mossbench import torch_models as M
        import torch
        if not (self.a.moss_ref and os.path.exists(self.a.moss_ref)):
            raise RuntimeError(f"--moss-ref {self.a.moss_ref} does not exist")
        cfg = M.dit_config(self.model)
        t = time.perf_counter()
        state = M.load_dit_state(self.model, self.device)
        B.sync(self.device)
        self.results["torch"].setdefault("dit_load_s", time.perf_counter() - t)
        ref_mod = M.import_moss_ref(self.a.moss_ref)
        info = self.results["torch"].setdefault("compile", {})
        for mode in self.a.compile_mode:
            for scope in self.a.compile_scope:
                name = R.compiled_name(scope, mode)
                torch._dynamo.reset()
                if getattr(self, "fresh_caches", False):
                    # each scope and mode compiles cold: the whole model's kernels would otherwise
                    # serve the blocks' compile. Inductor reads the folder's variable at every use;
                    # the compile workers took theirs (triton's) when started, so they start anew.
                    B.stop_compile_workers()
                    os.environ.update(fresh_compile_caches(self.tmp, f"{scope}-{mode}"))
                    self.results["env"]["inductor_cache"] = "fresh per scope and mode, below " + self.tmp
                before = B.compile_counters() or {}
                model = B.compile_moss_ref(M.build_moss_ref_dit(ref_mod, self.model, state), scope, mode)
                info[name] = {"scope": scope, "mode": mode, "dynamic": False, "automatic_dynamic_shapes": False,
                              "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "torch's default")}
                for size in ints(self.a.compile_sizes):
                    self.phase(f"torch {name} {size}", self.torch_step, cfg, name, model, B.moss_ref_step, size, 1,
                               need_s=self.compile_need(name, scope))
                after = B.compile_counters() or {}
                # dynamo's counters run for the whole process: this scope and mode's share
                info[name]["graphs"] = {k: v - before.get(k, 0) for k, v in after.items()}
                model = None
                B.release()
        state = None
        B.release()

    def compile_need(self, name, scope):
        """Seconds of budget a compiled size needs to start: the reserve (half of it for blocks),
        or 1.2x the longest first call this scope and mode took so far, whichever is more."""
        seen = [r.get("first_call_s") or 0 for r in (self.results["torch"].get("dit", {}).get(name) or {}).values()]
        base = self.a.compile_reserve if scope == "model" else self.a.compile_reserve / 2
        return max([base] + [1.2 * s for s in seen])

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

    # ---- first image -------------------------------------------------------------------------
    def first_image(self):
        """One --first-size generation of --first-steps steps per implementation and page-cache
        state, each a fresh process timed from spawn to exit (the PNG written), each its own
        phase with its own time limit, so a failure or a kill loses only its row."""
        from mossbench import first_image as FI
        a = self.a
        fi = self.results.setdefault("first_image", {"size": a.first_size, "steps": a.first_steps, "cfg": a.cfg,
                                                     "skip_layers": a.skip_layers, "rows": {}, "cache": {}})
        for cache in a.first_cache:
            for impl in a.first_impls:
                self.phase(f"first image {impl} {cache}", self.first_image_one, FI, fi, impl, cache,
                           need_s=self.first_need(impl))

    def first_need(self, impl):
        return {"ours": 20, "diffsynth": 60}.get(impl, self.a.compile_reserve + 60)

    def first_image_one(self, FI, fi, impl, cache):
        a = self.a
        if cache == "warm":
            w = FI.warm_page_cache(self.model)
            fi["cache"].setdefault("warm_reads", []).append(w)
            log(f"  page cache warmed: {w['bytes'] / GIB:.1f} GiB read in {w['seconds']:.1f} s")
        else:
            why = FI.drop_page_cache()
            if why:
                fi["cache"]["cold"] = why
                fi["rows"].setdefault(cache, {})[impl] = {"error": why, "wall_s": None}
                raise RuntimeError(why)
            fi["cache"]["cold"] = "page cache dropped (echo 3 > /proc/sys/vm/drop_caches) before each cold run"
        png = os.path.join(self.tmp, f"first_{impl}_{cache}.png")
        if os.path.exists(png):
            os.remove(png)
        cmd, env = self.first_image_cmd(impl, png)
        timeout = max(30.0, min(a.first_timeout, a.time_budget - self.elapsed() + 20))
        run = FI.run_timed(cmd, env, timeout)
        r = FI.result_of(impl, run, png)
        r["cmd"] = cmd
        r["timeout_s"] = timeout
        fi["rows"].setdefault(cache, {})[impl] = r
        if r["wall_s"] is None:
            raise RuntimeError(f"{impl} ({cache}): {r['error']}: {r['log_tail'][-1200:]}")
        log(f"  {impl} {cache}: {r['wall_s']:.2f} s to the PNG; parts {R.fmt_parts(r.get('parts'))}")
        return r

    def first_image_cmd(self, impl, png):
        """The command and environment of one first-image process: ours with the run's usual
        flags, or first_image_torch.py on the same model, prompt, size, steps and guidance."""
        a = self.a
        prompt = self.prompts[a.prompt_tokens]
        env = dict(os.environ)
        env.pop("MOSSINFER_BACKEND", None)
        if impl == "ours":
            if a.backend:
                env["MOSSINFER_BACKEND"] = a.backend
            return ([self.binary("moss-infer-hip"), "--model", self.model] + self.generation_args(a.first_size, a.first_steps)
                    + ["-o", png]), env
        site = self.wheel_site()
        if site:
            env["PYTHONPATH"] = site + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        if impl == "compiled":
            env.update(fresh_compile_caches(self.tmp, "first"))  # its compile is part of its first image
        cmd = [sys.executable, os.path.join(HERE, "mossbench", "first_image_torch.py"), "--impl", impl,
               "--model", self.model, "--out", png, "--prompt", prompt, "--negative", "", "--size", str(a.first_size),
               "--steps", str(a.first_steps), "--cfg", str(a.cfg), "--skip-layers", a.skip_layers, "--seed", "42",
               "--device", a.torch_device, "--compile-mode", a.first_compile_mode[0]]
        if a.moss_ref:
            cmd += ["--moss-ref", a.moss_ref]
        return cmd, env

    # ---- merging -----------------------------------------------------------------------------
    def merge(self):
        """Fills what this run did not measure from the --merge-results files (see
        mossbench/merge.py); with --report-only, takes the sizes and model facts from them."""
        from mossbench import merge as MG
        files = [p for p in self.a.merge_results.split(",") if p.strip()]
        earlier = [(p, MG.load(p)) for p in files]
        if self.a.report_only:
            first = earlier[0][1]
            self.results["env"] = dict(first.get("env") or {})
            self.results["args"] = dict(first.get("args") or {}, report_only=True, merge_results=self.a.merge_results)
            for key in ("dit_sizes", "compile_sizes", "te_tokens", "vae_sizes"):
                setattr(self.a, key, MG.union_list((r.get("args") or {}).get(key) for _, r in earlier))
            for key in ("prompt_tokens", "cfg", "skip_layers", "stream_size", "vae_dtype"):
                if key in (first.get("args") or {}):
                    setattr(self.a, key, first["args"][key])
            self.skip_layers = ints(self.a.skip_layers)
            self.model = (first.get("args") or {}).get("model") or first.get("model_dir")
        for p, r in earlier:
            mism = MG.merge_into(self.results, r, MG.label_of(p, r))
            log(f"merged {p}" + (f"; setup differs: {'; '.join(mism)}" if mism else ""))
        if self.a.report_only and self.results.get("provenance"):
            # the first file's own numbers are this report's 'this run'
            first_label = self.results["merged_from"][0]["label"]
            self.results["provenance"] = {k: v for k, v in self.results["provenance"].items() if v != first_label}
            self.results["merged_from"][0]["role"] = "the report's own run"
        facts = self.results.get("model_facts") or {}
        if self.dit_cfg is None and facts.get("dit_config"):
            self.dit_cfg, self.uncond_tokens = facts["dit_config"], facts.get("uncond_tokens")

    # ---- report ------------------------------------------------------------------------------
    def dit_flops(self, size):
        if not self.dit_cfg or self.uncond_tokens is None:
            return None
        return F.dit_step_flops(self.dit_cfg, size, size, self.a.prompt_tokens, self.uncond_tokens,
                                len(self.skip_layers), self.a.cfg)

    def dit_report_sizes(self):
        """The DiT sizes with a row: --dit-sizes, then the compiled sizes beyond them that have
        a number (of this run or a merged one)."""
        measured = {k for v in (self.results["torch"].get("dit") or {}).values() for k in v}
        extra = [s for s in ints(self.a.compile_sizes) if str(s) in measured or f"dit_{s}" in self.results["ours"]]
        return ints(self.a.dit_sizes) + [s for s in extra if s not in ints(self.a.dit_sizes)]

    def process_note(self, ours_path, base_path):
        """'' when both sides of a row were measured by this process, else which file each
        came from: a ratio across two processes is labelled as one."""
        from mossbench.merge import source_of
        so, sb = source_of(self.results, *ours_path), source_of(self.results, *base_path)
        if so == sb:
            return "" if so is None else f"; both from {so}"
        return f"; separate processes: ours from {so or 'this run'}, baseline from {sb or 'this run'}"

    def build_rows(self):
        peak = (self.results["torch"].get("matmul_peak") or {}).get("tflops")
        ours, th = self.results["ours"], self.results["torch"]
        rows, mem = [], []
        for size in self.dit_report_sizes():
            o = ours.get(f"dit_{size}") or {}
            o_s = (o.get("denoise") or {}).get("wall_gap_s")
            fl = self.dit_flops(size)
            shape = f"{size}x{size}"
            base = [(name, v.get(str(size))) for name, v in (th.get("dit") or {}).items() if v.get(str(size))]
            for name, b in base or [(None, {})]:
                note = "cond + uncond"
                if name and "compile" in name:
                    note += f"; first call (compile) {b.get('first_call_s', 0):.0f} s"
                if name:
                    note += self.process_note(("ours", f"dit_{size}"), ("torch", "dit", name, str(size)))
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
        tokens = ints(self.a.te_tokens)

        def flops_of(n):  # with the model facts of the file the row came from (merged reports)
            f = facts_for(self.results, "ours", f"te_{n}")
            tcfg, lp = f.get("text_config"), f.get("text_layer_params")
            return F.text_encoder_flops(tcfg, lp, n) if tcfg and lp else None
        te_rows, te_mem = R.text_encoder_rows({n: ours.get(f"te_{n}") for n in tokens}, th.get("text_encoder"), tokens,
                                              flops_of, peak)
        rows += te_rows
        mem += te_mem
        for size in ints(self.a.vae_sizes):
            o = ours.get(f"vae_{size}") or {}
            o_s = (o.get("done") or {}).get("vae_s")
            b = (th.get("vae") or {}).get(str(size)) or {}
            vcfg = facts_for(self.results, "ours", f"vae_{size}").get("vae_config")
            fl = F.vae_decode_flops(vcfg, size, size) if vcfg else None
            rows.append(R.speed_row("VAE decode", f"{size}x{size}", o_s, "diffusers" if b else None, b.get("median_s"), fl,
                                    peak, f"baseline {self.a.vae_dtype}"))
            m, mo = b.get("memory") or {}, o.get("memory_gib") or {}
            mem.append({"stage": "VAE decode", "shape": f"{size}x{size}", "ours_gib": mo.get("vae"),
                        "ours_above_gib": mo.get("vae_above_start"), "planner_gib": (o.get("plan") or {}).get("vae_peak_gib"),
                        "baseline": "diffusers" if b else None, "baseline_gib": m.get("peak_gib"),
                        "baseline_above_gib": m.get("above_start_gib")})
        return rows, mem

    def compile_lines(self):
        info = self.results["torch"].get("compile") or {}
        if not info:
            return []
        out = ["", "## torch.compile anchors", "",
               "moss_ref compiled with dynamic=False and automatic_dynamic_shapes=False (each size its own static "
               "graph); first call = the compile of that size (plus one step):", ""]
        dit = self.results["torch"].get("dit") or {}
        for name, c in info.items():
            firsts = ", ".join(f"{k}: {R.fmt(v.get('first_call_s'), 1)} s" for k, v in (dit.get(name) or {}).items())
            out.append(f"- {name} (mode {c.get('mode')}): first calls {firsts or 'none measured'}; graphs "
                       f"{(c.get('graphs') or {}).get('unique_graphs', '-')}; inductor cache "
                       f"{c.get('inductor_cache', '-')}")
        return out

    def first_image_lines(self):
        from mossbench.merge import source_of
        fi = self.results.get("first_image")
        if not fi or not fi.get("rows"):
            return []
        view = {"rows": {}}
        for cache, by_impl in fi["rows"].items():
            for impl, r in by_impl.items():
                src = source_of(self.results, "first_image", "rows", cache, impl)
                view["rows"].setdefault(cache, {})[impl] = dict(r, **({"from": src} if src else {}))
        return ["", f"## First image ({fi.get('size')}x{fi.get('size')}, {fi.get('steps')} steps, cfg {fi.get('cfg')}, "
                    f"skip layers {fi.get('skip_layers')}; process start to written PNG)", "",
                "Each row is a fresh process. DiffSynth 2.1.12's MOSSImagePipeline cannot load these folders (it "
                "identifies files by the official checkpoint's key hashes, hard-codes the full-size text encoder, "
                "needs a tokenizer_config.json and the whole library's requirements), so its path is composed "
                "of the same pieces in its order (mossbench/first_image_torch.py). Warm: the model files read once "
                f"just before; cold: {fi.get('cache', {}).get('cold', 'not run')}.", ""] + R.first_image_table(view)

    def merged_lines(self):
        merged = self.results.get("merged_from") or []
        if not merged:
            return []
        out = ["", "## Merged results files", "",
               "Numbers from these files fill what this run did not measure; rows mixing two processes say so."]
        for m in merged:
            env = m.get("env") or {}
            out.append(f"- {m['label']}{' (' + m['role'] + ')' if m.get('role') else ''}: GPU {env.get('gpu')}, "
                       f"repo {env.get('git')}, complete {m.get('complete')}; "
                       + (f"setup differs: {'; '.join(m['mismatches'])}" if m.get("mismatches") else "same setup"))
        return out

    def save(self, final):
        try:
            self.finish(final)
        except Exception as e:  # a report that cannot be built must not stop the measuring
            log(f"report failed: {type(e).__name__}: {e}")

    def finish(self, final=True):
        rows, mem = self.build_rows()
        tg = R.targets(rows, mem, self.results.get("stream"))
        tg19 = R.targets_issue19(rows, self.dit_report_sizes())
        self.results.update(rows=rows, memory=mem, targets=tg, targets_issue19=tg19, model=self.model,
                            elapsed_s=self.elapsed())
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
            + [R.target_line(t) for t in tg] + ["", "## Targets (issue 19)", ""] + [R.target_line(t) for t in tg19]
        lines += self.compile_lines() + self.first_image_lines() + self.merged_lines()
        if self.results.get("stream"):
            st = self.results["stream"]
            lines += ["", f"Streamed run: budget {R.fmt(st.get('budget_gib'), 2)} GiB, {st.get('resident_blocks')} blocks "
                          f"resident (block {R.fmt(st.get('block_gib'), 3)} GiB; tries {st.get('tries')})."]
        if self.errors or self.skipped:
            lines += ["", "## Not measured", ""] + [f"- {k}: {' '.join(v.split())[:400]}" for k, v in self.errors.items()] + \
                     [f"- {s}" for s in self.skipped]
        if self.results.get("superseded"):
            lines += ["", "Failed in one process and measured in another (the row shows the measurement):", ""] + \
                     [f"- {s}" for s in self.results["superseded"]]
        if self.a.report_only:
            lines += ["", "A report of the merged results files; nothing was measured by this process."]
        else:
            lines += ["", f"Total bench time {self.elapsed():.0f} s" + ("." if final else " so far (incomplete run).")]
        self.results["complete"] = final
        tag = self.a.tag or gpu_tag(env.get("gpu", ""))
        stem = f"{datetime.date.today().isoformat()}-{tag}"
        paths = R.write(self.results, lines, self.a.results_dir, stem, self.a.copy_to)
        if final:
            print("\n".join(lines), flush=True)
            for p in paths:
                log(f"wrote {p}")


def fresh_compile_caches(tmp, name):
    """New, empty inductor and triton cache folders (the environment variables that name them):
    a compile timed with them finds no kernels of an earlier process."""
    d = tempfile.mkdtemp(prefix=f"inductor-{name}-", dir=tmp)
    return {"TORCHINDUCTOR_CACHE_DIR": d, "TRITON_CACHE_DIR": os.path.join(d, "triton")}


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
    if a.report_only:
        b.phase("merge results", b.merge)
        b.finish()
        return 0 if "merge results" not in b.errors else 1
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
    torch_ready = False
    if b.wants("torch") or b.wants_compile():
        b.phase("torch setup", b.torch_setup)
        torch_ready = "torch setup" not in b.errors
    if torch_ready and b.wants("torch"):
        if b.wants("peak"):
            b.phase("torch bf16 peak", b.torch_peak)
        if b.wants("dit"):
            b.phase("torch DiT", b.torch_dit)
        if b.wants("te"):
            b.phase("torch text encoder", b.torch_te)
        if b.wants("vae"):
            b.phase("torch VAE", b.torch_vae)
    if b.wants_first_image():
        # after the eager baselines (each has freed its weights), before the compiles: the
        # processes it starts have the device to themselves but for this one's context
        b.phase("first image", b.first_image)
    if torch_ready and b.wants_compile():
        # last: its compiles take minutes
        b.phase("torch DiT compiled", b.torch_dit_compiled,
                need_s=min(b.compile_need(R.compiled_name(s, a.compile_mode[0]), s) for s in a.compile_scope))
    if a.merge_results:
        b.phase("merge results", b.merge)
    b.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main())
