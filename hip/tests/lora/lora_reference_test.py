"""LoRAs against an independent PyTorch merge (docs/loras.md), on the tiny model.

1. Each format is written by this script into a LoRA file, and merged two ways: by the engine
   (`moss-check lora-merge`, the merge --lora runs) and here: PEFT files by peft itself
   (get_peft_model + save_pretrained + merge_and_unload on moss_ref.py's reference DiT in fp32),
   the others from the formulas kohya and LyCORIS document (dW = up @ down * alpha/rank; LoHa
   (w1a @ w1b) * (w2a @ w2b); LoKr kron(w1, w2); full deltas as they are), then rounded once to
   bf16. Every merged tensor must equal the reference within one bf16 step (the fp32 sums'
   order may flip a rounding: at most 2% of a tensor's values), every other tensor bit for bit.
2. The engine's image with --lora equals, bit for bit (latents and pixels), the image from a copy
   of the model folder whose weights were merged offline (moss-check lora-merge's files); the
   PNG record lists the LoRA with its hash; --from-png replay reproduces it; a jobs file switching
   between LoRA sets and none gives each set's image, the base image restored bit for bit.
Needs torch, peft and safetensors (PyPI; CI installs them into $MOSSINFER_CI_PYTHON): exit 77
(skipped) without them. Usage: lora_reference_test.py BINARY MOSS_CHECK MODEL_DIR MOSS_REF"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))
try:
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file, save_file
except ImportError as e:
    print(f"skipped: {e} (pip install torch peft safetensors)")
    sys.exit(77)

BIN, CHECK, MODEL, REF = sys.argv[1:5]
failures = []


def check(ok, what, detail=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not detail else f": {detail}"))
    if not ok:
        failures.append(what)


def load_ref_module():
    spec = importlib.util.spec_from_file_location("moss_ref", REF)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bf16(t):
    return t.to(torch.bfloat16)


def rnd(gen, *shape, scale=0.05):
    # Factors rounded to bf16 first: the file holds bf16 and both merges read the same values.
    return bf16(torch.randn(*shape, generator=gen) * scale).float()


DIT = load_file(f"{MODEL}/transformer/diffusion_pytorch_model.safetensors")
TE = load_file(f"{MODEL}/text_encoder/model.safetensors")


def engine_merge(work, loras):
    out = os.path.join(work, "merged")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(f"{out}/transformer")
    os.makedirs(f"{out}/text_encoder")
    args = [CHECK, "lora-merge", "--model", MODEL, "--out", out]
    for path, weight in loras:
        args += ["--lora", f"{path}:{weight}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"lora-merge failed: {r.stdout}{r.stderr}")
    return (load_file(f"{out}/transformer/diffusion_pytorch_model.safetensors"),
            load_file(f"{out}/text_encoder/model.safetensors"))


def compare(name, got, want_changed, base):
    """got: the engine's tensors; want_changed: name -> reference bf16 tensor; base: the originals."""
    ok = set(got) == set(base)
    worst = ""
    for key, b in base.items():
        g = got.get(key)
        if g is None or g.dtype != b.dtype or g.shape != b.shape:
            ok, worst = False, f"{key}: missing or reshaped"
            continue
        if key not in want_changed:
            if not torch.equal(g.view(torch.int16), b.view(torch.int16)):
                ok, worst = False, f"{key}: changed though no LoRA targets it"
            continue
        w = want_changed[key]
        diff = (g.float() - w.float()).abs()
        # one bf16 step at the reference value: the spacing of its binade
        step = torch.ldexp(torch.ones_like(w.float()), torch.frexp(w.float()).exponent - 8)
        off = int((diff > 0).sum())
        if bool((diff > step * 1.001).any()) or off > max(1, w.numel() // 50):
            ok, worst = False, f"{key}: {off} of {w.numel()} values differ, max {float(diff.max()):.3g}"
        if torch.equal(w.view(torch.int16), b.view(torch.int16)):
            ok, worst = False, f"{key}: the reference merge left it unchanged (a test without effect)"
    check(ok, f"{name}: {len(want_changed)} merged tensors within one bf16 step of the reference, "
              f"{len(base) - len(want_changed)} others bit-identical" + (f" ({worst})" if worst else ""))


def formula_merge(base, deltas):
    """deltas: list of (target, coef, dW fp32) in order; W' = bf16(W + sum coef*dW) in fp32."""
    acc = {}
    for target, coef, dw in deltas:
        acc.setdefault(target, base[target].float().clone())
        acc[target] += coef * dw
    return {k: bf16(v) for k, v in acc.items()}


def peft_case(work, gen):
    ref = load_ref_module()
    cfg = json.load(open(f"{MODEL}/transformer/config.json"))
    dit = ref.MossDiT(**{k: v for k, v in cfg.items() if not k.startswith("_")})
    missing, unexpected = dit.load_state_dict({k: v.float() for k, v in DIT.items()}, strict=False)
    check(not missing, f"moss_ref.MossDiT loads the tiny DiT (missing {missing})")
    targets = ["layers.0.proj.q", "layers.1.proj.ffn_down", "text_embedder.blocks.0.qkv",
               "shared_block_modulation", "final_linear_video", "time_embedding.2"]
    model = get_peft_model(dit, LoraConfig(r=4, lora_alpha=8, target_modules=targets, init_lora_weights=False))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_" in n:
                p.copy_(rnd(gen, *p.shape, scale=0.1))
    folder = os.path.join(work, "peft_style")
    model.save_pretrained(folder, safe_serialization=True)
    merged = model.merge_and_unload().state_dict()
    want = {f"{t}.weight": bf16(merged[f"{t}.weight"]) for t in targets}
    got_dit, got_te = engine_merge(work, [(f"{folder}/adapter_model.safetensors", 1)])
    compare("PEFT (peft's own files and merge_and_unload)", got_dit, want, DIT)
    compare("PEFT: text encoder untouched", got_te, {}, TE)


def formula_cases(work, gen):
    r = 4
    cases = []
    # kohya: lora_unet_ names with dots as underscores, alpha
    d, u = rnd(gen, r, 128), rnd(gen, 128, r)
    cases.append(("kohya", {"lora_unet_layers_2_proj_v.lora_down.weight": d, "lora_unet_layers_2_proj_v.lora_up.weight": u,
                            "lora_unet_layers_2_proj_v.alpha": torch.tensor(2.0)},
                  0.7, [("layers.2.proj.v.weight", 2.0 / r, u @ d)], "dit"))
    # ComfyUI: diffusion_model.<official name>.lora_up/down, no alpha (scale 1)
    d, u = rnd(gen, r, 128), rnd(gen, 256, r)
    cases.append(("ComfyUI", {"diffusion_model.video_head_modulation.lora_down.weight": d,
                              "diffusion_model.video_head_modulation.lora_up.weight": u},
                  -0.5, [("video_head_modulation.weight", 1.0, u @ d)], "dit"))
    # LyCORIS LoHa
    w1a, w1b, w2a, w2b = rnd(gen, 128, r, scale=0.3), rnd(gen, r, 256, scale=0.3), rnd(gen, 128, r, scale=0.3), rnd(gen, r, 256, scale=0.3)
    cases.append(("LyCORIS LoHa", {"lycoris_layers_3_proj_ffn_down.hada_w1_a": w1a, "lycoris_layers_3_proj_ffn_down.hada_w1_b": w1b,
                                   "lycoris_layers_3_proj_ffn_down.hada_w2_a": w2a, "lycoris_layers_3_proj_ffn_down.hada_w2_b": w2b,
                                   "lycoris_layers_3_proj_ffn_down.alpha": torch.tensor(8.0)},
                  1.0, [("layers.3.proj.ffn_down.weight", 8.0 / r, (w1a @ w1b) * (w2a @ w2b))], "dit"))
    # LyCORIS LoKr: w1 full, w2 decomposed
    w1, w2a, w2b = rnd(gen, 4, 8, scale=0.3), rnd(gen, 128, r, scale=0.3), rnd(gen, r, 16, scale=0.3)
    cases.append(("LyCORIS LoKr", {"lycoris_layers_0_proj_ffn_up_gate.lokr_w1": w1,
                                   "lycoris_layers_0_proj_ffn_up_gate.lokr_w2_a": w2a,
                                   "lycoris_layers_0_proj_ffn_up_gate.lokr_w2_b": w2b,
                                   "lycoris_layers_0_proj_ffn_up_gate.alpha": torch.tensor(4.0)},
                  0.9, [("layers.0.proj.ffn_up_gate.weight", 1.0, torch.kron(w1, w2a @ w2b))], "dit"))
    # full delta with a bias delta
    diff, diff_b = rnd(gen, 128, 256), rnd(gen, 128)
    cases.append(("full delta (.diff, .diff_b)", {"diffusion_model.text_embedder.proj.diff": diff,
                                                  "diffusion_model.text_embedder.proj.diff_b": diff_b},
                  1.0, [("text_embedder.proj.weight", 1.0, diff), ("text_embedder.proj.bias", 1.0, diff_b)], "dit"))
    # a fused proj.qkv LoRA over the separate q, k, v of the official files
    d, u = rnd(gen, r, 128), rnd(gen, 384, r)
    dw = u @ d
    cases.append(("fused proj.qkv (PEFT names)", {"transformer.layers.1.proj.qkv.lora_A.weight": d,
                                                  "transformer.layers.1.proj.qkv.lora_B.weight": u},
                  1.0, [(f"layers.1.proj.{x}.weight", 1.0, dw[i * 128:(i + 1) * 128]) for i, x in enumerate("qkv")], "dit"))
    # a text encoder LoRA (kohya lora_te_ names)
    d, u = rnd(gen, r, 256), rnd(gen, 512, r)
    cases.append(("text encoder (kohya lora_te_)", {"lora_te_layers_0_mlp_gate_proj.lora_down.weight": d,
                                                    "lora_te_layers_0_mlp_gate_proj.lora_up.weight": u},
                  1.0, [("model.language_model.layers.0.mlp.gate_proj.weight", 1.0, u @ d)], "te"))
    files = []
    for name, tensors, weight, deltas, part in cases:
        path = os.path.join(work, name.split()[0].replace("(", "") + f"_{len(files)}.safetensors")
        save_file({k: bf16(v) if v.dim() else v.float() for k, v in tensors.items()}, path)
        files.append((path, weight, deltas, part))
        got_dit, got_te = engine_merge(work, [(path, weight)])
        scaled = [(t, weight * s, dw) for t, s, dw in deltas]
        if part == "dit":
            compare(name, got_dit, formula_merge(DIT, scaled), DIT)
            compare(name + ": text encoder untouched", got_te, {}, TE)
        else:
            compare(name, got_te, formula_merge(TE, scaled), TE)
    # Several at once, in order, two of them on the same tensor.
    first, second = files[0], files[5]
    got_dit, _ = engine_merge(work, [(first[0], first[1]), (second[0], -0.3)])
    scaled = [(t, first[1] * s, dw) for t, s, dw in first[2]] + [(t, -0.3 * s, dw) for t, s, dw in second[2]]
    compare("kohya then fused qkv (both on layers.x.proj.v)", got_dit, formula_merge(DIT, scaled), DIT)
    return files


def png_chunks(path):
    """The PNG's text chunks and its pixels."""
    from PIL import Image
    with Image.open(path) as im:
        im.load()
        return dict(im.text), im.tobytes()


def run(args, **kw):
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    r = subprocess.run([BIN] + args, capture_output=True, text=True, env=env, **kw)
    return r


def engine_cases(work, files):
    kohya, loha, qkv, te = files[0], files[2], files[5], files[6]
    common = ["--prompt", "a red apple", "--size", "32x32", "--steps", "2", "--cfg", "3", "--seed", "7", "--skip-layers", "1"]
    # The offline-merged folder: the tiny model with the engine's merged weights put in.
    merged_dir = os.path.join(work, "merged")
    engine_merge(work, [(kohya[0], kohya[1]), (loha[0], loha[1]), (te[0], te[1])])
    for part in ("model_index.json", "scheduler", "tokenizer", "vae"):
        os.symlink(os.path.abspath(f"{MODEL}/{part}"), f"{merged_dir}/{part}")
    for part in ("transformer", "text_encoder"):
        shutil.copy(f"{MODEL}/{part}/config.json", f"{merged_dir}/{part}/config.json")
    lora_args = ["--lora", f"{kohya[0]}:{kohya[1]}", "--lora", f"{loha[0]}:{loha[1]}", "--lora", f"{te[0]}:{te[1]}"]
    a = run(["--model", MODEL] + common + lora_args + ["-o", f"{work}/lora.png", "--latent-out", f"{work}/lora.npy"])
    b = run(["--model", merged_dir] + common + ["-o", f"{work}/offline.png", "--latent-out", f"{work}/offline.npy"])
    c = run(["--model", MODEL] + common + ["-o", f"{work}/base.png", "--latent-out", f"{work}/base.npy"])
    check(a.returncode == 0 and b.returncode == 0 and c.returncode == 0, "three host runs succeed",
          a.stderr[-400:] + b.stderr[-400:] + c.stderr[-400:])
    if failures:
        return
    same = open(f"{work}/lora.npy", "rb").read() == open(f"{work}/offline.npy", "rb").read()
    meta, pix_lora = png_chunks(f"{work}/lora.png")
    _, pix_offline = png_chunks(f"{work}/offline.png")
    check(same and pix_lora == pix_offline, "--lora image equals the offline-merged folder's image bit for bit (latents, pixels)")
    check(open(f"{work}/lora.npy", "rb").read() != open(f"{work}/base.npy", "rb").read(), "the LoRAs change the image")
    check("merged into 2 DiT tensors" in a.stderr and "merged into 1 text encoder tensors" in a.stderr,
          "the run reports what the merge changed", a.stderr[-600:])
    name = os.path.basename(kohya[0])[:-12]
    params, record = meta.get("parameters", ""), json.loads(meta.get("generation", "{}"))
    check(f'Lora hashes: "{name}: ' in params and "Lora weights:" in params, "A1111 parameters list Lora hashes")
    import hashlib
    want_hash = hashlib.sha256(open(kohya[0], "rb").read()).hexdigest()[:12]
    check([x.get("hash") for x in record.get("loras", [])][:1] == [want_hash] and len(record["loras"]) == 3,
          "the generation record lists the three LoRAs with their SHA-256 short hashes")
    # Replay: the record's LoRAs applied again, the same latents.
    r = run(["--model", MODEL, "--from-png", f"{work}/lora.png", "-o", f"{work}/replay.png", "--latent-out", f"{work}/replay.npy"])
    check(r.returncode == 0 and open(f"{work}/replay.npy", "rb").read() == open(f"{work}/lora.npy", "rb").read(),
          "--from-png replay re-applies the LoRAs: the same latents")
    # A jobs file: LoRA set, none (the base restored), the set again, another set.
    lines = [{"lora": [f"{kohya[0]}:{kohya[1]}", f"{loha[0]}:{loha[1]}", f"{te[0]}:{te[1]}"]}, {}, 
             {"lora": [f"{kohya[0]}:{kohya[1]}", f"{loha[0]}:{loha[1]}", f"{te[0]}:{te[1]}"]}, {"lora": [f"{qkv[0]}:1"]}, {}]
    with open(f"{work}/jobs.jsonl", "w") as f:
        for i, extra in enumerate(lines):
            f.write(json.dumps(dict({"prompt": "a red apple", "width": 32, "height": 32, "steps": 2, "cfg_scale": 3,
                                     "seed": 7, "skip_layers": [1], "output": f"{work}/job{i}.png"}, **extra)) + "\n")
    r = run(["--model", MODEL, "--jobs", f"{work}/jobs.jsonl"])
    check(r.returncode == 0, "a jobs file switching LoRA sets runs", r.stderr[-400:])
    if r.returncode == 0:
        pix = [png_chunks(f"{work}/job{i}.png")[1] for i in range(5)]
        _, pix_base = png_chunks(f"{work}/base.png")
        check(pix[0] == pix_lora and pix[2] == pix_lora, "jobs: the LoRA set's image, again after the base (bit for bit)")
        check(pix[1] == pix_base and pix[4] == pix_base, "jobs: without LoRAs the base image, restored bit for bit")
        check(pix[3] != pix_base and pix[3] != pix_lora, "jobs: another set, another image")
    # The hashes are computed beside the loads, for the record: the run says what it found, and a
    # replay whose LoRA file changed since (the same tensors, other bytes: another hash) still runs,
    # warns with both hashes, and records the file's hash now.
    check(f"loras: hashes {name} ({want_hash})" in a.stderr, "the run names the hashes it recorded", a.stderr[-600:])
    save_file(load_file(kohya[0]), kohya[0], metadata={"changed": "since the record"})
    new_hash = hashlib.sha256(open(kohya[0], "rb").read()).hexdigest()[:12]
    r = run(["--model", MODEL, "--from-png", f"{work}/lora.png", "-o", f"{work}/changed.png", "--latent-out",
             f"{work}/changed.npy"])
    changed = json.loads(png_chunks(f"{work}/changed.png")[0].get("generation", "{}")) if r.returncode == 0 else {}
    check(r.returncode == 0 and f"hash {new_hash}, the record's is {want_hash}" in r.stderr and
          [x.get("hash") for x in changed.get("loras", [])][:1] == [new_hash] and
          open(f"{work}/changed.npy", "rb").read() == open(f"{work}/lora.npy", "rb").read(),
          "a replay whose LoRA file changed warns with both hashes, records the new one, same latents", r.stderr[-600:])
    # Refusals before compute, with the exit status and no output.
    bad = os.path.join(work, "sdxl.safetensors")
    save_file({"lora_unet_input_blocks_4_1_proj_in.lora_down.weight": torch.zeros(4, 320, dtype=torch.bfloat16),
               "lora_unet_input_blocks_4_1_proj_in.lora_up.weight": torch.zeros(320, 4, dtype=torch.bfloat16)}, bad)
    r = run(["--model", MODEL] + common + ["--lora", bad, "-o", f"{work}/refused.png"])
    check(r.returncode == 2 and "UNet" in r.stderr and bad in r.stderr and not os.path.exists(f"{work}/refused.png"),
          "another model's LoRA: exit 2 naming the file and what it looks like, no output")
    r = run(["--model", MODEL] + common + ["--lora", f"{work}/absent.safetensors", "-o", f"{work}/refused.png"])
    check(r.returncode == 2 and "absent.safetensors" in r.stderr, "a missing LoRA file: exit 2 naming it")


def main():
    gen = torch.Generator().manual_seed(1234)
    work = tempfile.mkdtemp()
    try:
        peft_case(work, gen)
        files = formula_cases(work, gen)
        engine_cases(work, files)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


main()
