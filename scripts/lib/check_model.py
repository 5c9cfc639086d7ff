#!/usr/bin/env python3
"""Checks a downloaded MOSS-Image folder before its first run (scripts/get_model.sh).

diffusers folder (sft, base): the files the program opens (model_index.json, the scheduler,
tokenizer and the three networks' configs) are present, and every weight file (one
*.safetensors per network, or the shards a *.safetensors.index.json lists) is whole: its
8-byte header length and JSON header read, every tensor's byte range inside the file, and the
file exactly as long as its header says (a cut-off download is named). comfy: the same header
checks on each single file. Prints one line per file, the total size, and on success the
transformer's block count (the --skip-layers values that exist). Exit 0 when all is well, 1
naming the first problem otherwise. Standard library only.
"""
import json
import os
import struct
import sys

DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
               "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
HEADER_LIMIT = 100 << 20  # what the program accepts (io/safetensors.cpp's cap is of this order)


class Problem(Exception):
    pass


def check_safetensors(path):
    """The file's size in bytes once its header and tensor ranges agree with it."""
    if not os.path.isfile(path):
        raise Problem(f"{path}: missing (or not a regular file)")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise Problem(f"{path}: {size} bytes, too short for a safetensors header (a cut-off download?)")
        (n,) = struct.unpack("<Q", head)
        if n > HEADER_LIMIT or 8 + n > size:
            raise Problem(f"{path}: header length {n} does not fit the file's {size} bytes (a cut-off download?)")
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise Problem(f"{path}: the header is not JSON ({e})")
    if not isinstance(header, dict):
        raise Problem(f"{path}: the header is not a JSON object")
    end = 0
    for name, t in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, stop = t["data_offsets"]
            elements = 1
            for d in t["shape"]:
                elements *= d
            width = DTYPE_BYTES[t["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise Problem(f"{path}: tensor {name}: malformed header entry")
        if stop - begin != elements * width or begin > stop:
            raise Problem(f"{path}: tensor {name}: its byte range does not match its shape and dtype")
        end = max(end, stop)
    if 8 + n + end != size:
        raise Problem(f"{path}: {size} bytes, its header describes {8 + n + end} (a cut-off or damaged download?)")
    return size


def weight_files(folder):
    """The weight files of one network's folder: the shards its index lists, or its single file."""
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    indexes = [n for n in names if n.endswith(".safetensors.index.json")]
    if indexes:
        with open(os.path.join(folder, indexes[0])) as f:
            shards = sorted(set(json.load(f).get("weight_map", {}).values()))
        if not shards:
            raise Problem(f"{folder}/{indexes[0]}: lists no shards")
        return [os.path.join(folder, s) for s in shards]
    single = [n for n in names if n.endswith(".safetensors")]
    if not single:
        raise Problem(f"{folder}: no *.safetensors weight file")
    return [os.path.join(folder, n) for n in single]


def check_diffusers(root):
    required = ["model_index.json", "scheduler/scheduler_config.json", "tokenizer/tokenizer.json",
                "text_encoder/config.json", "transformer/config.json", "vae/config.json"]
    for r in required:
        if not os.path.isfile(os.path.join(root, r)):
            raise Problem(f"{root}/{r}: missing")
    total = 0
    for net in ("text_encoder", "transformer", "vae"):
        for path in weight_files(os.path.join(root, net)):
            size = check_safetensors(path)
            total += size
            print(f"ok {os.path.relpath(path, root)} ({size / 2**30:.2f} GiB)")
    with open(os.path.join(root, "transformer/config.json")) as f:
        blocks = json.load(f).get("num_layers")
    return total, blocks


def check_files(root):
    total = 0
    paths = sorted(os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns if n.endswith(".safetensors"))
    if not paths:
        raise Problem(f"{root}: no *.safetensors file")
    for path in paths:
        size = check_safetensors(path)
        total += size
        print(f"ok {os.path.relpath(path, root)} ({size / 2**30:.2f} GiB)")
    return total, None


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("diffusers", "files"):
        print("usage: check_model.py diffusers|files DIR", file=sys.stderr)
        return 2
    try:
        total, blocks = (check_diffusers if sys.argv[1] == "diffusers" else check_files)(sys.argv[2])
    except (Problem, OSError, ValueError) as e:
        print(f"check: {e}", file=sys.stderr)
        return 1
    print(f"total {total / 2**30:.2f} GiB")
    if blocks is not None:
        print(f"blocks {blocks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
