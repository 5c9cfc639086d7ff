#!/usr/bin/env python3
"""Several engines (issue 32), on the host backend, where `--device 0,1` runs two host engines
(the indexes name no hardware; `--device all` is one engine): the CLI's --batch-count and --jobs
spread over them write the same files, byte for byte, as one engine; the server with two engines
runs two requests at once, and each image equals the CLI's whichever engine made it.
Usage: devices_test.py BINARY MODEL_DIR"""
import json
import os
import subprocess
import tempfile
import threading
import time

from harness import TINY_DEFAULTS, run_server_test, b64png, cli_png, png_pixels

ENV = dict(os.environ, MOSSINFER_BACKEND="host")


def run_cli(c, binary, model, name, args):
    r = subprocess.run([binary, "--model", model, *TINY_DEFAULTS, *args], capture_output=True, text=True, env=ENV,
                       timeout=300)
    c.check(f"{name}-runs", r.returncode == 0, r.stderr[-500:])
    return r


def files_of(folder):
    return {n: open(os.path.join(folder, n), "rb").read() for n in sorted(os.listdir(folder))}


def check_cli(c, binary, model):
    work = tempfile.mkdtemp()
    one, two, three = (os.path.join(work, d) for d in ("one", "two", "three"))
    for d in (one, two, three):
        os.mkdir(d)
    batch = ["--prompt", "a red apple", "--seed", "11", "--batch-count", "5", "--no-metadata"]
    run_cli(c, binary, model, "batch-one-engine", [*batch, "-o", os.path.join(one, "img-%02d.png")])
    r = run_cli(c, binary, model, "batch-two-engines",
                [*batch, "-o", os.path.join(two, "img-%02d.png"), "--device", "0,1", "--progress", "json"])
    c.check("batch-same-files", files_of(one) == files_of(two) and len(files_of(one)) == 5,
            (list(files_of(one)), list(files_of(two))))
    events = [json.loads(line) for line in r.stderr.splitlines() if line.startswith("{")]
    used = {e.get("device") for e in events if e.get("stage") == "image"}
    c.check("batch-both-engines-used", used == {"0", "1"}, used)
    done = [e for e in events if e.get("event") == "done"]
    c.check("batch-done-lists-in-order", done and done[0]["seeds"] == [11, 12, 13, 14, 15] and
            [os.path.basename(p) for p in done[0]["paths"]] == [f"img-{i:02d}.png" for i in range(1, 6)], done)

    jobs = os.path.join(work, "jobs.jsonl")
    with open(jobs, "w") as f:
        for i, prompt in enumerate(["a cat", "a dog", "a red apple", "a boat"]):
            f.write(json.dumps({"prompt": prompt, "seed": 20 + i, "output": os.path.join(three, f"job{i}.png")}) + "\n")
    run_cli(c, binary, model, "jobs-two-engines", ["--jobs", jobs, "--device", "1,0", "--no-metadata"])
    got = files_of(three)
    for i, prompt in enumerate(["a cat", "a dog", "a red apple", "a boat"]):
        single = os.path.join(work, f"single{i}.png")
        run_cli(c, binary, model, f"job{i}-one-engine", ["--prompt", prompt, "--seed", str(20 + i), "-o", single,
                                                         "--no-metadata"])
        c.check(f"job{i}-same-as-one-engine", got.get(f"job{i}.png") == open(single, "rb").read())

    # More devices than images: one engine per image, no idle engines started.
    r = run_cli(c, binary, model, "one-image-four-devices", ["--prompt", "x", "-o", os.path.join(work, "x.png"),
                                                             "--device", "0,1,2,3"])
    c.check("one-image-one-engine", r.stderr.count("device: host reference backend") == 1, r.stderr)


def check_server(c, srv, binary, model):
    work = tempfile.mkdtemp()
    results = []
    bodies = [{"prompt": "a red apple", "seed": s, "steps": 30, "width": 64, "height": 64} for s in (7, 7, 8)]

    def post(body):
        results.append((body["seed"], srv.request("POST", "/sdapi/v1/txt2img", body, timeout=300)))

    threads = [threading.Thread(target=post, args=(b,)) for b in bodies]
    for t in threads:
        t.start()
        time.sleep(0.02)
    for t in threads:
        t.join(300)
    c.check("three-answered", len(results) == 3 and all(r[1][0] == 200 for r in results),
            [r[1][0] for r in results])
    for seed in (7, 8):
        cli = png_pixels(cli_png(binary, model, work, "--prompt", "a red apple", "--seed", str(seed), "--steps", "30",
                                 "--size", "64x64"))
        made = [png_pixels(b64png(r[1][1]["images"][0])) for r in results if r[0] == seed]
        c.check(f"seed{seed}-same-pixels-on-every-engine", made and all(m == cli for m in made), len(made))
    log = srv.output()
    c.check("two-engines-listening", "2 engines, devices 0,1" in log, log[:400])
    c.check("two-host-backends", log.count("device: host reference backend") == 2, log[-800:])


def check_all_on_host(c, binary, model):
    r = subprocess.run([binary, "--model", model, *TINY_DEFAULTS, "--prompt", "x", "--batch-count", "2",
                        "-o", os.path.join(tempfile.mkdtemp(), "a.png"), "--device", "all"],
                       capture_output=True, text=True, env=ENV, timeout=120)
    c.check("device-all-host-one-engine", r.returncode == 0 and
            r.stderr.count("device: host reference backend") == 1, r.stderr[-400:])


if __name__ == "__main__":
    def before(c, binary, model):
        check_cli(c, binary, model)
        check_all_on_host(c, binary, model)
    run_server_test(check_server, before=before, extra=["--device", "0,1"])
