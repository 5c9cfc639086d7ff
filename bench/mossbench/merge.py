"""Putting the numbers of several benchmark processes into one report (issue 19: our runs and
the eager baselines fit one device call, the whole-model torch.compile anchors another).

The current run's own numbers always win, except a failed one (an entry with an "error", e.g. a
first image that timed out) against a measurement of the same entry; an earlier results file
otherwise only fills what the current run did not measure. Every filled entry is recorded in
results["provenance"] (path -> label), so a row whose two sides come from different processes
says so, and the setups are compared: a different GPU, driver, engine build or DiT setting is
listed as a mismatch in the report."""
import json
import os

SECTIONS = ("ours", "torch", "stream", "first_image", "prompts", "model_facts")
# What must agree for a ratio across two processes to be like with like.
SETUP_ENV = ("gpu", "driver", "engine_version", "git", "torch")
SETUP_ARGS = ("prompt_tokens", "cfg", "skip_layers", "dit_layers", "te_layers")


def label_of(path, results):
    return f"{os.path.basename(path)} ({results.get('date', 'no date')})"


def load(path):
    with open(path) as f:
        return json.load(f)


def failed(entry):
    """An entry that records a failed attempt (a timed-out or crashed process) instead of a number."""
    return isinstance(entry, dict) and bool(entry.get("error"))


def _fill(dst, src, path, provenance, label, superseded):
    for k, v in src.items():
        p = path + (str(k),)
        if k not in dst:
            dst[k] = v
            provenance["/".join(p)] = label
        elif failed(dst[k]) and isinstance(v, dict) and not failed(v):
            superseded.append(f"{'/'.join(p)}: {dst[k]['error']} in {_label_at(provenance, p) or 'this run'}, "
                              f"measured in {label}")
            dst[k] = v
            provenance["/".join(p)] = label
        elif isinstance(dst[k], dict) and isinstance(v, dict):
            _fill(dst[k], v, p, provenance, label, superseded)


def merge_into(current, earlier, label):
    """Fills current's measurement sections from earlier's (current wins), records what came
    from where, and appends earlier's errors and skipped phases under its label. Returns the
    setup mismatches between the two."""
    prov = current.setdefault("provenance", {})
    for sec in SECTIONS:
        src = earlier.get(sec)
        if src is None:
            continue
        if sec not in current or current[sec] in (None, {}):
            current[sec] = src
            prov[sec] = label
        elif isinstance(src, dict) and isinstance(current[sec], dict):
            _fill(current[sec], src, (sec,), prov, label, current.setdefault("superseded", []))
    for k, v in (earlier.get("errors") or {}).items():
        current.setdefault("errors", {}).setdefault(f"{k} [{label}]", v)
    current.setdefault("skipped", []).extend(f"{s} [{label}]" for s in earlier.get("skipped") or [])
    mism = mismatches(current, earlier)
    current.setdefault("merged_from", []).append({"label": label, "date": earlier.get("date"),
                                                  "env": earlier.get("env"), "mismatches": mism,
                                                  "elapsed_s": earlier.get("elapsed_s"),
                                                  "model_facts": earlier.get("model_facts"),
                                                  "complete": earlier.get("complete")})
    return mism


def _first_line(v):
    return str(v).splitlines()[0] if v else v


def mismatches(a, b):
    """['what: a vs b'] for each setup fact that differs between two results."""
    out = []
    ea, eb = a.get("env") or {}, b.get("env") or {}
    for k in SETUP_ENV:
        va, vb = _first_line(ea.get(k)), _first_line(eb.get(k))
        if va is not None and vb is not None and va != vb:
            out.append(f"{k}: {va} vs {vb}")
    aa, ab = a.get("args") or {}, b.get("args") or {}
    for k in SETUP_ARGS:
        if k in aa and k in ab and aa[k] != ab[k]:
            out.append(f"{k}: {aa[k]} vs {ab[k]}")
    fa, fb = (a.get("model_facts") or {}).get("dit_config"), (b.get("model_facts") or {}).get("dit_config")
    if fa and fb and fa != fb:
        out.append("DiT config differs")
    return out


def source_of(results, *path):
    """The label of the file an entry came from (the longest recorded prefix), None: this run."""
    return _label_at(results.get("provenance") or {}, path)


def _label_at(provenance, path):
    parts = [str(p) for p in path]
    for n in range(len(parts), 0, -1):
        hit = provenance.get("/".join(parts[:n]))
        if hit:
            return hit
    return None


def facts_for(results, *path):
    """The model facts (FLOP inputs) of the file an entry came from: the text encoder rows of a
    2-layer model must not be counted with a 32-layer one's FLOPs. This run's own facts when the
    entry is its own or its file recorded none."""
    label = source_of(results, *path)
    for m in results.get("merged_from") or []:
        if label is not None and m.get("label") == label and m.get("model_facts"):
            return m["model_facts"]
    return results.get("model_facts") or {}


def union_list(values):
    """Comma lists of ints, joined in first-seen order ('512,1024' + '1024,1456' -> '512,1024,1456')."""
    seen = []
    for v in values:
        for x in str(v or "").split(","):
            x = x.strip()
            if x and int(x) not in seen:
                seen.append(int(x))
    return ",".join(str(x) for x in seen)
