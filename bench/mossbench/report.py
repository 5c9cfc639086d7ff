"""The results table, the issue's targets and the dated result files."""
import json
import os


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def fmt_parts(parts):
    if not parts:
        return "-"
    return ", ".join(f"{k[:-2].replace('_', ' ')} {v:.2f} s" for k, v in parts.items() if isinstance(v, float))


def speed_row(stage, shape, ours_s, baseline, baseline_s, flops, peak_tflops, note=""):
    r = {"stage": stage, "shape": shape, "ours_s": ours_s, "baseline": baseline, "baseline_s": baseline_s,
         "ratio": ours_s / baseline_s if ours_s and baseline_s else None, "tflop": flops / 1e12 if flops else None,
         "note": note}
    r["ours_tflops"] = flops / ours_s / 1e12 if flops and ours_s else None
    r["baseline_tflops"] = flops / baseline_s / 1e12 if flops and baseline_s else None
    r["ours_share_of_peak"] = r["ours_tflops"] / peak_tflops if r["ours_tflops"] and peak_tflops else None
    r["baseline_share_of_peak"] = r["baseline_tflops"] / peak_tflops if r["baseline_tflops"] and peak_tflops else None
    return r


def prompts_note(tokens):
    """What our encode covered, from the done line's token counts (None: an older log)."""
    if not tokens:
        return "prompts encoded: not in the log"
    if len(tokens) == 1:
        return f"one prompt of {tokens[0]} tokens, as transformers' forward (first call after the load)"
    return "prompts stacked in one pass: " + " + ".join(str(n) for n in tokens) + " tokens (not like with like)"


def text_encoder_rows(ours, torch_te, tokens, flops_of, peak_tflops):
    """The text encoder's speed and memory rows, like with like: our encode (the pass with the
    weights already on the device, from the `done:` line's `(load X s, encode Y s, ...)`) against
    transformers' forward (weights resident), and our one-time load of the layers against torch's
    load, in a row of its own. A run whose layers stream has no separate load: its encode carries
    the copies, and the note says so. ours: {n: engine summary}; torch_te: the torch results'
    "text_encoder" dict ({"load_s": s, "<n>": measure}); flops_of(n) or None."""
    rows, mem = [], []
    load = None
    for n in tokens:
        o = ours.get(n) or {}
        done = o.get("done") or {}
        layers = done.get("te_layers")
        o_s = done.get("te_encode_s") if done.get("te_encode_s") is not None else done.get("text_encoder_s")
        if load is None and layers == "resident":
            load = done.get("te_load_s")
        b = (torch_te or {}).get(str(n)) or {}
        note = {"resident": "ours: encode with the layers on the device (load in its own row)",
                "streamed": "ours streams the layers from host memory (copies included)"}.get(
                    layers, "ours: total (no load/encode split in the log)")
        note += "; " + prompts_note(done.get("te_prompt_tokens"))
        rows.append(speed_row("text encoder", f"{n} tokens", o_s, "transformers" if b else None, b.get("median_s"),
                              flops_of(n) if flops_of else None, peak_tflops, note))
        m = b.get("memory") or {}
        mem.append({"stage": "text encoder", "shape": f"{n} tokens", "ours_gib": (o.get("memory_gib") or {}).get("text_encoder"),
                    "planner_gib": (o.get("plan") or {}).get("te_peak_gib"), "baseline": "transformers" if b else None,
                    "baseline_gib": m.get("peak_gib"), "baseline_above_gib": m.get("above_start_gib")})
    torch_load = (torch_te or {}).get("load_s")
    if load is not None or torch_load is not None:
        rows.append(speed_row("text encoder load", "layers to device", load,
                              "safetensors to cuda (torch)" if torch_load is not None else None, torch_load, None,
                              peak_tflops, "ours: mmap -> pinned staging -> device, all layers resident"))
    return rows, mem


