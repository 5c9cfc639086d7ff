"""Running moss-infer-hip and reading its progress lines (docs/product.md section 4):
`text encoder`, `denoise <step>/<steps> <seconds>`, `vae`, `done: ...` and the memory plan.
Each stderr line is stamped with the time it arrived, so step times come from the gaps
between `denoise` lines (wall clock, millisecond resolution) as well as from the printed
seconds, and each stage's device-memory peak from the poller's samples in its window."""
import os
import re
import statistics
import subprocess
import threading
import time

GIB = float(1 << 30)

_DENOISE = re.compile(r"^denoise (\d+)/(\d+) ([0-9.]+)")
_DONE_FIELDS = {
    "text_encoder_s": r"text encoder ([0-9.]+) s",
    "dit_load_s": r"dit load ([0-9.]+) s",
    "denoise_s": r"denoise ([0-9.]+) s",
    "vae_s": r"vae ([0-9.]+) s",
    "total_s": r"total ([0-9.]+) s",
}
# The text encoder's total splits into its load (weights to the device: the resident layers'
# one-time copy with the kernels' warm-up overlapping it, 0 when they stream) and its encode (one
# pass over the layers with every prompt's rows stacked), then the prompts' token counts:
# `text encoder 0.93 s (load 0.70 s, encode 0.23 s, resident, 64+10 tokens)` (cfg 1: `64 tokens`,
# the prompt alone). Older logs lack the token counts.
_TE_SPLIT = re.compile(r"text encoder [0-9.]+ s \(load ([0-9.]+) s, encode ([0-9.]+) s, ([a-z ]+)(?:, ([0-9+]+) tokens)?\)")
_RESIDENT = re.compile(r"(\d+) of (\d+) DiT blocks resident")
_PLAN_PEAKS = re.compile(r"peaks: text encoder ([0-9.]+) GiB, DiT ([0-9.]+) GiB, VAE ([0-9.]+) GiB \(budget ([0-9.]+) GiB\)")


def parse_log(lines):
    """lines: [(arrival time, text)]. Returns the parsed events (times are arrival times)."""
    out = {"denoise": [], "done": None, "plan": None, "device": None, "t_text_encoder": None, "t_vae": None,
           "warnings": []}
    for t, line in lines:
        line = line.rstrip("\n")
        m = _DENOISE.match(line)
        if m:
            out["denoise"].append({"step": int(m.group(1)), "total": int(m.group(2)),
                                   "printed_s": float(m.group(3)), "t": t})
        elif line == "text encoder":
            out["t_text_encoder"] = t
        elif line == "vae":
            out["t_vae"] = t
        elif line.startswith("done:"):
            done = {}
            for k, pat in _DONE_FIELDS.items():
                mm = re.search(pat, line)
                done[k] = float(mm.group(1)) if mm else None
            mm = _TE_SPLIT.search(line)
            done["te_load_s"] = float(mm.group(1)) if mm else None
            done["te_encode_s"] = float(mm.group(2)) if mm else None
            done["te_layers"] = mm.group(3) if mm else None
            done["te_prompt_tokens"] = [int(n) for n in mm.group(4).split("+")] if mm and mm.group(4) else None
            mm = _RESIDENT.search(line)
            if mm:
                done["resident_blocks"], done["total_blocks"] = int(mm.group(1)), int(mm.group(2))
            out["done"] = done
        elif line.startswith("memory plan:"):
            plan = {}
            mm = _RESIDENT.search(line)
            if mm:
                plan["resident_blocks"], plan["total_blocks"] = int(mm.group(1)), int(mm.group(2))
            mm = _PLAN_PEAKS.search(line)
            if mm:
                plan.update(te_peak_gib=float(mm.group(1)), dit_peak_gib=float(mm.group(2)),
                            vae_peak_gib=float(mm.group(3)), budget_gib=float(mm.group(4)))
            out["plan"] = plan
        elif line.startswith("device "):
            out["device"] = line
        elif line.startswith("warning:"):
            out["warnings"].append(line)
    return out


def step_seconds(denoise):
    """Seconds per denoise step with the first step left out as warm-up: the median gap
    between consecutive `denoise` lines, and the median of the printed values. With a
    single step there is nothing but the warm-up step to report."""
    later = denoise[1:]
    gaps = [b["t"] - a["t"] for a, b in zip(denoise, denoise[1:])]
    printed = [d["printed_s"] for d in later]
    return {
        "steps": len(denoise),
        "wall_gap_s": statistics.median(gaps) if gaps else None,
        "printed_s": statistics.median(printed) if printed else None,
        "first_step_printed_s": denoise[0]["printed_s"] if denoise else None,
    }


