#!/usr/bin/env python3
"""The server as a deployment sees it (issue 32) and A1111's progress (issue 30): /health and
/ready, the bounded queue (503 with Retry-After), SIGTERM's drain (running and queued requests
finish, new ones are refused, exit 0 once none has come for 2 s), its deadline and the signals that stop at once, the
progress of a 2-image request sampled every 50 ms, and an interrupt that answers with the image
so far (the noise's decode when no step had finished). Usage: ops_test.py BINARY MODEL_DIR"""
import http.client
import json
import os
import signal
import subprocess
import threading
import time

from harness import Checks, Server, b64png, png_pixels

# A request long enough to be seen running (hundreds of denoise steps of the tiny model).
LONG = {"prompt": "a red apple", "steps": 400, "shift": 1, "width": 64, "height": 64, "seed": 1}


def post_async(srv, body, results, key):
    def go():
        try:
            results[key] = srv.request("POST", "/sdapi/v1/txt2img", body, timeout=300)
        except OSError as e:
            results[key] = (None, None, repr(e).encode())
    t = threading.Thread(target=go)
    t.start()
    return t


def wait_until(predicate, timeout=60, period=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(period)
    return None


def progress(srv):
    return srv.request("GET", "/sdapi/v1/progress")[1]


def running_step(srv, at_least=1):
    return wait_until(lambda: progress(srv)["state"]["sampling_step"] >= at_least)


def check_command_line(c, binary, model):
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    for args, pattern in [(["--queue", "-1"], "--queue '-1'"), (["--queue", "many"], "--queue 'many'"),
                          (["--queue", "5000"], "--queue '5000'"), (["--drain-seconds", "1.5"], "--drain-seconds"),
                          (["--drain-seconds", "-3"], "--drain-seconds"), (["--device", "0,0"], "listed twice"),
                          (["--device", "gpu"], "--device 'gpu'"), (["--device", "0,"], "--device '0,'"),
                          (["--device", "256"], "--device '256'")]:
        r = subprocess.run([binary, "serve", "--model", model, *args], capture_output=True, text=True, env=env,
                           timeout=30)
        c.check(f"serve-refuses-{' '.join(args)}", r.returncode == 2 and pattern in r.stderr, (r.returncode, r.stderr))
    r = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30)
    c.check("help-names-new-flags", all(f in r.stdout for f in ("--queue", "--drain-seconds", "/ready", "/metrics")),
            r.stdout)


