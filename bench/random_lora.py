#!/usr/bin/env python3
"""A PEFT-named LoRA on every 2-D weight of a DiT folder's safetensors files, bf16 factors of a
small random pattern (the GPU bench scripts' stand-in for a real LoRA: bench/h200_lora.sh,
bench/h200_int8_lora.sh). Standard library only.

Usage: random_lora.py TRANSFORMER_DIR OUT.safetensors RANK
"""
import json, os, random, struct, sys
folder, out, rank = sys.argv[1], sys.argv[2], int(sys.argv[3])
shapes = {}
for name in sorted(os.listdir(folder)):
    if name.endswith(".safetensors"):
        with open(os.path.join(folder, name), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            for k, v in json.loads(f.read(n)).items():
                if k != "__metadata__" and k.endswith(".weight") and len(v["shape"]) == 2:
                    shapes[k[:-7]] = v["shape"]
rng = random.Random(47)
pattern = b"".join(struct.pack("<H", struct.unpack("<I", struct.pack("<f", rng.gauss(0, 0.01)))[0] >> 16) for _ in range(1 << 16))
header, sizes = {}, []
offset = 0
for module, (o, i) in sorted(shapes.items()):
    for suffix, shape in (("lora_A.weight", [rank, i]), ("lora_B.weight", [o, rank])):
        nbytes = shape[0] * shape[1] * 2
        header[f"transformer.{module}.{suffix}"] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + nbytes]}
        sizes.append(nbytes)
        offset += nbytes
text = json.dumps(header).encode()
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    for nbytes in sizes:
        full, rest = divmod(nbytes, len(pattern))
        f.write(pattern * full + pattern[:rest])
print(f"{len(shapes)} modules, rank {rank}, {offset / 2**20:.0f} MiB")