RESERVE_GIB = 0.5  # the planner's reserve (hip/src/pipeline/planner.h kReserveBytes)


def budget_for_resident(dit_peak_gib, total_blocks, block_gib, resident):
    """A --vram-budget (GiB) under which the planner keeps `resident` DiT blocks on the device.
    The planner keeps R = floor((budget - base - 2 slots - staging) / block) blocks, where base
    (VAE weights, fixed part, activations, reserve) is the fully resident run's DiT peak less its
    blocks, plus the reserve, and staging is the packed weights' buffer (about 0.54 of a block of
    the real model, none of small ones); aiming 0.9 of a block above R covers it and the printed
    peak's rounding."""
    base = dit_peak_gib - total_blocks * block_gib + RESERVE_GIB
    return base + (2 + resident + 0.9) * block_gib


class EngineRun:
    """One moss-infer-hip process: its command, exit status, stamped stderr and the memory
    samples around it."""

    def __init__(self, binary, model, args, poller=None, backend=None, timeout_s=300):
        self.cmd = [binary, "--model", model] + list(args)
        self.poller, self.backend, self.timeout_s = poller, backend, timeout_s
        self.lines, self.stdout, self.rc, self.wall_s = [], "", None, None
        self.idle_bytes = None
        self.t_start = self.t_end = None

    def run(self):
        env = dict(os.environ)
        env.pop("MOSSINFER_BACKEND", None)  # the device backend, unless a test asks for another
        if self.backend:
            env["MOSSINFER_BACKEND"] = self.backend
        if self.poller:
            self.idle_bytes = self.poller.now()
        self.t_start = time.monotonic()
        p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

        def read_err():
            for line in p.stderr:
                self.lines.append((time.monotonic(), line))

        def read_out():
            self.stdout = p.stdout.read()

        threads = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=read_out, daemon=True)]
        for th in threads:
            th.start()
        try:
            self.rc = p.wait(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            self.rc = p.wait()
            self.lines.append((time.monotonic(), f"bench: killed after {self.timeout_s} s"))
        for th in threads:
            th.join(timeout=5)
        self.t_end = time.monotonic()
        self.wall_s = self.t_end - self.t_start
        return self

    def log_text(self):
        return "".join(l if l.endswith("\n") else l + "\n" for _, l in self.lines)

    def summary(self):
        """Parsed times, step times, the planner's peaks and the measured device-memory peak of
        each stage (GiB above the device's use before the process started; it includes the
        process's own context)."""
        ev = parse_log(self.lines)
        s = {"cmd": self.cmd, "rc": self.rc, "wall_s": self.wall_s, "done": ev["done"], "plan": ev["plan"],
             "device": ev["device"], "warnings": ev["warnings"], "denoise": step_seconds(ev["denoise"])}
        s["memory_gib"] = self._stage_peaks(ev)
        return s

    def _stage_peaks(self, ev):
        if not self.poller or not self.poller.source or self.idle_bytes is None:
            return None
        done = ev["done"] or {}
        idle = self.idle_bytes

        def peak(t0, t1):
            if t0 is None or t1 is None:
                return None
            b = self.poller.peak(t0, t1)
            return None if b is None else (b - idle) / GIB

        windows = {"run": (self.t_start, self.t_end)}
        t_te = ev["t_text_encoder"]
        if t_te is not None and done.get("text_encoder_s") is not None:
            te_end = t_te + done["text_encoder_s"]
            windows["text_encoder"] = (t_te, te_end)
            last = ev["denoise"][-1]["t"] if ev["denoise"] else None
            # The DiT's window opens when its load starts, which is after the text encoder's
            # memory went back to the device (its time stops before that release): the first
            # step's line less the step and the load, plus two sample intervals of guard.
            start = te_end
            if ev["denoise"] and done.get("dit_load_s") is not None:
                first = ev["denoise"][0]
                start = max(te_end, first["t"] - first["printed_s"] - done["dit_load_s"] + 2 * self.poller.interval_s)
            windows["dit"] = (start, last)
        if ev["t_vae"] is not None and done.get("vae_s") is not None:
            windows["vae"] = (ev["t_vae"], ev["t_vae"] + done["vae_s"])
        out = {k: peak(*w) for k, w in windows.items()}
        if "vae" in windows:
            # Above the window's lowest sample (the VAE weights and the context, before the decode
            # allocates): the last sample before the line can still show the DiT's memory.
            low = self.poller.low(*windows["vae"])
            if low is not None and out.get("vae") is not None:
                out["vae_above_start"] = out["vae"] - (low - idle) / GIB
        out["source"] = self.poller.source
        return out