def check_health_queue_progress_interrupt(c, binary, model):
    srv = Server(binary, model, ["--queue", "1"])
    try:
        status, body, _ = srv.request("GET", "/health")
        c.check("health-200", status == 200 and body == {"status": "ok"}, (status, body))
        status, body, _ = srv.request("GET", "/ready")
        c.check("ready-200-idle", status == 200 and body["ready"] is True, (status, body))
        p = progress(srv)
        c.check("progress-idle-shape", p["progress"] == 0 and p["state"]["job_count"] == 0 and
                p["current_image"] is None and p["textinfo"] is None, p)

        # Progress of a 2-image request, sampled every 50 ms: never goes back, at least 0.01 while
        # the request runs, job_count 2 and job_no below it; the eta counts down between moves.
        results = {}
        t = post_async(srv, {**LONG, "steps": 20, "batch_size": 2, "seed": 3}, results, "two")
        samples = []
        while t.is_alive():
            samples.append((time.time(), progress(srv)))
            time.sleep(0.05)
        t.join()
        active = [p for _, p in samples if p["state"]["job"] == "txt2img"]
        fractions = [p["progress"] for p in active]
        c.check("progress-sampled", len(active) >= 10 and results["two"][0] == 200, (len(active), results["two"][0]))
        c.check("progress-non-decreasing", all(b >= a for a, b in zip(fractions, fractions[1:])),
                [f for f in fractions])
        c.check("progress-at-least-0.01", all(0.01 <= f <= 1 for f in fractions), fractions[:5])
        c.check("progress-both-images", {p["state"]["job_no"] for p in active} == {0, 1} and
                all(p["state"]["job_count"] == 2 for p in active), [(p["state"]["job_no"], p["state"]["job_count"])
                                                                      for p in active][:20])
        c.check("progress-reaches-second-half", max(fractions) > 0.5 and min(fractions) < 0.5, fractions)
        same = [(a["eta_relative"], b["eta_relative"]) for a, b in zip(active, active[1:])
                if a["progress"] == b["progress"] and a["progress"] > 0.01]
        c.check("eta-counts-down-between-moves", all(eb <= ea for ea, eb in same) and
                all(p["eta_relative"] >= 0 for p in active), same[:10])
        c.check("no-live-preview", all(p["current_image"] is None for p in active))

        # The queue holds one waiting request beside the running one; a third is refused with
        # Retry-After, and /ready says the server is full.
        t1 = post_async(srv, LONG, results, "long")
        running_step(srv)
        t2 = post_async(srv, {**LONG, "steps": 2, "seed": 9}, results, "queued")
        wait_until(lambda: '"ready":false' in srv.request("GET", "/ready")[2].decode())
        conn_status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", "steps": 2})
        c.check("queue-full-503", conn_status == 503 and "busy" in err["error"], (conn_status, err))
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        conn.request("POST", "/sdapi/v1/txt2img", body=b'{"prompt": "x"}', headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        c.check("queue-full-retry-after", resp.status == 503 and resp.getheader("Retry-After") == "1",
                (resp.status, resp.getheaders()))
        conn.close()
        status, body, _ = srv.request("GET", "/ready")
        c.check("ready-503-when-full", status == 503 and body["ready"] is False, (status, body))

        # An interrupt ends the running request's denoise; its answer has the decoded image so far.
        status, _, _ = srv.request("POST", "/sdapi/v1/interrupt")
        t1.join(60)
        t2.join(60)
        s1, r1, _ = results["long"]
        info = json.loads(r1["info"]) if s1 == 200 else {}
        c.check("interrupt-returns-image", s1 == 200 and info["interrupted"] is True and len(r1["images"]) == 1 and
                png_pixels(b64png(r1["images"][0]))[0] == (64, 64) and
                0 < info["generation"][0]["steps_run"] < LONG["steps"], (s1, info.get("interrupted")))
        c.check("interrupt-marked-in-png", s1 == 200 and b"Steps run: " + str(info["generation"][0]["steps_run"])
                .encode() in b64png(r1["images"][0]))
        s2, r2, _ = results["queued"]
        c.check("queued-one-runs-after", s2 == 200 and len(r2["images"]) == 1 and
                not json.loads(r2["info"])["interrupted"], s2)

        # A 3-image request interrupted during its first image: that image, decoded, and no more.
        t3 = post_async(srv, {**LONG, "batch_size": 3}, results, "three")
        running_step(srv, 3)
        srv.request("POST", "/sdapi/v1/interrupt")
        t3.join(60)
        s3, r3, _ = results["three"]
        c.check("interrupt-skips-later-images", s3 == 200 and len(r3["images"]) == 1 and
                json.loads(r3["info"])["interrupted"], (s3, r3 and len(r3.get("images", []))))
        status, body, _ = srv.request("GET", "/ready")
        c.check("ready-again", status == 200, (status, body))
    finally:
        code = srv.stop()
    c.check("idle-sigterm-exit-0", code == 0, code)


def check_drain(c, binary, model):
    """SIGTERM with one request running and one queued: both are answered with their images,
    a new one gets 503 (Retry-After), /ready 503 and /health 200 meanwhile; exit 0."""
    srv = Server(binary, model)
    results = {}
    t1 = post_async(srv, {**LONG, "steps": 40}, results, "running")
    running_step(srv)
    t2 = post_async(srv, {**LONG, "steps": 10, "seed": 4}, results, "queued")
    wait_until(lambda: srv.request("GET", "/metrics")[2].find(b"moss_queue_depth 1") >= 0, timeout=10)
    srv.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", "steps": 2})
    c.check("drain-refuses-new-503", status == 503 and "draining" in err["error"], (status, err))
    status, _, _ = srv.request("GET", "/ready")
    c.check("drain-ready-503", status == 503, status)
    status, _, _ = srv.request("GET", "/health")
    c.check("drain-health-200", status == 200, status)
    t1.join(120)
    t2.join(120)
    for key in ("running", "queued"):
        s, r, _ = results[key]
        c.check(f"drain-{key}-finishes", s == 200 and len(r["images"]) == 1 and
                not json.loads(r["info"])["interrupted"], (s, r))
    code = srv.proc.wait(timeout=60)
    out = srv.output()
    os.unlink(srv.log.name)
    c.check("drain-exit-0", code == 0 and "drained" in out, (code, out[-400:]))


def check_drain_stays_while_sent_to(c, binary, model):
    """A drained server keeps its port open while requests still come (each refused 503, which a
    balancer sends elsewhere) and closes it 2 s after the last: a request on its way when the
    port closed would get no answer at all (issue 32's deploy test: HAProxy's 502)."""
    srv = Server(binary, model)
    srv.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: "draining" in srv.output(), timeout=10)  # the signal is acted on within 20 ms
    refused, last = [], 0.0
    for _ in range(8):  # 8 x 0.5 s: past the 2 s, so only the refusals keep it open
        try:
            status = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", "steps": 2}, timeout=10)[0]
        except OSError as e:
            status = repr(e)
        refused.append(status)
        last = time.time()
        time.sleep(0.5)
    c.check("drain-refuses-while-sent-to", refused == [503] * 8 and srv.proc.poll() is None, refused)
    code = srv.proc.wait(timeout=60)
    quiet = time.time() - last
    out = srv.output()
    os.unlink(srv.log.name)
    c.check("drain-closes-2s-after-last", code == 0 and "drained" in out and 1.9 <= quiet <= 10, (code, quiet))


