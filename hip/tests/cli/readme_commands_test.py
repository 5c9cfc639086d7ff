#!/usr/bin/env python3
"""Runs the commands of the README's first 250 lines that can run on the host (issue 51).

Every indented code line there is a command. Each is classified below: run here, or skipped for
a stated reason (it needs the network, root, ROCm, or is another test's: quickstart runs in
ctest `quickstart_host`); a command this table does not know fails the test, so a new README
command gets a decision. The swaps, the same for every command: `build/moss-infer-hip` is the
binary under test, `~/models/MOSS-Image-SFT` the tiny model, and a generation gets `--size 32x32`,
`--steps 1` and `--skip-layers 2` where it gives none of its own (the tiny model has 4 blocks),
written in a scratch folder; everything runs with MOSSINFER_BACKEND=host unless the GPU is the point
(`self-test`, `bench`: on a machine without a GPU they must exit 1 saying `no supported device`).
`serve` is started on a free port, asked /health and / and stopped with SIGTERM (exit 0).
Usage: readme_commands_test.py BINARY REPO_ROOT
"""
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

LINES = 250
SKIP = [  # (pattern of the command, why it does not run here)
    (r"^git clone ", "fetches this repository"),
    (r"^sudo ", "changes the machine (root)"),
    (r"^rocminfo\b", "needs ROCm"),
    (r"^scripts/quickstart\.sh$", "builds; run for real by ctest quickstart_host on this build"),
    (r"^scripts/get_model\.sh (sft|base|comfy) ", "downloads 27 GiB; its check runs below and in ctest get_model_check"),
    (r"^ctest ", "the test command itself"),
    (r"^build/moss-infer-hip --diffusion-model ", "needs the Comfy-Org files; ctest cli_model_files runs this command "
                                                  "line on the tiny model written in their layout"),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def commands(readme):
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()[:LINES]
    return [l.strip() for l in lines if re.match(r"^ {4,}\S", l) and not l.lstrip().startswith("|")]


def run_serve(argv, env, work):
    port = free_port()
    p = subprocess.Popen(argv + ["--port", str(port)], cwd=work, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            line = p.stderr.readline()
            if not line and p.poll() is not None:
                return f"serve exited {p.returncode} before listening"
            if line.startswith("listening on"):
                break
        for path, want in (("/health", b'"ok"'), ("/", b"<html")):
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read()
            if want not in body:
                return f"GET {path}: {body[:80]!r}"
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=30)
        return None if rc == 0 else f"serve exited {rc} after SIGTERM"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def main():
    binary, root = sys.argv[1], sys.argv[2]
    tiny = os.path.join(root, "hip/tests/data/tiny-moss")
    no_gpu = subprocess.run([binary, "--list-devices"], capture_output=True, text=True).stdout.strip() == "no HIP devices"
    failures, ran, skipped = [], 0, 0
    for cmd in commands(os.path.join(root, "README.md")):
        why = next((w for pattern, w in SKIP if re.search(pattern, cmd)), None)
        if why:
            print(f"skip  {cmd}\n      ({why})")
            skipped += 1
            continue
        words = shlex.split(cmd.replace("~/models/MOSS-Image-SFT", tiny).replace(" hip/tests/data/tiny-moss", " " + tiny))
        env = dict(os.environ, MOSSINFER_BACKEND="host")
        while words and re.match(r"^[A-Z_]+=", words[0]):
            k, v = words.pop(0).split("=", 1)
            env[k] = v
        if not words:
            failures.append(f"{cmd}: no command")
            continue
        work = tempfile.mkdtemp()
        if words[0] == "build/moss-infer-hip":
            argv = [binary] + words[1:]
            sub = argv[1] if len(argv) > 1 else ""
            if sub in ("self-test", "bench"):
                env.pop("MOSSINFER_BACKEND")
                if not no_gpu:
                    print(f"skip  {cmd}\n      (a GPU is here: the device tests cover it)")
                    skipped += 1
                    continue
                r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
                problem = None if r.returncode == 1 and "no supported device" in r.stderr else \
                    f"exit {r.returncode}: {r.stderr[-300:]}"
            elif sub == "serve":
                served = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True)
                if served.returncode == 2 and "this build has no server" in served.stderr:
                    print(f"skip  {cmd}\n      (this build has no server: ctest server_unavailable_message)")
                    skipped += 1
                    continue
                problem = run_serve(argv, env, work)
            else:
                if "--model" in argv:
                    for flag, value in (("--size", "32x32"), ("--steps", "1"), ("--skip-layers", "2")):
                        if flag not in argv:
                            argv += [flag, value]
                r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
                problem = None if r.returncode == 0 else f"exit {r.returncode}: {r.stderr[-300:]}"
                outs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "-o"]
                if not problem and any(not os.path.isfile(os.path.join(work, o)) for o in outs):
                    problem = f"no {outs}"
        elif words[0].startswith("scripts/"):
            r = subprocess.run([os.path.join(root, words[0])] + words[1:], cwd=root, env=env, capture_output=True, text=True)
            problem = None if r.returncode == 0 else f"exit {r.returncode}: {(r.stdout + r.stderr)[-300:]}"
        else:
            problem = "not a command this test knows: run it here or give the reason it cannot run (SKIP)"
        ran += 1
        print(("ok    " if not problem else "FAIL  ") + cmd + ("" if not problem else f"\n      {problem}"))
        if problem:
            failures.append(cmd)
    print(f"{ran} run, {skipped} skipped, {len(failures)} failed")
    if ran == 0:
        print("FAIL: no command ran")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
