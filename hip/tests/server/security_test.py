#!/usr/bin/env python3
"""Issue 50: a local server only its user can drive (docs/security.md), by class, over every route
the server registers (read from hip/src/server/*.cpp, so a route added later is covered):
  host       every route x foreign Host headers: 421 naming the Host; own names pass
  origin     every state-changing route x foreign Origins: 403; same origin and --cors-origin pass
  type       every state-changing route x non-JSON Content-Types (the forms a page can send): 415
  auth       --api-auth / --api-auth-file: every route but the open ones x missing, wrong and
             malformed credentials: 401 with WWW-Authenticate; Basic and Bearer pass; bad values exit 2
  cors       --cors-origin values no browser sends: exit 2 naming the value
  metrics    10,000 hostile requests (paths, methods, invalid UTF-8, OPTIONS with CORS): a bounded
             series count, a parseable exposition, statuses as sent (413, 415, 421, ...)
  log        client text reaches the log escaped (no forged line, no terminal escape)
  numbers    JSON numbers out of range: 422 naming the field; jobs files FILE:LINE; batch seeds
             past 2^64-1 refused before any compute (server, CLI, jobs)
  halfclose  a client that half-closes after its request gets the answer
  waiting    /progress requests_waiting is the queue's length
Nothing refused may compute: moss_images_total stays what the allowed requests made.
Usage: security_test.py BINARY MODEL_DIR"""
import base64
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import Server, Checks, TINY_DEFAULTS, WRAP, error_message, http_request, inside, read_until_closed

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = os.path.join(HERE, "..", "..", "src", "server")
VALID_BODY = b'{"prompt": "x"}'  # a body that would compute if it got through


def server_routes():
    """(method, path) of every route the server's sources register: literal paths, and the paths of
    loops over lists of names (`for (const char* n : {...}) s.Get(std::string("/prefix/") + n`)."""
    routes = set()
    for path in glob.glob(os.path.join(SOURCES, "*.cpp")):
        text = open(path).read()
        for method, route in re.findall(r'\.(Get|Post|Put|Delete)\("(/[^"]*)"', text):
            routes.add((method.upper(), route))
        for names, method, prefix in re.findall(
                r'for \(const char\* \w+ : \{([^}]*)\}\)\s*\w+\.(Get|Post|Put|Delete)\(std::string\("([^"]*)"\)', text):
            for name in re.findall(r'"([^"]+)"', names):
                routes.add((method.upper(), prefix + name))
    return sorted(routes)


def send(port, method, path, headers=None, body=None, host="default", timeout=60):
    """One request with exactly these headers (Host too, or none with host=None; no Content-Type or
    Content-Length unless given or a body is sent): (status, headers, parsed JSON or None)."""
    exact = {"Content-Type": None, **({"Content-Length": None} if body is None else {}), **(headers or {})}
    if host != "default":
        exact["Host"] = host
    status, parsed, _, got = http_request(port, method, path, raw=body, timeout=timeout, headers=exact)
    return status, got, parsed


def images_made(port, auth=None):
    text = http_request(port, "GET", "/metrics", timeout=30, headers={"Authorization": auth})[2].decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("moss_images_total"))


def state_changing(routes):
    return [(m, p) for m, p in routes if m != "GET"]