def check_stops(c, binary, model):
    """What stops at once: the drain's deadline and a second SIGTERM (143), SIGINT (130), SIGHUP
    (129); the running request is answered 503."""
    for name, signals, extra, code_expected in [
            ("drain-deadline", [signal.SIGTERM], ["--drain-seconds", "1"], 143),
            ("second-sigterm", [signal.SIGTERM, signal.SIGTERM], [], 143),
            ("sigint", [signal.SIGINT], [], 130), ("sighup", [signal.SIGHUP], [], 129)]:
        srv = Server(binary, model, extra)
        results = {}
        t = post_async(srv, {**LONG, "steps": 1000}, results, "job")
        running_step(srv)
        t0 = time.time()
        for s in signals:
            srv.proc.send_signal(s)
            time.sleep(0.2)
        t.join(60)
        code = srv.proc.wait(timeout=60)
        status, err, _ = results["job"]
        c.check(f"{name}-exit-{code_expected}", code == code_expected, (code, srv.output()[-300:]))
        os.unlink(srv.log.name)
        c.check(f"{name}-running-gets-503", status == 503 and "stopping" in err["error"] and time.time() - t0 < 20,
                (status, err))


def check_interrupt_before_first_step(c, binary, model):
    """An interrupt that lands before the first denoise step finished (here: while the run is held
    at the denoise's start by MOSSINFER_TEST_PAUSE) is answered, as A1111 answers, with the decode
    of the seed's noise: one image, interrupted, steps_run 0."""
    os.environ["MOSSINFER_TEST_PAUSE"] = "denoise:3"
    try:
        srv = Server(binary, model)
    finally:
        del os.environ["MOSSINFER_TEST_PAUSE"]
    try:
        results = {}
        t = post_async(srv, LONG, results, "job")
        paused = wait_until(lambda: "pause at denoise" in srv.output(), timeout=60)
        srv.request("POST", "/sdapi/v1/interrupt")
        t.join(120)
        status, r, _ = results["job"]
        info = json.loads(r["info"]) if status == 200 else {}
        c.check("interrupt-before-first-step-image", paused and status == 200 and info.get("interrupted") is True and
                len(r["images"]) == 1 and png_pixels(b64png(r["images"][0]))[0] == (64, 64) and
                info["generation"][0]["steps_run"] == 0, (paused, status, info.get("generation")))
        c.check("interrupt-before-first-step-marked-in-png",
                status == 200 and b"Steps run: 0" in b64png(r["images"][0]))
    finally:
        srv.stop()


if __name__ == "__main__":
    import sys
    binary, model = sys.argv[1], sys.argv[2]
    checks = Checks()
    check_command_line(checks, binary, model)
    check_health_queue_progress_interrupt(checks, binary, model)
    check_interrupt_before_first_step(checks, binary, model)
    check_drain(checks, binary, model)
    check_drain_stays_while_sent_to(checks, binary, model)
    check_stops(checks, binary, model)
    checks.finish()
