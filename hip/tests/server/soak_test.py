#!/usr/bin/env python3
"""A soak of `serve` (issue 50): 16 clients for MOSSINFER_SOAK_SECONDS (default 12 in the default
test run; the issue's soak is 3 minutes: MOSSINFER_SOAK_SECONDS=180 ctest -L stress -R soak) mix
what a person's clients and a hostile page send: tiny generations, progress polls, interrupts,
foreign Hosts and Origins, form bodies, bad JSON, out-of-range numbers, unknown and invalid-UTF-8
paths, preflights, half-closed and abandoned connections. Checked: no request without an answer
(but the abandoned ones), every answer one of the statuses its class allows, the server's resident
memory and open descriptors back where they were after a warm-up, /metrics still a bounded,
parseable set, and a drain that exits 0.
Usage: soak_test.py BINARY MODEL_DIR"""
import os
import random
import re
import socket
import sys
import threading
import time

from harness import Server, Checks, read_until_closed

SECONDS = float(os.environ.get("MOSSINFER_SOAK_SECONDS", "12"))
# Below the server's 24 connections per address (README "Server limits"). An abandoned request
# holds its connection's slot until the server sees it gone, and a client's next connection may
# come first: those few are answered 503 busy, counted (at most 5%), not failed.
CLIENTS = 16


def exchange(port, raw, half_close=False, abandon=False):
    """Sends raw bytes; the status of the answer (None when abandoned or no answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(raw)
        if abandon:
            return None
        if half_close:
            s.shutdown(socket.SHUT_WR)
        data = read_until_closed(s)  # Connection: close: the answer ends with the stream
        finals = [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3})", data) if not x.startswith(b"1")]
        return finals[0] if finals else None


def request(method, path, body=b"", headers=()):
    head = [f"{method} {path} HTTP/1.1", "Host: localhost", "Connection: close", *headers]
    if body or method == "POST":
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


JSON = ("Content-Type: application/json",)
# (name, request bytes, statuses allowed, how it is sent)
CLASSES = [
    ("generate", request("POST", "/sdapi/v1/txt2img", b'{"prompt": "soak", "steps": 1}', JSON), {200, 503}, {}),
    ("progress", request("GET", "/sdapi/v1/progress"), {200}, {}),
    ("interrupt", request("POST", "/sdapi/v1/interrupt"), {200}, {}),
    ("foreign-host", request("GET", "/sdapi/v1/options").replace(b"Host: localhost", b"Host: evil.example"), {421}, {}),
    ("foreign-origin", request("POST", "/sdapi/v1/txt2img", b'{"prompt": "x"}', JSON + ("Origin: http://evil.example",)),
     {403}, {}),
    ("form", request("POST", "/sdapi/v1/txt2img", b'{"prompt":"x","a":"="}', ("Content-Type: text/plain",)), {415}, {}),
    ("bad-json", request("POST", "/sdapi/v1/txt2img", b'{"prompt": ', JSON), {400}, {}),
    ("huge-number", request("POST", "/sdapi/v1/txt2img", b'{"prompt": "x", "steps": 1e400}', JSON), {422}, {}),
    ("seed-wrap", request("POST", "/sdapi/v1/txt2img", b'{"prompt": "x", "seed": 18446744073709551615, "n_iter": 2}',
                          JSON), {422}, {}),
    ("unknown-path", None, {404}, {}),
    ("utf8-path", request("GET", "/\udcff\udcfe/x"), {400, 404}, {}),
    ("preflight", request("OPTIONS", "/sdapi/v1/txt2img", b"", ("Origin: http://localhost:3000",
                                                                 "Access-Control-Request-Method: POST")), {204}, {}),
    ("half-close", request("GET", "/sdapi/v1/sd-models"), {200}, {"half_close": True}),
    ("abandoned", request("POST", "/sdapi/v1/txt2img", b'{"prompt": "gone", "steps": 1}', JSON), {None},
     {"abandon": True}),
]


def client(port, until, seed, tally, errors):
    rng = random.Random(seed)
    while time.time() < until:
        name, raw, allowed, how = rng.choice(CLASSES)
        if raw is None:
            raw = request("GET", f"/soak/{rng.randrange(1 << 30)}")
        try:
            status = exchange(port, raw, **how)
        except OSError as e:
            status = f"error {e}"
        with tally["lock"]:
            tally[name] = tally.get(name, 0) + 1
            if status == 503 and 503 not in allowed:
                tally["busy"] = tally.get("busy", 0) + 1
            elif status not in allowed:
                errors.append((name, status))


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    srv = Server(binary, model, ["--cors-origin", "http://localhost:3000", "--queue", "64"])
    try:
        tally, errors = {"lock": threading.Lock()}, []
        warm = time.time() + min(5.0, SECONDS / 4)
        threads = [threading.Thread(target=client, args=(srv.port, warm, i, tally, errors)) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(1.5)
        before = srv.resources()
        until = time.time() + SECONDS
        threads = [threading.Thread(target=client, args=(srv.port, until, 100 + i, tally, errors))
                   for i in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(2.5)  # abandoned requests end, connections close
        after = srv.resources()
        busy = tally.pop("busy", 0)
        total = sum(v for k, v in tally.items() if k != "lock")
        print(f"soak: {total} requests from {CLIENTS} clients in {SECONDS:.0f} s (+ warm-up); "
              f"RSS {before[0]} -> {after[0]} KiB, descriptors {before[1]} -> {after[1]}")
        c.check(f"soak-every-answer-as-its-class ({total} requests)", not errors, errors[:5])
        c.check(f"soak-busy-refusals-rare ({busy})", busy <= total // 20, busy)
        c.check("soak-every-class-sent", all(tally.get(name, 0) > 0 for name, *_ in CLASSES),
                {k: v for k, v in tally.items() if k != "lock"})
        c.check("soak-descriptors-back", after[1] <= before[1] + 2, (before, after))
        c.check("soak-memory-flat", after[0] - before[0] < 24 * 1024, (before, after))
        status, text, raw = srv.request("GET", "/metrics")
        series = [l for l in raw.decode("utf-8").splitlines() if l.startswith("moss_http_requests_total{")]
        c.check(f"soak-metrics-bounded ({len(series)} series)", status == 200 and len(series) <= 60, series[:5])
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    c.finish()


if __name__ == "__main__":
    main()
