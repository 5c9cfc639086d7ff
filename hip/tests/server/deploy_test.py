#!/usr/bin/env python3
"""The deployment of docs/deploy.md, tested on loopback (issue 32): HAProxy (Debian's package;
exit 77, skipped, where it is not installed; CI installs it, .ci/run) with docs/deploy/haproxy.cfg
in front of three `serve` processes (host backend, tiny model, 32x32, 2 steps). 8 clients send
300 requests; one server is sent SIGTERM while loaded (its requests finish, it exits 0, and no
client sees a refusal: the balancer sends elsewhere what it refused), another SIGKILL (only the
requests it had in flight fail, each counted and reported, and the client's retry gets an image).
Every image equals the CLI's for its seed. Prints requests per second and p50 / p99 latency (no
timing is asserted). Usage: deploy_test.py BINARY MODEL_DIR"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import Checks, Server, b64png, cli_png, free_port, http_request, png_pixels

REQUESTS, CLIENTS = 300, 8
SEEDS = [1, 2, 3]  # few distinct seeds: the CLI makes each once
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
CONFIG = os.path.join(ROOT, "docs", "deploy", "haproxy.cfg")


def haproxy_config(port, servers):
    """docs/deploy/haproxy.cfg with its bind on `port` and its server lines on the servers."""
    text = open(CONFIG).read()
    text = re.sub(r"(?m)^(\s*bind )\S+", lambda m: f"{m.group(1)}127.0.0.1:{port}", text)
    lines = [f"    server serve-{i} 127.0.0.1:{s.port} check" for i, s in enumerate(servers)]
    text = re.sub(r"(?m)^\s*server .*\n", "", text).rstrip("\n") + "\n" + "\n".join(lines) + "\n"
    if os.environ.get("DEPLOY_TEST_LOG"):
        text = text.replace("global\n", "global\n    log stderr format raw local0\n", 1)
        text = text.replace("defaults\n", "defaults\n    option httplog\n", 1)
    return text


def post(port, body):
    """(status, served-by, parsed body or None, seconds); status None when the connection failed."""
    t0 = time.time()
    try:
        status, parsed, _, headers = http_request(port, "POST", "/sdapi/v1/txt2img", body, timeout=300)
        return status, headers.get("X-Served-By"), parsed, time.time() - t0
    except OSError:
        return None, None, None, time.time() - t0


def main():
    binary, model = sys.argv[1], sys.argv[2]
    if not shutil.which("haproxy"):
        print("skipped: haproxy is not installed (apt-get install haproxy)")
        sys.exit(77)
    c = Checks()
    work = tempfile.mkdtemp()
    expected = {s: png_pixels(cli_png(binary, model, work, "--prompt", "a red apple", "--seed", str(s)))
                for s in SEEDS}

    # One engine each, --queue at least the cfg's maxconn (6), as docs/deploy.md says.
    servers = [Server(binary, model, ["--queue", "6"]) for _ in range(3)]
    port = free_port()
    cfg = os.path.join(work, "haproxy.cfg")
    open(cfg, "w").write(haproxy_config(port, servers))
    proxy = subprocess.Popen(["haproxy", "-db", "-f", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)

    lock = threading.Lock()
    next_index = [0]
    results = []  # (index, seed, status, served_by, ok_image, seconds, sent_at, retried)

    def client():
        while True:
            with lock:
                i = next_index[0]
                next_index[0] += 1
            if i >= REQUESTS:
                return
            seed = SEEDS[i % len(SEEDS)]
            body = {"prompt": "a red apple", "seed": seed}
            sent = time.time()
            status, by, r, secs = post(port, body)
            retried = None
            if status != 200:
                # What a client does with a failure: send it again (once), and it must get an image.
                retried = post(port, body)
            final = retried if retried else (status, by, r, secs)
            ok = final[0] == 200 and png_pixels(b64png(final[2]["images"][0])) == expected[seed]
            with lock:
                results.append((i, seed, status, by, ok, secs, sent, retried is not None))

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    t_start = time.time()
    for t in threads:
        t.start()

    def wait_for_done(n):
        while len(results) < n and any(t.is_alive() for t in threads):
            time.sleep(0.01)

    # SIGTERM to serve-0 a third of the way through, SIGKILL to serve-1 halfway.
    wait_for_done(REQUESTS // 3)
    termed, killed = servers[0], servers[1]
    t_term = time.time()
    termed.proc.send_signal(signal.SIGTERM)
    wait_for_done(REQUESTS // 2)
    # Killed while it runs a request (the log shows its progress lines); then SIGKILL.
    t_kill = time.time()
    killed.proc.kill()
    for t in threads:
        t.join(600)
    elapsed = time.time() - t_start
    term_code = termed.proc.wait(timeout=120)
    killed.proc.wait(timeout=30)
    term_log = termed.output()

    lat = sorted(r[5] for r in results if r[2] == 200)
    p50 = lat[len(lat) // 2] if lat else 0
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else 0
    failed = [r for r in results if r[2] != 200]
    by_server = {}
    for r in results:
        by_server[r[3]] = by_server.get(r[3], 0) + 1
    print(f"load: {len(results)} requests from {CLIENTS} clients in {elapsed:.2f} s: "
          f"{len(results) / elapsed:.1f} requests/s, latency p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    print(f"answered by: {by_server}")
    term_after = [r for r in results if r[3] == "serve-0" and r[6] < t_term and r[6] + r[5] > t_term]
    print(f"SIGTERM to serve-0 at {t_term - t_start:.2f} s: {len(term_after)} requests it had in flight then "
          f"finished with images; it exited {term_code}")
    print(f"SIGKILL to serve-1 at {t_kill - t_start:.2f} s: {len(failed)} requests failed "
          f"(statuses {sorted({str(r[2]) for r in failed})}), each retried: "
          f"{[(r[0], r[2], r[3], 'retry ok' if r[4] else 'retry FAILED') for r in failed][:20]}")

    c.check("all-answered", len(results) == REQUESTS, len(results))
    c.check("every-image-equals-cli", all(r[4] for r in results), [r for r in results if not r[4]][:3])
    c.check("three-servers-served", {"serve-0", "serve-1", "serve-2"} <= set(by_server), by_server)
    c.check("sigterm-drained-exit-0", term_code == 0 and "drained" in term_log, (term_code, term_log[-300:]))
    c.check("sigterm-refused-nothing", not any(r[2] == 503 for r in results), [r for r in results if r[2] == 503][:3])
    # Only what serve-1 had in flight can fail (running or queued there: at most its maxconn, 6),
    # each with the balancer's 502, and only those sent before the kill and not answered by then.
    c.check("sigkill-only-in-flight-fail", len(failed) <= 6 and all(r[2] == 502 for r in failed) and
            all(r[6] <= t_kill <= r[6] + r[5] + 0.5 for r in failed), failed[:3])
    c.check("sigkill-retries-get-images", all(r[4] for r in failed), failed[:3])
    c.check("survivor-alive", servers[2].proc.poll() is None)

    proxy.terminate()
    proxy.wait(timeout=30)
    said = proxy.stderr.read().decode(errors="replace")
    # Its server state changes, and (with DEPLOY_TEST_LOG=1) the requests not answered 200.
    print("haproxy said:\n" + "\n".join([l for l in said.splitlines() if l.startswith("[")] +
                                          [l for l in said.splitlines() if not l.startswith("[") and " 200 " not in l][:30]))
    code = servers[2].stop()
    c.check("survivor-drains-exit-0", code == 0, code)
    c.finish()


if __name__ == "__main__":
    main()
