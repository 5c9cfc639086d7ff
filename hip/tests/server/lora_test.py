#!/usr/bin/env python3
"""LoRAs on the server (issue 47, docs/loras.md), standard library only: GET /sdapi/v1/loras lists
--lora-dir with A1111's fields, <lora:NAME:WEIGHT> tags apply (the CLI's --lora image, pixel for
pixel), switching sets and back to none restores the base image bit for bit, an unknown name is
a 422 naming it, tags in the negative prompt are dropped with a note, info carries Lora hashes,
POST /sdapi/v1/refresh-loras finds a new file, a body may not name LoRA files.
Usage: lora_test.py BINARY MODEL_DIR"""
import hashlib
import json
import os
import random
import struct
import tempfile

from harness import run_server_test, b64png, cli_png, png_pixels

LORA_DIR = tempfile.mkdtemp()
WORK = tempfile.mkdtemp()


def write_lora(path, rank, seed, targets):
    """A PEFT-named LoRA (F32) on `targets` ({module: (out, in)}) of the tiny DiT."""
    rng = random.Random(seed)
    tensors = {}
    for module, (out, inp) in targets.items():
        tensors[f"transformer.{module}.lora_A.weight"] = ([rank, inp], [rng.gauss(0, 0.2) for _ in range(rank * inp)])
        tensors[f"transformer.{module}.lora_B.weight"] = ([out, rank], [rng.gauss(0, 0.2) for _ in range(out * rank)])
    header, data = {"__metadata__": {"ss_output_name": os.path.basename(path)}}, b""
    for name, (shape, values) in sorted(tensors.items()):
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


STYLE = os.path.join(LORA_DIR, "style.safetensors")
write_lora(STYLE, 4, 1, {"layers.0.proj.q": (128, 128), "layers.1.proj.ffn_down": (128, 256)})
os.makedirs(os.path.join(LORA_DIR, "sub"))
FIX = os.path.join(LORA_DIR, "sub", "fix.safetensors")
write_lora(FIX, 2, 2, {"video_embedder": (128, 128)})


def test(c, srv, binary, model):
    status, listed, _ = srv.request("GET", "/sdapi/v1/loras")
    names = sorted(x.get("name") for x in listed or [])
    c.check("loras-listed", status == 200 and names == ["fix", "style"], listed)
    entry = next((x for x in listed or [] if x.get("name") == "style"), {})
    c.check("loras-a1111-fields", entry.get("alias") == "style" and entry.get("path") == "style.safetensors" and
            entry.get("metadata", {}).get("ss_output_name") == "style.safetensors", entry)

    def image(prompt, negative=""):
        status, body, raw = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": prompt, "negative_prompt": negative, "seed": 5})
        if status != 200:
            return status, body, None, {}
        return status, body, png_pixels(b64png(body["images"][0])), json.loads(body["info"])

    _, _, base, _ = image("a red apple")
    status, _, styled, info = image("a red apple <lora:style:0.8>")
    c.check("tag-applies", status == 200 and styled is not None and styled != base, status)
    want = cli_png(binary, model, WORK, "--prompt", "a red apple ", "--seed", "5", "--lora", STYLE + ":0.8")
    c.check("tag-equals-cli-lora", styled == png_pixels(want))
    short = hashlib.sha256(open(STYLE, "rb").read()).hexdigest()[:12]
    c.check("info-lora-hashes", info.get("extra_generation_params", {}).get("Lora hashes") == f"style: {short}", info.get("extra_generation_params"))
    _, _, both, _ = image("a red apple <lora:style:0.8> <lora:fix:-1>")
    c.check("two-loras-another-image", both is not None and both not in (base, styled))
    _, _, back, _ = image("a red apple")
    c.check("none-restores-base-bit-for-bit", back == base)
    _, _, again, _ = image("a red apple <lora:style:0.8>")
    c.check("set-again-same-image", again == styled)
    _, _, blurry, _ = image("a red apple", "blurry ")
    status, body, neg, info = image("a red apple", "blurry <lora:style:1>")
    c.check("negative-tag-ignored-with-note", status == 200 and neg == blurry and "negative prompt" in info.get("lora_note", ""),
            info.get("lora_note"))
    status, body, _, _ = image("a red apple <lora:nope:1>")
    c.check("unknown-name-422", status == 422 and body.get("field") == "prompt" and "'nope'" in body.get("error", ""), body)
    status, body, _, _ = image("a red apple <lora:style:x>")
    c.check("bad-weight-422", status == 422 and "weight" in body.get("error", ""), body)
    status, body, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", "lora": [STYLE]})
    c.check("body-file-refused", status == 422 and body.get("field") == "lora", body)
    write_lora(os.path.join(LORA_DIR, "late.safetensors"), 2, 3, {"layers.2.proj.v": (128, 128)})
    status, _, _ = srv.request("POST", "/sdapi/v1/refresh-loras")
    _, listed, _ = srv.request("GET", "/sdapi/v1/loras")
    c.check("refresh-finds-new", status == 200 and "late" in [x["name"] for x in listed], listed)
    # A LoRA that does not fit this model: 422 naming the file's tensor, before any compute.
    with open(os.path.join(LORA_DIR, "sdxl.safetensors"), "wb") as f:
        text = json.dumps({"lora_unet_input_blocks_1_proj_in.lora_down.weight": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]},
                           "lora_unet_input_blocks_1_proj_in.lora_up.weight": {"dtype": "F32", "shape": [2, 1], "data_offsets": [8, 16]}}).encode()
        f.write(struct.pack("<Q", len(text)) + text + bytes(16))
    srv.request("POST", "/sdapi/v1/refresh-loras")
    status, body, _, _ = image("a red apple <lora:sdxl:1>")
    c.check("other-model-lora-422", status == 422 and "UNet" in body.get("error", ""), body)


run_server_test(test, extra=("--lora-dir", LORA_DIR))
