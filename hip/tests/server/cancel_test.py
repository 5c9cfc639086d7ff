#!/usr/bin/env python3
"""Cancellation inside a step (issue 35): a denoise step of the host backend at 1536x1536 on one
thread takes over 6 minutes (a server that checked only between steps had not answered an
interrupt 390 s later), so a stop that waited for the step's end would take that long. Each case waits until the step has run for a few seconds, stops it, and
checks that it ended within STOP_S: the client going away (the server idle again), POST /interrupt
(the denoise ends, the decode of the noise begins), SIGINT to the server (exit 130), SIGINT / SIGTERM to a
CLI run (exit 130 / 143, no output left). Usage: cancel_test.py BINARY MODEL_DIR"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import Server, Checks

SIZE = 1536
RUN_S = 3    # how long the step runs before it is stopped
STOP_S = 5   # the stop must be seen within this (the step itself takes minutes)
BIG = {"prompt": "a red apple", "seed": 1, "steps": 2, "cfg_scale": 1, "width": SIZE, "height": SIZE}
os.environ["MOSSINFER_THREADS"] = "1"  # one thread: the step is long on any machine


def progress(srv):
    status, r, _ = srv.request("GET", "/sdapi/v1/progress", timeout=5)
    return r if status == 200 else {}


def wait_denoising(srv, limit=120):
    """Waits until the running request is inside its first denoise step; the step's start time."""
    deadline = time.time() + limit
    while time.time() < deadline:
        p = progress(srv)
        if p.get("textinfo") == "denoise" and p["state"]["sampling_step"] == 0:
            return time.time()
        time.sleep(0.1)
    return None


def post_big(srv, out):
    """POST txt2img in a thread of its own; out gets (status, body, time answered)."""
    def run():
        try:
            out["answer"] = srv.request("POST", "/sdapi/v1/txt2img", BIG, timeout=600)[:2]
        except OSError as e:
            out["answer"] = (None, str(e))
        out["at"] = time.time()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def check_server(c, binary, model):
    srv = Server(binary, model)
    try:
        # The client goes away inside the step: the server is idle again within STOP_S.
        s = socket.create_connection(("127.0.0.1", srv.port))
        payload = json.dumps(BIG).encode()
        s.sendall(b"POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
        started = wait_denoising(srv)
        time.sleep(RUN_S)
        s.close()
        t0 = time.time()
        while progress(srv).get("state", {}).get("job") and time.time() - t0 < 60:
            time.sleep(0.1)
        took = time.time() - t0
        print(f"disconnect: idle {took:.2f} s after the close")
        c.check("disconnect-inside-step", started and took < STOP_S and "client went away" in srv.output(),
                (started, round(took, 2)))

        # POST /interrupt inside the step: the denoise ends within STOP_S and the request goes on
        # to decode the seed's noise (A1111's answer; server_ops checks that image at 64x64). The
        # host backend's decode at this size takes minutes on one thread: the server is killed
        # once the stage has moved on.
        out = {}
        t = post_big(srv, out)
        started = wait_denoising(srv)
        time.sleep(RUN_S)
        still = progress(srv)["state"]["sampling_step"] == 0
        t0 = time.time()
        srv.request("POST", "/sdapi/v1/interrupt")
        decoding = None
        while time.time() - t0 < 60:
            p = progress(srv)
            if p.get("textinfo") == "vae":
                decoding = p
                break
            time.sleep(0.05)
        took = time.time() - t0
        print(f"interrupt: the denoise ended {took:.2f} s after POST /interrupt")
        c.check("interrupt-inside-step", started and still and decoding is not None and
                decoding["state"]["interrupted"] and took < STOP_S, (started, still, decoding, round(took, 2)))
        srv.proc.kill()
        srv.proc.wait(60)
        os.unlink(srv.log.name)
        t.join(60)
    finally:
        if srv.proc.poll() is None:
            srv.stop()

    srv = Server(binary, model)
    try:
        # SIGINT to the server inside the step: it stops at once (SIGTERM would drain, letting the
        # running image finish: server_ops), exit 130 within STOP_S.
        out = {}
        t = post_big(srv, out)
        started = wait_denoising(srv)
        time.sleep(RUN_S)
        t0 = time.time()
        srv.proc.send_signal(signal.SIGINT)
        try:
            code = srv.proc.wait(60)
        except subprocess.TimeoutExpired:
            code = None
        took = time.time() - t0
        t.join(60)
        print(f"server SIGINT: exited {took:.2f} s after the signal")
        c.check("sigint-server-inside-step", started and code == 130 and took < STOP_S,
                (started, code, round(took, 2), out.get("answer", (None,))[0]))
    finally:
        if srv.proc.poll() is None:
            srv.stop()


def check_cli(c, binary, model):
    env = dict(os.environ, MOSSINFER_BACKEND="host", MOSSINFER_TEST_PAUSE="denoise:0")
    for sig, code in [(signal.SIGINT, 130), (signal.SIGTERM, 143)]:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x.png")
            p = subprocess.Popen([binary, "--model", model, "--prompt", "a red apple", "--size", f"{SIZE}x{SIZE}",
                                  "--steps", "2", "--cfg", "1", "--skip-layers", "2", "-o", out], stderr=subprocess.PIPE, text=True, env=env)
            seen, line, deadline = "", "", time.time() + 120
            while "pause at denoise" not in line and time.time() < deadline and p.poll() is None:
                line = p.stderr.readline()
                seen += line
            time.sleep(RUN_S)
            t0 = time.time()
            p.send_signal(sig)
            try:
                got = p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                got = None
            took = time.time() - t0
            rest = seen + p.stderr.read()
            name = signal.Signals(sig).name
            print(f"CLI {name}: exited {took:.2f} s after the signal")
            c.check(f"cli-{name}-inside-step", got == code and took < STOP_S and f"interrupted by {name}" in rest
                    and os.listdir(d) == [], (got, round(took, 2), rest[-200:], os.listdir(d)))


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    check_server(c, binary, model)
    check_cli(c, binary, model)
    c.finish()


if __name__ == "__main__":
    main()