def speed_table(rows):
    out = ["| stage | shape | ours s | baseline | baseline s | ours / baseline | TFLOP | ours TFLOP/s | ours % of peak "
           "| baseline TFLOP/s | note |",
           "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        share = f"{100 * r['ours_share_of_peak']:.1f}%" if r.get("ours_share_of_peak") else "-"
        out.append(f"| {r['stage']} | {r['shape']} | {fmt(r['ours_s'])} | {r['baseline'] or '-'} | "
                   f"{fmt(r['baseline_s'])} | {fmt(r['ratio'], 2)} | {fmt(r['tflop'], 1)} | {fmt(r['ours_tflops'], 1)} | "
                   f"{share} | {fmt(r['baseline_tflops'], 1)} | {r.get('note', '')} |")
    return out


def memory_table(rows):
    out = ["| stage | shape | ours measured peak GiB | ours above the stage's lowest GiB | ours planner peak GiB "
           "| baseline | baseline peak GiB | baseline above its weights GiB |",
           "|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['stage']} | {r['shape']} | {fmt(r.get('ours_gib'), 2)} | {fmt(r.get('ours_above_gib'), 2)} | "
                   f"{fmt(r.get('planner_gib'), 2)} | {r.get('baseline') or '-'} | {fmt(r.get('baseline_gib'), 2)} | "
                   f"{fmt(r.get('baseline_above_gib'), 2)} |")
    return out


def check(name, value, limit, ok):
    if value is None or limit is None:
        return {"target": name, "value": value, "limit": limit, "status": "not measured"}
    return {"target": name, "value": value, "limit": limit, "status": "PASS" if ok(value, limit) else "FAIL"}


def targets(rows, mem_rows, stream):
    """The targets of issue 8, each against numbers measured in this run."""
    def find(stage, shape, baseline):
        for r in rows:
            if r["stage"] == stage and r["shape"] == shape and (baseline is None or (r["baseline"] or "").startswith(baseline)):
                return r
        return None

    def ratio(stage, shape, baseline):
        r = find(stage, shape, baseline)
        return r["ratio"] if r else None

    le = lambda v, lim: v <= lim
    lt = lambda v, lim: v < lim
    out = [check("DiT step 1024x1024 / DiffSynth eager <= 0.67", ratio("DiT step", "1024x1024", "diffsynth"), 0.67, le),
           check("DiT step 512x512 / DiffSynth eager < 1", ratio("DiT step", "512x512", "diffsynth"), 1.0, lt),
           check("DiT step 1456x1456 / DiffSynth eager < 1", ratio("DiT step", "1456x1456", "diffsynth"), 1.0, lt),
           check("stretch: DiT step 1024x1024 / moss_ref torch.compile (blocks) < 1",
                 ratio("DiT step", "1024x1024", COMPILED_BLOCKS), 1.0, lt),
           check("text encoder 64 tokens / transformers < 1", ratio("text encoder", "64 tokens", "transformers"), 1.0, lt),
           check("text encoder 512 tokens / transformers < 1", ratio("text encoder", "512 tokens", "transformers"), 1.0, lt),
           check("VAE decode 1024x1024 / diffusers < 1", ratio("VAE decode", "1024x1024", "diffusers"), 1.0, lt)]
    vae_mem = next((m for m in mem_rows if m["stage"] == "VAE decode" and m["shape"] == "1024x1024"), None)
    out.append(check("VAE decode 1024x1024: peak above its weights <= 1.6 GiB (measured, above the window's lowest)",
                     vae_mem.get("ours_above_gib") if vae_mem else None, 1.6, le))
    out.append(check("streamed DiT (2 resident blocks) / resident step <= 1.05",
                     stream.get("ratio") if stream else None, 1.05, le))
    return out


COMPILED_MODEL = "moss_ref compile (model)"
COMPILED_BLOCKS = "moss_ref compile (blocks)"
ISSUE19_LIMIT = 0.95


def compiled_name(scope, mode):
    """The row name of moss_ref under torch.compile: the default mode keeps the plain name the
    targets look for; another mode is named beside the scope."""
    return f"moss_ref compile ({scope})" if mode in (None, "", "default") else f"moss_ref compile ({scope}, {mode})"


def targets_issue19(rows, sizes):
    """Issue 19: at every size, our DiT step at most 0.95 of whole-model torch.compile's
    (default mode), from this report's rows; the blocks-compiled ratio is given beside it.
    A row whose two sides came from different processes carries that in its note, and the
    target says so."""
    out = []
    for size in sizes:
        shape = f"{size}x{size}"
        model = next((r for r in rows if r["stage"] == "DiT step" and r["shape"] == shape
                      and r["baseline"] == COMPILED_MODEL), None)
        blocks = next((r for r in rows if r["stage"] == "DiT step" and r["shape"] == shape
                       and r["baseline"] == COMPILED_BLOCKS), None)
        t = check(f"DiT step {shape} / {COMPILED_MODEL} <= {ISSUE19_LIMIT}", model["ratio"] if model else None,
                  ISSUE19_LIMIT, lambda v, lim: v <= lim)
        t["beside"] = {"blocks_ratio": blocks["ratio"] if blocks else None}
        if model and "separate processes" in (model.get("note") or ""):
            t["target"] += " (two processes)"
        out.append(t)
    return out


def target_line(t):
    line = f"- {t['status']}: {t['target']}: {fmt(t['value'], 3)}"
    if "beside" in t:
        line += f" (beside it, / {COMPILED_BLOCKS}: {fmt(t['beside'].get('blocks_ratio'), 3)})"
    return line


FIRST_IMAGE_IMPLS = {"ours": "moss-infer-hip (one process)",
                     "diffsynth": "DiffSynth path: MOSSImageDiT eager + transformers TE + diffusers VAE",
                     "compiled": "moss_ref, torch.compile whole model (compile included, fresh inductor cache)"}


def first_image_table(fi):
    """The first-image rows: wall seconds from process start to a written PNG, the parts where
    the process reports them, and ours / theirs in the same cache state."""
    from mossbench.first_image import ratios
    rows = fi.get("rows") or {}
    rat = ratios(rows)
    out = ["| cache | implementation | wall s (start to PNG) | load s | text encoder s | denoise s | decode s "
           "| ours / this: wall | load | text encoder | denoise | decode | note |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for cache, by_impl in rows.items():
        for impl, r in by_impl.items():
            p = r.get("parts") or {}
            q = (rat.get(cache) or {}).get(impl) or {}
            note = r.get("error") or ""
            if r.get("from"):
                note = (note + "; " if note else "") + f"from {r['from']}"
            if impl == "compiled" and p.get("first_step_s") is not None:
                note = (note + "; " if note else "") + f"first step (compile) {p['first_step_s']:.1f} s"
                if (r.get("compile") or {}).get("unique_graphs") is not None:
                    note += f", {r['compile']['unique_graphs']} graphs compiled in all"  # no per-step recompiles
            out.append(f"| {cache} | {FIRST_IMAGE_IMPLS.get(impl, impl)} | {fmt(r.get('wall_s'), 2)} | "
                       f"{fmt(p.get('load_s'), 2)} | {fmt(p.get('text_encoder_s'), 2)} | {fmt(p.get('denoise_s'), 2)} | "
                       f"{fmt(p.get('decode_s'), 2)} | {fmt(q.get('wall'), 3)} | {fmt(q.get('load'), 3)} | "
                       f"{fmt(q.get('text_encoder'), 3)} | {fmt(q.get('denoise'), 3)} | {fmt(q.get('decode'), 3)} | "
                       f"{note} |")
    return out


def write(results, lines, results_dir, stem, copy_to=None):
    paths = []
    for d in [results_dir] + ([copy_to] if copy_to else []):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, stem + ".json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
        with open(os.path.join(d, stem + ".md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        paths += [os.path.join(d, stem + ".json"), os.path.join(d, stem + ".md")]
    return paths
