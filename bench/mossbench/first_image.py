"""The 'first image' figure (issue 19): one generation from process start to a written PNG,
loads included, for moss-infer-hip and for the PyTorch paths (first_image_torch.py), each a
fresh process with a time limit, with the model files in the page cache (warm: read once just
before) or not (cold: the page cache dropped just before, where this machine lets us).

Per part, where the process says: load (weights to the device), text encoder (both prompts),
denoise (all steps; the compiled reference's compile is inside its first step), decode."""
import json
import os
import subprocess
import time

from mossbench.engine import parse_log
from mossbench.first_image_torch import MARK

DROP_CACHES = "/proc/sys/vm/drop_caches"
PARTS = ("load_s", "text_encoder_s", "denoise_s", "decode_s")


def model_files(model_dir):
    out = []
    for root, _, files in os.walk(model_dir):
        out += [os.path.join(root, f) for f in sorted(files)]
    return sorted(out)


def warm_page_cache(model_dir, chunk=64 << 20):
    """Reads every file of the model folder once so the next process finds it in memory.
    Returns the bytes read and the seconds it took."""
    t, total = time.monotonic(), 0
    buf = bytearray(chunk)
    for path in model_files(model_dir):
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(buf)
                if not n:
                    break
                total += n
    return {"bytes": total, "seconds": time.monotonic() - t}


def drop_page_cache(path=DROP_CACHES):
    """Writes back dirty pages and drops the page cache. Returns None when done, else why not
    (not root, a read-only /proc in a container, ...): the cold rows then say so."""
    try:
        os.sync()
        with open(path, "w") as f:
            f.write("3\n")
        return None
    except OSError as e:
        return f"cold: not possible here ({path}: {e.strerror or e})"


def parse_torch_stdout(text):
    """The FIRST_IMAGE json the PyTorch script prints last; None when it never got there."""
    found = None
    for line in text.splitlines():
        if line.startswith(MARK):
            found = json.loads(line[len(MARK):])
    return found


def ours_parts(stderr_text):
    """Our parts from the `done:` line: load = the text encoder's load (0 when its layers
    stream: the copies are then inside its encode) + the DiT load (which includes embedding
    the prompts' text rows); text encoder = the encode pass; denoise; decode = vae."""
    done = parse_log([(0.0, line) for line in stderr_text.splitlines()])["done"]
    if not done:
        return None
    te_load = done.get("te_load_s") or 0.0
    te = done.get("te_encode_s") if done.get("te_encode_s") is not None else done.get("text_encoder_s")
    load = None if done.get("dit_load_s") is None else done["dit_load_s"] + te_load
    return {"load_s": load, "text_encoder_s": te, "denoise_s": done.get("denoise_s"), "decode_s": done.get("vae_s"),
            "total_s": done.get("total_s"), "te_layers": done.get("te_layers")}


def run_timed(cmd, env, timeout_s):
    """Runs one process and returns its wall clock from spawn to exit (the PNG is written
    before it exits), exit status and output. A process past its limit is killed: rc None."""
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc = None
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = (e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")) + \
            f"\nbench: killed after {timeout_s:.0f} s"
    return {"wall_s": time.monotonic() - t, "rc": rc, "stdout": out, "stderr": err}


def result_of(kind, run, png):
    """One row's record: wall seconds only when the process exited 0 and the PNG exists."""
    r = {"rc": run["rc"], "log_tail": (run["stderr"] + run["stdout"])[-3000:]}
    ok = run["rc"] == 0 and os.path.exists(png) and os.path.getsize(png) > 0
    if kind == "ours":
        parts = ours_parts(run["stderr"])
    else:
        info = parse_torch_stdout(run["stdout"]) or {}
        parts = info.get("parts")
        r.update({k: info[k] for k in ("compile", "tokens", "diffsynth") if info.get(k) is not None})
    r["parts"] = parts
    r["wall_s"] = run["wall_s"] if ok else None
    if not ok:
        r["error"] = "timed out" if run["rc"] is None else f"exit {run['rc']}" if run["rc"] else "no PNG written"
    return r


def ratios(rows):
    """ours / theirs per cache state, for the wall clock and each part: {cache: {impl: {...}}}."""
    out = {}
    for cache, by_impl in rows.items():
        ours = by_impl.get("ours") or {}
        for impl, r in by_impl.items():
            if impl == "ours":
                continue
            entry = {"wall": _div(ours.get("wall_s"), r.get("wall_s"))}
            op, tp = ours.get("parts") or {}, r.get("parts") or {}
            for p in PARTS:
                entry[p[:-2]] = _div(op.get(p), tp.get(p))
            out.setdefault(cache, {})[impl] = entry
    return out


def _div(a, b):
    return a / b if a is not None and b else None
