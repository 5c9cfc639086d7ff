#!/usr/bin/env python3
"""Tokenizer benchmark: the engine's tokenizer (bench_tokenizer) next to Hugging Face
`tokenizers` on the same inputs, in one run, both pinned to the same CPU core.

Inputs (built here, deterministically):
  prompt_4096  an English image prompt of 4096 tokens (the --max-seq default);
  mixed_100k   100 KiB of mixed-script text (the multilingual golden strings: Latin,
               CJK, Cyrillic, Arabic, emoji, combining marks, added tokens, white space).
Measured: load of tokenizer.json; per input the first encode on a fresh tokenizer (empty
cache) and the median of repeated encodes; wall clock and CPU time of the thread. The ids
of both are compared through a checksum.

Targets (issue 4): load < 0.5 s, 4096-token prompt < 20 ms, throughput >= tokenizers.

usage: run_bench.py [--build build-dir] [--tokenizer tokenizer.json] [--cpu N]
                    [--out bench/results/tokenizer]
needs: pip install tokenizers; bench_tokenizer built (cmake --build BUILD --target bench_tokenizer)
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fnv1a(ids):
    h = 1469598103934665603
    for i in ids:
        h = ((h ^ (i & 0xFFFFFFFF)) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return str(h)


def make_prompt(tok, n_tokens=4096, seed=4):
    rng = random.Random(seed)
    subjects = ["a red fox", "an old lighthouse", "a crowded night market", "a glass teapot", "two astronauts",
                "a Victorian library", "a tabby cat", "a mountain village", "a vintage motorcycle", "a koi pond"]
    details = ["soft morning light", "volumetric fog", "shot on 35mm film", "ultra-detailed textures",
               "rim lighting", "shallow depth of field", "muted pastel palette", "rain-soaked streets",
               "golden hour", "intricate embroidery", "8k resolution", "cinematic composition"]
    parts = []
    while True:
        s = (f"{rng.choice(subjects).capitalize()} beside {rng.choice(subjects)}, {rng.choice(details)}, "
             f"{rng.choice(details)}; the scene's focal length is {rng.randint(14, 200)}mm at f/{rng.choice([1.4, 2, 2.8, 4])}.")
        parts.append(s + ("\n" if rng.random() < 0.2 else " "))
        text = "".join(parts)
        enc = tok.encode(text, add_special_tokens=False)
        if len(enc.ids) > n_tokens:
            return text[:enc.offsets[n_tokens - 1][1]]


def make_mixed(n_bytes=100 * 1024, seed=5):
    cases = json.load(open(os.path.join(ROOT, "hip/tests/data/tokenizer_cases_qwen35.json"), encoding="utf-8"))["cases"]
    texts = [c["text"] for c in cases if c["text"].strip()]
    rng = random.Random(seed)
    out, size = [], 0
    while size < n_bytes:
        t = rng.choice(texts) + "\n"
        out.append(t)
        size += len(t.encode())
    data = "".join(out).encode()[:n_bytes]
    return data.decode("utf-8", errors="ignore")


def time_hf(path, inputs, loads, repeat):
    from tokenizers import Tokenizer
    load_wall, load_cpu, fresh = [], [], []
    for _ in range(max(loads, len(inputs))):
        w, c = time.perf_counter(), time.thread_time()
        fresh.append(Tokenizer.from_file(path))
        load_wall.append(time.perf_counter() - w)
        load_cpu.append(time.thread_time() - c)
    res = {"engine": "tokenizers", "version": __import__("tokenizers").__version__,
           "load": {"median": {"wall_s": statistics.median(load_wall), "cpu_s": statistics.median(load_cpu)},
                    "min": {"wall_s": min(load_wall), "cpu_s": load_cpu[load_wall.index(min(load_wall))]}},
           "inputs": {}}
    for k, (name, text) in enumerate(inputs):
        tok = fresh[k]
        w, c = time.perf_counter(), time.thread_time()
        ids = tok.encode(text, add_special_tokens=False).ids
        first = {"wall_s": time.perf_counter() - w, "cpu_s": time.thread_time() - c}
        ws, cs = [], []
        for _ in range(repeat):
            w, c = time.perf_counter(), time.thread_time()
            ids = tok.encode(text, add_special_tokens=False).ids
            ws.append(time.perf_counter() - w)
            cs.append(time.thread_time() - c)
        res["inputs"][name] = {"bytes": len(text.encode()), "tokens": len(ids), "ids_fnv1a": fnv1a(ids),
                               "first": first, "warm_median": {"wall_s": statistics.median(ws), "cpu_s": statistics.median(cs)}}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--tokenizer", default=os.path.join(ROOT, "hip/tests/data/qwen35-tokenizer/tokenizer.json"))
    ap.add_argument("--cpu", type=int, default=None, help="pin both to this core (default: the last one)")
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/tokenizer"))
    a = ap.parse_args()

    cpu = a.cpu if a.cpu is not None else max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})          # inherited by bench_tokenizer
    os.environ["RAYON_NUM_THREADS"] = "1"   # tokenizers: one thread (one sequence uses one anyway)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(a.tokenizer)
    inputs = [("prompt_4096", make_prompt(hf)), ("mixed_100k", make_mixed())]
    with tempfile.TemporaryDirectory() as tmp:
        args = [os.path.join(a.build, "bench_tokenizer"), "--tokenizer", a.tokenizer,
                "--loads", str(a.loads), "--repeat", str(a.repeat)]
        for name, text in inputs:
            p = os.path.join(tmp, name + ".txt")
            with open(p, "w", encoding="utf-8") as f:
                f.write(text)
            args += ["--input", f"{name}={p}"]
        engine = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    ref = time_hf(a.tokenizer, inputs, a.loads, a.repeat)

    ms = lambda s: f"{1e3 * s:8.2f}"
    lines = [f"# Tokenizer benchmark ({os.path.relpath(a.tokenizer, ROOT)}, vocabulary {engine['vocab_size']}, "
             f"one core: cpu {cpu}, PCRE2 JIT {engine['regex_jit']}, tokenizers {ref['version']})", "",
             "| measure | engine wall ms | engine cpu ms | tokenizers wall ms | tokenizers cpu ms |",
             "|---|---:|---:|---:|---:|"]
    for key in ("min", "median"):
        e, r = engine["load"][key], ref["load"][key]
        lines.append(f"| load tokenizer.json ({key}) | {ms(e['wall_s'])} | {ms(e['cpu_s'])} | {ms(r['wall_s'])} | {ms(r['cpu_s'])} |")
    ok = True
    for name, _ in inputs:
        e, r = engine["inputs"][name], ref["inputs"][name]
        same = e["ids_fnv1a"] == r["ids_fnv1a"] and e["tokens"] == r["tokens"]
        ok &= same
        for key in ("first", "warm_median"):
            lines.append(f"| {name} ({e['bytes']} B, {e['tokens']} tokens, ids {'equal' if same else 'DIFFER'}) {key} | "
                         f"{ms(e[key]['wall_s'])} | {ms(e[key]['cpu_s'])} | {ms(r[key]['wall_s'])} | {ms(r[key]['cpu_s'])} |")
        e_mbs = e["bytes"] / e["warm_median"]["cpu_s"] / 1e6
        r_mbs = r["bytes"] / r["warm_median"]["cpu_s"] / 1e6
        lines.append(f"| {name} throughput (warm, cpu) MB/s | {e_mbs:.1f} | | {r_mbs:.1f} | |")
    load = engine["load"]["min"]["wall_s"]
    prompt = engine["inputs"]["prompt_4096"]["first"]["wall_s"]
    tp_e = engine["inputs"]["mixed_100k"]["warm_median"]["cpu_s"]
    tp_r = ref["inputs"]["mixed_100k"]["warm_median"]["cpu_s"]
    first_e = engine["inputs"]["mixed_100k"]["first"]["cpu_s"]
    first_r = ref["inputs"]["mixed_100k"]["first"]["cpu_s"]
    lines += ["", "Targets:",
              f"- load < 500 ms: {1e3 * load:.1f} ms (min wall) -> {'PASS' if load < 0.5 else 'FAIL'}",
              f"- 4096-token prompt < 20 ms: {1e3 * prompt:.2f} ms (first encode, wall) -> {'PASS' if prompt < 0.02 else 'FAIL'}",
              f"- 100 KB throughput >= tokenizers: warm {tp_r / tp_e:.2f}x, first {first_r / first_e:.2f}x of tokenizers' speed "
              f"(cpu time) -> {'PASS' if tp_e <= tp_r and first_e <= first_r else 'FAIL'}",
              f"- ids equal to tokenizers on both inputs: {'PASS' if ok else 'FAIL'}",
              "", f"load average at the end: {os.getloadavg()[0]:.2f} (wall times inflate when the machine is busy)"]
    report = "\n".join(lines)
    print(report)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".md", "w") as f:
        f.write(report + "\n")
    with open(a.out + ".json", "w") as f:
        json.dump({"engine": engine, "tokenizers": ref, "cpu": cpu}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
