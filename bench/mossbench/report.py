"""The results table, the issue's targets and the dated result files."""
import json
import os


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def speed_row(stage, shape, ours_s, baseline, baseline_s, flops, peak_tflops, note=""):
    r = {"stage": stage, "shape": shape, "ours_s": ours_s, "baseline": baseline, "baseline_s": baseline_s,
         "ratio": ours_s / baseline_s if ours_s and baseline_s else None, "tflop": flops / 1e12 if flops else None,
         "note": note}
    r["ours_tflops"] = flops / ours_s / 1e12 if flops and ours_s else None
    r["baseline_tflops"] = flops / baseline_s / 1e12 if flops and baseline_s else None
    r["ours_share_of_peak"] = r["ours_tflops"] / peak_tflops if r["ours_tflops"] and peak_tflops else None
    r["baseline_share_of_peak"] = r["baseline_tflops"] / peak_tflops if r["baseline_tflops"] and peak_tflops else None
    return r


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
    out = ["| stage | shape | ours measured peak GiB | ours above the stage's start GiB | ours planner peak GiB "
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
           check("stretch: DiT step 1024x1024 / moss_ref torch.compile < 1",
                 ratio("DiT step", "1024x1024", "moss_ref compile"), 1.0, lt),
           check("text encoder 64 tokens / transformers < 1", ratio("text encoder", "64 tokens", "transformers"), 1.0, lt),
           check("text encoder 512 tokens / transformers < 1", ratio("text encoder", "512 tokens", "transformers"), 1.0, lt),
           check("VAE decode 1024x1024 / diffusers < 1", ratio("VAE decode", "1024x1024", "diffusers"), 1.0, lt)]
    vae_mem = next((m for m in mem_rows if m["stage"] == "VAE decode" and m["shape"] == "1024x1024"), None)
    out.append(check("VAE decode 1024x1024: peak above its weights <= 1.6 GiB (measured, window start)",
                     vae_mem.get("ours_above_gib") if vae_mem else None, 1.6, le))
    out.append(check("streamed DiT (2 resident blocks) / resident step <= 1.05",
                     stream.get("ratio") if stream else None, 1.05, le))
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