def check_host(c, srv, routes):
    port = srv.port
    foreign = ["evil.example", f"evil.example:{port}", f"127.0.0.1.nip.io:{port}", "localhost.evil.example",
               "xlocalhost", "evil.example.", f"[::1].evil.example:{port}", "[::1]evil", "0x7f.0.0.1", "127.1"]
    failures = []
    for method, path in routes:
        for host in foreign:
            headers = {"Content-Type": "application/json"} if method != "GET" else {}
            status, _, err = send(port, method, path, headers, VALID_BODY if method != "GET" else None, host=host)
            if status != 421 or not err or f"Host '{host}'" not in error_message(err):
                failures.append((method, path, host, status, err))
    c.check(f"host-foreign-refused-421 ({len(routes)} routes x {len(foreign)} hosts)", not failures, failures[:3])
    own = [f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LOCALHOST", "app.localhost", f"[::1]:{port}",
           "10.1.2.3", "moss.lan", f"MOSS.lan:{port}", None]
    failures = []
    for host in own:
        for path in ("/sdapi/v1/options", "/health", "/"):
            status, _, _ = send(port, "GET", path, host=host)
            if status != 200:
                failures.append((path, host, status))
        status, _, _ = send(port, "POST", "/sdapi/v1/interrupt", host=host)
        if status != 200:
            failures.append(("interrupt", host, status))
    c.check(f"host-own-names-pass ({len(own)} hosts, --allowed-host moss.lan)", not failures, failures)


def check_origin(c, srv, routes):
    port = srv.port
    foreign = ["http://evil.example", "null", f"http://127.0.0.1:{port + 1}", f"http://localhost.evil.example:{port}",
               f"http://127.0.0.1:{port}.evil.example", "https://evil.example", "http://[::1]:1", "file://"]
    failures = []
    for method, path in state_changing(routes):
        for origin in foreign:
            status, headers, err = send(port, method, path, {"Origin": origin, "Content-Type": "application/json"},
                                        VALID_BODY)
            if status != 403 or "access-control-allow-origin" in headers or origin not in error_message(err):
                failures.append((method, path, origin, status, err))
    c.check(f"origin-foreign-refused-403 ({len(state_changing(routes))} routes x {len(foreign)} origins)",
            not failures, failures[:3])
    # Reading is not refused (the browser keeps the answer from a page without CORS headers).
    status, headers, _ = send(port, "GET", "/sdapi/v1/options", {"Origin": "http://evil.example"})
    c.check("origin-foreign-get-no-cors-headers", status == 200 and "access-control-allow-origin" not in headers,
            (status, dict(headers)))
    for origin in (f"http://127.0.0.1:{port}", f"https://127.0.0.1:{port}", "http://localhost:3000"):
        status, _, err = send(port, "POST", "/sdapi/v1/interrupt", {"Origin": origin})
        c.check(f"origin-allowed-passes {origin}", status == 200, (status, err))


def check_types(c, srv, routes):
    port = srv.port
    refused = ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
               "multipart/form-data; boundary=x", "application/jsonx", "application/json-patch+json",
               "text/json", "", None]
    failures = []
    for method, path in state_changing(routes):
        for ctype in refused:
            headers = {} if ctype is None else {"Content-Type": ctype}
            status, _, err = send(port, method, path, headers, VALID_BODY)
            if status != 415 or "application/json" not in error_message(err):
                failures.append((method, path, ctype, status, err))
    c.check(f"type-non-json-refused-415 ({len(state_changing(routes))} routes x {len(refused)} types)",
            not failures, failures[:3])
    for ctype in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        status, _, err = send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": ctype}, b'{"prompt": "x", "steps": 0}')
        c.check(f"type-json-passes {ctype}", status == 422 and err.get("field") == "steps", (status, err))
    status, _, _ = send(port, "POST", "/sdapi/v1/interrupt", {}, None)
    c.check("type-bodiless-interrupt-passes", status == 200, status)


