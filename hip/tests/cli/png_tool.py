#!/usr/bin/env python3
"""PNG and progress checks for the frontend tests (standard library only).

  png_tool.py same-pixels A.png B.png   exit 0 when both decode to the same pixels
  png_tool.py same-record A.png B.png   exit 0 when both records ask for the same generation
  png_tool.py text FILE.png KEY         print the text chunk KEY
  png_tool.py size FILE.png WxH         exit 0 when the image has that size
  png_tool.py progress FILE.jsonl N     exit 0 when FILE holds the JSON events of an N-image run
  png_tool.py set-size IN OUT W H       OUT: IN with its header claiming WxH (pixels unchanged)
  png_tool.py set-record IN OUT JSON    OUT: IN with its generation record replaced by JSON
  png_tool.py set-field IN OUT K V      OUT: IN with the record's field K set to the JSON value V
  png_tool.py damage-record IN OUT      OUT: IN with one byte of the record flipped (its CRC kept)
  png_tool.py cut IN OUT CHUNK          OUT: IN cut in the middle of its first CHUNK (e.g. IHDR)
"""
import json
import struct
import sys
import zlib


def chunks(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos = 8
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        yield data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n


def pixels(path):
    idat = b"".join(c for k, c in chunks(path) if k == b"IDAT")
    ihdr = next(c for k, c in chunks(path) if k == b"IHDR")
    return ihdr[:8], zlib.decompress(idat)  # the filtered rows: equal rows decode equal


def text(path, key):
    for k, c in chunks(path):
        if k == b"tEXt":
            name, value = c.split(b"\0", 1)
            if name.decode() == key:
                return value.decode("latin-1")
        if k == b"iTXt":
            name, rest = c.split(b"\0", 1)
            if name.decode() == key:
                rest = rest[2:]  # compression flag and method
                rest = rest.split(b"\0", 2)[2]  # language tag, translated keyword
                return rest.decode("utf-8")
    raise SystemExit(f"{path}: no text chunk {key}")


SETTINGS = ["prompt", "negative", "seed", "steps", "steps_run", "cfg", "shift", "skip_layers", "width", "height",
            "max_seq", "tier", "model"]


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def rebuild(path, edit):
    """The PNG at path with each chunk (kind, data) replaced by edit(kind, data) (None drops it)."""
    out = b"\x89PNG\r\n\x1a\n"
    for kind, data in chunks(path):
        new = edit(kind, data)
        if new is not None:
            out += new
    return out


def is_record(kind, data):
    return kind in (b"tEXt", b"iTXt") and data.split(b"\0", 1)[0] == b"generation"


def record_chunk(value):
    return chunk(b"iTXt", b"generation\0\0\0\0\0" + value.encode())


def main():
    cmd = sys.argv[1]
    if cmd == "same-pixels":
        a, b = pixels(sys.argv[2]), pixels(sys.argv[3])
        if a != b:
            raise SystemExit(f"{sys.argv[2]} and {sys.argv[3]}: different images")
    elif cmd == "same-record":
        a, b = (json.loads(text(p, "generation")) for p in sys.argv[2:4])
        diff = [k for k in SETTINGS if a.get(k) != b.get(k)]
        if diff:
            raise SystemExit(f"records differ in {diff}: {[a.get(k) for k in diff]} vs {[b.get(k) for k in diff]}")
    elif cmd == "text":
        print(text(sys.argv[2], sys.argv[3]))
    elif cmd == "size":
        w, h = struct.unpack(">II", pixels(sys.argv[2])[0])
        if f"{w}x{h}" != sys.argv[3]:
            raise SystemExit(f"{sys.argv[2]}: {w}x{h}, expected {sys.argv[3]}")
    elif cmd == "progress":
        events = [json.loads(line) for line in open(sys.argv[2])]
        kinds = [e["event"] for e in events]
        images = int(sys.argv[3])
        assert kinds.count("image") == images, kinds
        assert kinds[-1] == "done", kinds
        steps = [e for e in events if e["event"] == "step"]
        assert steps and all(e["stage"] == "denoise" and 1 <= e["step"] <= e["steps"] for e in steps), steps
        assert all(e["seconds"] >= 0 and e["eta"] >= 0 for e in steps), steps
        stages = [e["stage"] for e in events if e["event"] == "stage"]
        assert stages.count("text_encoder") == images and stages.count("vae") == images, stages
        done = events[-1]
        assert len(done["paths"]) == images and len(done["seeds"]) == images, done
        image = [e for e in events if e["event"] == "image"][0]
        assert {"seed", "paths", "timings"} <= image.keys() and "total" in image["timings"], image
    elif cmd == "set-size":
        w, h = int(sys.argv[4]), int(sys.argv[5])
        out = rebuild(sys.argv[2], lambda k, d: chunk(k, struct.pack(">II", w, h) + d[8:]) if k == b"IHDR"
                      else chunk(k, d))
        open(sys.argv[3], "wb").write(out)
    elif cmd == "set-record":
        out = rebuild(sys.argv[2], lambda k, d: record_chunk(sys.argv[4]) if is_record(k, d) else chunk(k, d))
        open(sys.argv[3], "wb").write(out)
    elif cmd == "set-field":
        record = json.loads(text(sys.argv[2], "generation"))
        record[sys.argv[4]] = json.loads(sys.argv[5])
        value = json.dumps(record)
        out = rebuild(sys.argv[2], lambda k, d: record_chunk(value) if is_record(k, d) else chunk(k, d))
        open(sys.argv[3], "wb").write(out)
    elif cmd == "damage-record":
        def damage(k, d):
            c = chunk(k, d)
            if not is_record(k, d):
                return c
            c = bytearray(c)
            c[-6] ^= 0x20  # inside the value, before the CRC
            return bytes(c)
        open(sys.argv[3], "wb").write(rebuild(sys.argv[2], damage))
    elif cmd == "cut":
        data = open(sys.argv[2], "rb").read()
        at = data.index(sys.argv[4].encode())
        open(sys.argv[3], "wb").write(data[:at + 6])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