def check_metrics(c, srv, routes):
    port = srv.port
    before = srv.resources()
    count = 0
    sock = None
    hostile = [b"/x%d", b"/sdapi/v1/%d", b"/\xff\xfe%d", b"/metrics/%d", b"/sdapi/v1/txt2img/%d", b"/%d\xc3"]
    methods = [b"GET", b"OPTIONS", b"POST", b"DELETE"]
    t0 = time.time()
    while count < 10000:
        if sock is None:
            sock = socket.create_connection(("127.0.0.1", port), timeout=30)
            f = sock.makefile("rb")
            on_conn = 0
        path = hostile[count % len(hostile)] % count
        method = methods[count % len(methods)]
        head = method + b" " + path + b" HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:3000\r\n"
        head += b"Content-Length: 0\r\n\r\n" if method in (b"POST", b"DELETE") else b"\r\n"
        sock.sendall(head)
        line = f.readline()
        length = 0
        close = False
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                break
            name, _, value = h.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
            if name.lower() == b"connection" and b"close" in value.lower():
                close = True
        f.read(length)
        count += 1
        on_conn += 1
        if close or not line or on_conn >= 90:
            sock.close()
            sock = None
    if sock:
        sock.close()
    took = time.time() - t0
    # Statuses as sent: a body above the limit (413), an encoded body (415), a foreign Host (421).
    send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json", "Content-Length": str(2 << 20)})
    send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json", "Content-Encoding": "gzip"}, b"xx")
    send(port, "GET", "/sdapi/v1/options", host="evil.example")
    raw = http_request(port, "GET", "/metrics", timeout=30)[2]
    try:
        text = raw.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        text, utf8 = raw.decode("utf-8", "replace"), False
    c.check("metrics-valid-utf8", utf8)
    series = [l for l in text.splitlines() if l.startswith("moss_http_requests_total{")]
    labels = {re.search(r'route="([^"]*)"', l).group(1) for l in series}
    allowed = {p for _, p in routes} | {"other"}
    c.check(f"metrics-labels-fixed-set ({count} requests in {took:.1f} s, {len(series)} series)",
            labels <= allowed and len(series) <= 4 * len(allowed), sorted(labels - allowed)[:5])
    statuses = {re.search(r'status="([^"]*)"', l).group(1) for l in series}
    c.check("metrics-statuses-as-sent", {"413", "415", "421"} <= statuses, sorted(statuses))
    try:
        sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))
        from prometheus_client.parser import text_string_to_metric_families
        families = list(text_string_to_metric_families(text))
        c.check("metrics-parses", any(f.name == "moss_http_requests" for f in families), [f.name for f in families])
    except ImportError:
        c.check("metrics-parses (no prometheus_client: the format's own rules)",
                all(re.match(r'^(#.*|[a-z_]+(\{[^}]*\})? [0-9.e+-]+|)$', l) for l in text.splitlines()))
    after = srv.resources()
    c.check("metrics-memory-flat", after[0] - before[0] < 8 * 1024, (before, after))


def check_log(c, binary, model):
    srv = Server(binary, model, ["--sampler-fallback", "euler"])
    try:
        forged = "DDIM\nserve: forged line\x1b[2J\x1b]0;title\x07\u009b31m\r"
        status, _, _ = send(srv.port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json"},
                            json.dumps({"prompt": "x\ny", "sampler_name": forged, "steps": 0}).encode())
        send(srv.port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json"},
             json.dumps({"prompt": "x", "sampler_name": forged, "scheduler": "karras\nforged"}).encode())
        time.sleep(0.3)
        out = srv.output()
    finally:
        srv.stop()
    lines = out.splitlines()
    c.check("log-no-control-characters", not re.search("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]", out),
            [l for l in lines if re.search("[\x00-\x08\x0b-\x1f\x7f]", l)][:3])
    c.check("log-no-forged-line", not any(l.startswith("serve: forged") or l.startswith("forged") for l in lines),
            [l for l in lines if "forged" in l])
    c.check("log-escaped-visibly", any("\\nserve: forged line\\e[2J" in l for l in lines),
            [l for l in lines if "forged" in l][:3])


def check_numbers(c, srv, binary, model):
    port = srv.port
    cases = [({"prompt": "x", "steps": 1e400}, "steps"), ({"prompt": "x", "cfg_scale": -1e400}, "cfg_scale"),
             ({"prompt": "x", "seed": 1e999}, "seed"), ({"prompt": "x", "width": 2e308}, "width"),
             ({"prompt": "x", "override_settings": {"CLIP_stop_at_last_layers": 1e400}},
              "override_settings.CLIP_stop_at_last_layers"),
             ({"prompt": "x", "alwayson_scripts": {"a": {"args": [1, 1e400]}}}, "alwayson_scripts.a.args")]
    for body, field in cases:
        text = json.dumps(body).replace("Infinity", "1e400").encode()
        status, _, err = send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json"}, text)
        c.check(f"number-out-of-range-422 {field}", status == 422 and err.get("field") == field and
                "out of range" in err.get("error", "") and field in err.get("error", ""), (status, err))
    top = 18446744073709551615
    for body in ({"seed": top, "batch_size": 2}, {"seed": top, "n_iter": 3}, {"seed": top - 1, "batch_size": 3},
                 {"seed": top - 5, "batch_size": 2, "n_iter": 4}):
        text = json.dumps({"prompt": "x", **body}).encode()
        status, _, err = send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json"}, text)
        c.check(f"seed-batch-past-2^64-422 {body}", status == 422 and err.get("field") == "seed" and
                "18446744073709551615" in err.get("error", ""), (status, err))
    status, _, err = send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json"},
                          json.dumps({"prompt": "x", "seed": top + 1}).encode())
    c.check("seed-past-2^64-refused", status == 422 and err.get("field") == "seed", (status, err))

    env = dict(os.environ, MOSSINFER_BACKEND="host")
    work = tempfile.mkdtemp()
    run = lambda *args: subprocess.run([*WRAP, binary, "--model", model, *TINY_DEFAULTS, *args], env=env,
                                       capture_output=True, text=True, cwd=work, timeout=300)
    r = run("--prompt", "x", "--seed", str(top), "--batch-count", "2", "-o", os.path.join(work, "b.png"))
    c.check("cli-batch-seed-past-2^64-exit-2", r.returncode == 2 and "--seed" in r.stderr and
            "18446744073709551615" in r.stderr and not os.listdir(work), (r.returncode, r.stderr[-300:]))
    jobs = os.path.join(work, "jobs.jsonl")
    for name, second in (("number", '{"prompt": "x", "steps": 1e400}'),
                         ("seed", '{"prompt": "x", "seed": 18446744073709551615, "batch_size": 2}')):
        with open(jobs, "w") as f:
            f.write('{"prompt": "x"}\n' + second + "\n")
        r = run("--jobs", inside(jobs), "-o", os.path.join(work, "j%d.png"))
        c.check(f"jobs-{name}-FILE:LINE-exit-2", r.returncode == 2 and f"{inside(jobs)}:2:" in r.stderr and
                not glob.glob(os.path.join(work, "*.png")), (r.returncode, r.stderr[-300:]))


def check_half_close(c, srv):
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=120)
    body = b'{"prompt": "half closed", "seed": 7}'
    sock.sendall(b"POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    sock.shutdown(socket.SHUT_WR)
    data = read_until_closed(sock)
    sock.close()
    final = re.findall(rb"HTTP/1\.1 (\d{3})", data)
    c.check("half-close-gets-its-answer", final and final[-1] == b"200" and b'"images"' in data, data[:200])


def check_waiting(c, srv):
    # A long request runs; two short ones wait: /progress says 2 waiting; an interrupt ends the long
    # one, the two run, and it says 0.
    port = srv.port
    results = []
    go = lambda steps: results.append(send(port, "POST", "/sdapi/v1/txt2img", {"Content-Type": "application/json"},
                                           json.dumps({"prompt": "x", "steps": steps}).encode(), timeout=300)[0])
    long_one = threading.Thread(target=go, args=(400,))
    long_one.start()
    deadline = time.time() + 60
    while time.time() < deadline and not send(port, "GET", "/sdapi/v1/progress")[2]["state"]["job"]:
        time.sleep(0.05)
    short = [threading.Thread(target=go, args=(1,)) for _ in range(2)]
    for t in short:
        t.start()
    seen = set()
    deadline = time.time() + 60
    while time.time() < deadline and 2 not in seen:
        seen.add(send(port, "GET", "/sdapi/v1/progress")[2].get("requests_waiting"))
        time.sleep(0.05)
    send(port, "POST", "/sdapi/v1/interrupt")
    for t in [long_one, *short]:
        t.join()
    _, _, p = send(port, "GET", "/sdapi/v1/progress")
    c.check("progress-requests-waiting-is-the-queue", 2 in seen and p.get("requests_waiting") == 0 and
            results == [200, 200, 200] and all(isinstance(n, int) and 0 <= n <= 2 for n in seen),
            (sorted(map(str, seen)), results, p))


def basic(user_pass):
    return "Basic " + base64.b64encode(user_pass.encode()).decode()


def check_auth(c, binary, model, routes):
    work = tempfile.mkdtemp()
    auth_file = os.path.join(work, "auth")
    with open(auth_file, "w") as f:
        f.write("# the team\ncarol:fi:le\n\n")
    srv = Server(binary, model, ["--api-auth", "alice:s3cret,bob:pa:ss", "--api-auth-file", inside(auth_file)])
    open_routes = {"/health", "/internal/ping", "/metrics"}
    # An image URL's random id is its key (docs/security.md): open, but a made-up id finds nothing
    # (openai_images_test downloads a real one without credentials).
    capability_routes = {"/v1/images/file"}
    try:
        bad = [None, basic("alice:wrong"), basic("mallory:s3cret"), basic("alice:s3cre"), basic("alice:s3cret "),
               "Basic not-base64!", "Basic " + base64.b64encode(b"alices3cret").decode(), "Bearer wrong",
               "Bearer ", "Digest alice", basic("bob:pa"), "Bearer alice:s3cret"]
        failures = []
        for method, path in routes:
            if path in open_routes or path in capability_routes:
                continue
            for auth in bad:
                headers = {"Content-Type": "application/json"} if method != "GET" else {}
                if auth:
                    headers["Authorization"] = auth
                status, hdrs, err = send(srv.port, method, path, headers, VALID_BODY if method != "GET" else None)
                if status != 401 or not hdrs.get("www-authenticate", "").startswith("Basic") or \
                        "s3cret" in json.dumps(err):
                    failures.append((method, path, auth, status))
        c.check(f"auth-refused-401 ({len(routes) - len(open_routes) - len(capability_routes)} routes x "
                f"{len(bad)} credentials)",
                not failures, failures[:3])
        for path in open_routes:
            status, _, _ = send(srv.port, "GET", path)
            c.check(f"auth-open-route {path}", status == 200, status)
        for path in capability_routes:
            status, _, err = send(srv.port, "GET", path + "?id=" + "0" * 32)
            c.check(f"auth-capability-route {path} made-up id", status == 404 and "s3cret" not in json.dumps(err), status)
        good = [basic("alice:s3cret"), basic("bob:pa:ss"), basic("carol:fi:le"), "Bearer s3cret", "bearer pa:ss",
                "BASIC " + base64.b64encode(b"alice:s3cret").decode()]
        for auth in good:
            status, _, _ = send(srv.port, "GET", "/sdapi/v1/options", {"Authorization": auth})
            status2, _, _ = send(srv.port, "POST", "/sdapi/v1/interrupt", {"Authorization": auth})
            c.check(f"auth-accepted {auth.split()[0]}", status == 200 and status2 == 200, (auth, status, status2))
        status, _, _ = send(srv.port, "OPTIONS", "/sdapi/v1/txt2img", {"Origin": "http://localhost:3000"})
        c.check("auth-preflight-not-asked", status != 401, status)
        c.check("auth-nothing-computed", images_made(srv.port) == 0)
    finally:
        code = srv.stop()
    c.check("auth-server-drains", code == 0, code)
    srv = Server(binary, model, ["--api-auth", "alice:s3cret", "--metrics-auth"])
    try:
        status, _, _ = send(srv.port, "GET", "/metrics")
        status2, _, _ = send(srv.port, "GET", "/metrics", {"Authorization": basic("alice:s3cret")})
        status3, _, _ = send(srv.port, "GET", "/health")
        c.check("auth-metrics-auth", status == 401 and status2 == 200 and status3 == 200, (status, status2, status3))
    finally:
        srv.stop()
    # Beyond loopback: without credentials a warning that says how to add them; with them, none.
    for extra, warned in ((["--host", "0.0.0.0"], True), (["--host", "0.0.0.0", "--api-auth", "a:b"], False)):
        srv = Server(binary, model, extra)
        time.sleep(0.2)
        out = srv.output()
        srv.stop()
        says = "reachable from other machines" in out and "--api-auth USER:PASS" in out and "--api-auth-file" in out
        c.check(f"auth-beyond-loopback-warning {'without' if warned else 'with'} credentials", says == warned, out[-400:])
    # Refused values: exit 2 naming the flag, never echoing the password.
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    empty = os.path.join(work, "empty")
    open(empty, "w").write("# nobody\n")
    for args in (["--api-auth", "alice"], ["--api-auth", ":pw9731"], ["--api-auth", "alice:"],
                 ["--api-auth", "alice:pw9731,"], ["--api-auth", "al\x01ice:pw9731"],
                 ["--api-auth-file", inside(os.path.join(work, "missing"))], ["--api-auth-file", inside(empty)],
                 ["--metrics-auth=yes"]):
        r = subprocess.run([*WRAP, binary, "serve", "--model", model, "--port", "1", *args], env=env,
                           capture_output=True, text=True, timeout=60)
        c.check(f"auth-bad-value-exit-2 {args[0]}", r.returncode == 2 and args[0].split("=")[0] in r.stderr and
                "pw9731" not in r.stderr, (args, r.returncode, r.stderr[-200:]))


def check_cors_values(c, binary, model):
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    for value in ("http://localhost:3000/", "not a url", "HTTP://localhost", "http://Localhost:3000", "ftp://x",
                  "http://", "http://x/path", "http://user@x", "http://x:99999", "http://x:80", "https://x:443",
                  "http://x:", "http://x?q", "http://[::1", "null"):
        r = subprocess.run([*WRAP, binary, "serve", "--model", model, "--port", "1", "--cors-origin", value], env=env,
                           capture_output=True, text=True, timeout=60)
        c.check(f"cors-origin-refused-exit-2 {value!r}", r.returncode == 2 and f"--cors-origin '{value}'" in r.stderr,
                (r.returncode, r.stderr[-200:]))
    accepted = ("http://localhost:3000", "https://a.example", "http://[::1]:8080", "*", "http://127.0.0.1")
    srv = Server(binary, model, [a for v in accepted for a in ("--cors-origin", v)])
    status, headers, _ = send(srv.port, "GET", "/health", {"Origin": "http://[::1]:8080"})
    c.check(f"cors-origins-accepted {accepted}", srv.stop() == 0 and status == 200 and
            headers.get("access-control-allow-origin") == "*", dict(headers))


def check_output(c, binary, model):
    """The output check before compute: another user's file in a sticky folder (run as nobody, where
    this test runs as root), and the file system's free space (a 1 MiB tmpfs in a mount namespace
    of its own, where unshare may mount one). Each case says SKIP where it cannot be set up."""
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    cli = [binary, "--model", model, *TINY_DEFAULTS, "--prompt", "x", "--quiet"]
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    def reachable():  # nobody can run the binary and read every file of the model
        runs = subprocess.run([*nobody, binary, "--version"], capture_output=True).returncode == 0
        unreadable = subprocess.run([*nobody, "find", model, "-not", "-readable", "-print", "-quit"],
                                    capture_output=True, text=True)
        return runs and unreadable.returncode == 0 and not unreadable.stdout.strip()
    if os.geteuid() == 0 and shutil.which("setpriv") and not WRAP and reachable():
        top = tempfile.mkdtemp()
        os.chmod(top, 0o755)
        sticky = os.path.join(top, "shared")
        os.mkdir(sticky)
        os.chmod(sticky, 0o1777)
        theirs = os.path.join(sticky, "theirs.png")
        open(theirs, "wb").write(b"root's")
        r = subprocess.run([*nobody, *cli, "-o", theirs], env=dict(env, HOME=top), capture_output=True, text=True,
                           timeout=300)
        c.check("output-sticky-other-users-file-exit-2", r.returncode == 2 and "belongs to another user (uid 0)" in
                r.stderr and "sticky" in r.stderr and open(theirs, "rb").read() == b"root's", (r.returncode, r.stderr))
        r = subprocess.run([*nobody, *cli, "-o", os.path.join(sticky, "mine.png")], env=dict(env, HOME=top),
                           capture_output=True, text=True, timeout=300)
        c.check("output-sticky-own-new-file-ok", r.returncode == 0, (r.returncode, r.stderr))
        r = subprocess.run([*nobody, *cli, "-o", os.path.join(sticky, "mine.png")], env=dict(env, HOME=top),
                           capture_output=True, text=True, timeout=300)
        c.check("output-sticky-own-file-replaced", r.returncode == 0, (r.returncode, r.stderr))
    else:
        print("SKIP output-sticky: needs root, setpriv, and the binary and model readable by nobody")
    mnt = tempfile.mkdtemp()
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m none {mnt}"], capture_output=True)
    if probe.returncode == 0 and shutil.which("unshare") and not WRAP:
        script = (f'mount -t tmpfs -o size=1m none {mnt} && "$@" -o {mnt}/big.png --size 640x640; echo "rc=$?"; '
                  f'"$@" -o {mnt}/small.png --size 32x32; echo "rc=$?"; ls {mnt}')
        unsized = [binary, "--model", model, "--skip-layers", "2", "--steps", "2", "--prompt", "x", "--quiet"]
        r = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *unsized], env=env, capture_output=True,
                           text=True, timeout=300)
        c.check("output-free-space-before-compute", "rc=1" in r.stdout and "bytes free" in r.stderr and
                "need up to" in r.stderr and "big.png" not in r.stdout.split("rc=")[-1], (r.stdout, r.stderr[-300:]))
        c.check("output-free-space-enough-runs", r.stdout.count("rc=0") == 1 and "small.png" in r.stdout,
                (r.stdout, r.stderr[-300:]))
    else:
        print("SKIP output-free-space: unshare cannot mount a tmpfs here")


def main():
    binary, model = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    c = Checks()
    routes = server_routes()
    c.check(f"routes-read-from-the-sources ({len(routes)})", len(routes) >= 25 and ("POST", "/sdapi/v1/txt2img") in routes,
            routes)
    t0 = time.time()

    def timed(name):
        nonlocal t0
        print(f"({name}: {time.time() - t0:.1f} s)")
        t0 = time.time()

    srv = Server(binary, model, ["--allowed-host", "moss.lan", "--cors-origin", "http://localhost:3000"])
    try:
        check_host(c, srv, routes)
        timed("host")
        check_origin(c, srv, routes)
        check_types(c, srv, routes)
        c.check("refused-nothing-computed", images_made(srv.port) == 0)
        timed("origin, type")
        check_numbers(c, srv, binary, model)
        c.check("refused-numbers-nothing-computed", images_made(srv.port) == 0)
        timed("numbers")
        check_metrics(c, srv, routes)
        timed("metrics")
        check_half_close(c, srv)
        check_waiting(c, srv)
        timed("half-close, waiting")
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    check_auth(c, binary, model, routes)
    timed("auth")
    check_cors_values(c, binary, model)
    timed("cors")
    check_log(c, binary, model)
    timed("log")
    check_output(c, binary, model)
    timed("output")
    c.finish()


if __name__ == "__main__":
    main()
