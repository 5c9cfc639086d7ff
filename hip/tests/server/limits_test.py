#!/usr/bin/env python3
"""The server's limits by class (issue 35; README "Server limits"), over raw sockets so that every
byte of the request is the test's. Each class generates its cases and each case checks the
contract: the status, a JSON error naming the problem, the connection closed after a refusal,
no hang (every read has a deadline), and the other clients still served.

  listen       a second serve on a port in use exits 1 naming the address, the first keeps all
               the traffic; a non-loopback --host warns that there is no authentication
  connections  slow heads, slow bodies, idle and many connections, from one address and from
               many (clients bind 127.0.0.x): deadlines per head and body, caps per address and
               in total, the reserve for the light routes
  encodings    Content-Encoding other than identity: 415, whatever the body (a gzip bomb too)
  framing      ambiguous or malformed framing (smuggling shapes): 400 / 501 / 413, closed
  methods      a wrong method on each known route: 405 with Allow; unknown methods 501
  headers      oversized request line, header line, head, field count: 414 / 431
  records      /sd-models names the folder only (the server runs on MODEL_DIR/); a NUL in a
               prompt: the PNG's parameters text is whole, the generation record exact
Usage: limits_test.py BINARY MODEL_DIR"""
import gzip
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib

from harness import Server, Checks, TINY_DEFAULTS, b64png, free_port, read_until_closed

HEAD_S, BODY_S, IDLE_S = 10, 20, 5        # StreamDeadlines (server/deadline_stream.h)
PER_ADDRESS, TOTAL, RESERVE_PER_ADDRESS = 24, 64, 2  # SlotLimits (server/connection_slots.h)
RESERVE_HEAD_S = 2  # a reserve connection's head deadline (server/guarded_server.cpp)
MAX_BODY = 1 << 20


def connect(srv, source="127.0.0.1", timeout=10):
    s = socket.socket()
    s.settimeout(timeout)
    s.bind((source, 0))
    s.connect(("127.0.0.1", srv.port))
    return s


def read_response(s):
    """(status, headers dict lower-case, body bytes) of one response, or (None, {}, b"") when the
    connection closes (or resets) before a whole head."""
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return None, {}, data
            data += chunk
    except (ConnectionResetError, socket.timeout):
        return None, {}, data
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    n = int(headers.get("content-length", 0))
    try:
        while len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    return status, headers, body[:n]


def closed_after(s, wait=3):
    """True when the server closes the connection (EOF or reset) within `wait` seconds."""
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def exchange(srv, raw, source="127.0.0.1", check_close=True):
    s = connect(srv, source)
    try:
        s.sendall(raw)
    except OSError:
        pass
    status, headers, body = read_response(s)
    closed = status is not None and check_close and closed_after(s)
    s.close()
    try:
        parsed = json.loads(body)
        err = parsed.get("error", "") if isinstance(parsed, dict) else ""
    except ValueError:
        err = ""
    return status, headers, err, closed


def head(method, path, fields=(), version="HTTP/1.1"):
    # A POST says its body is JSON (else 415 before its framing is read: docs/security.md).
    typed = method == "POST" and not any(f.lower().startswith("content-type") for f in fields)
    lines = [f"{method} {path} {version}", "Host: localhost", *fields, *(["Content-Type: application/json"] if typed else [])]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def quick_ok(srv, c, name, source="127.0.0.1", limit=3.0):
    """The light route answers promptly: GET /sdapi/v1/progress is 200 within `limit` s."""
    t0 = time.time()
    status, _, _, _ = exchange(srv, head("GET", "/sdapi/v1/progress"), source, check_close=False)
    took = time.time() - t0
    return c.check(name, status == 200 and took < limit, (status, round(took, 2)))


TXT2IMG = json.dumps({"prompt": "a red apple", "seed": 3, "steps": 1, "width": 32, "height": 32}).encode()


def post(path, body, fields=()):
    return head("POST", path, ["Content-Type: application/json", f"Content-Length: {len(body)}", *fields]) + body


# ---- listen -----------------------------------------------------------------------------------
def check_listen(c, srv, binary, model):
    env = dict(os.environ, MOSSINFER_BACKEND="host")

    def first_answers():  # how many of 8 tiny images the first server makes (its log counts them)
        before = srv.output().count("txt2img: 1 of 1 images")
        statuses = [exchange(srv, post("/sdapi/v1/txt2img", TXT2IMG))[0] for _ in range(8)]
        return statuses, srv.output().count("txt2img: 1 of 1 images") - before

    for host in ["127.0.0.1", "0.0.0.0"]:
        second = subprocess.Popen([binary, "serve", "--model", model, "--host", host, "--port", str(srv.port),
                                   *TINY_DEFAULTS], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            code = second.wait(30)
        except subprocess.TimeoutExpired:
            code = None  # it listens too: does the first keep the traffic?
        statuses, first = first_answers()
        if code is None:
            second.terminate()
            second.wait(60)
        err = second.stderr.read()
        want = f"serve: cannot listen on {host}:{srv.port}: the port is in use"
        c.check(f"listen-in-use-{host}", code == 1 and want in err, (code, err[-300:]))
        c.check(f"listen-in-use-{host}-first-keeps-traffic", statuses == [200] * 8 and first == 8, (statuses, first))
    p = subprocess.run([binary, "serve", "--model", model, "--host", "192.0.2.1", "--port", str(free_port()),
                        *TINY_DEFAULTS], capture_output=True, text=True, env=env, timeout=60)
    c.check("listen-not-local", p.returncode == 1 and "not an address of this machine" in p.stderr,
            (p.returncode, p.stderr[-300:]))
    for host, warns in [("0.0.0.0", True), ("127.0.0.1", False)]:
        other = Server(binary, model, ["--host", host])
        text = other.output()
        code = other.stop()
        c.check(f"listen-warning-{host}", ("no authentication" in text) == warns and code == 0, (code, text[-300:]))


# ---- connections ------------------------------------------------------------------------------
class Trickle(threading.Thread):
    """A connection that sends `data` one byte per `every` seconds and records what it got."""

    def __init__(self, srv, source, data, every=1.0):
        super().__init__(daemon=True)
        self.sock = connect(srv, source, timeout=HEAD_S + BODY_S + 10)
        self.data, self.every = data, every
        self.status, self.at = None, None
        self.t0 = time.time()

    def run(self):
        for b in self.data:
            try:
                self.sock.sendall(bytes([b]))
            except OSError:
                break
            self.sock.settimeout(self.every)
            try:
                got = self.sock.recv(65536, socket.MSG_PEEK)
            except socket.timeout:
                continue
            except OSError:
                break
            if got is not None:
                break
        self.sock.settimeout(HEAD_S + BODY_S + 10)
        self.status = read_response(self.sock)[0]
        self.at = time.time() - self.t0
        self.sock.close()


def slow_head():
    return head("GET", "/sdapi/v1/progress", [f"X-Slow-{i}: {i}" for i in range(40)])


def check_connections(c, srv, binary, model):
    # Slow heads from one address (the 32 clients, here 40): those beyond its share are
    # refused at once, the rest get 408 at the head deadline; other addresses are served all along.
    attackers = [Trickle(srv, "127.0.0.2", slow_head()) for _ in range(40)]
    for t in attackers:
        t.start()
    time.sleep(2)
    quick_ok(srv, c, "slow-heads-progress-answered", source="127.0.0.1")
    t0 = time.time()
    status, _, _, _ = exchange(srv, post("/sdapi/v1/txt2img", TXT2IMG))
    c.check("slow-heads-txt2img-answered", status == 200, (status, round(time.time() - t0, 1)))
    for t in attackers:
        t.join(HEAD_S + 15)
    refused = [t for t in attackers if t.status == 503 and t.at < 3]
    timed_out = [t for t in attackers if t.status == 408 and HEAD_S - 1 < t.at < HEAD_S + 4]
    reserve = [t for t in attackers if t.status == 408 and RESERVE_HEAD_S - 1 < t.at < RESERVE_HEAD_S + 3]
    summary = sorted((t.status, round(t.at or -1, 1)) for t in attackers)
    c.check("slow-heads-share-refused-503", len(refused) == 40 - PER_ADDRESS - RESERVE_PER_ADDRESS, summary)
    c.check("slow-heads-held-get-408-at-deadline", len(timed_out) == PER_ADDRESS, summary)
    c.check("slow-heads-reserve-408-at-its-deadline", len(reserve) == RESERVE_PER_ADDRESS, summary)

    # The same address as the victim: an answer (503 or 200) at once, never a hang.
    attackers = [Trickle(srv, "127.0.0.1", slow_head()) for _ in range(32)]
    for t in attackers:
        t.start()
    time.sleep(2)
    t0 = time.time()
    status, _, err, _ = exchange(srv, head("GET", "/sdapi/v1/progress"), check_close=False)
    c.check("slow-heads-same-address-answered", status in (200, 503) and time.time() - t0 < 3,
            (status, err, round(time.time() - t0, 2)))
    for t in attackers:
        t.join(HEAD_S + 15)

    # A slow body: 408 at the body deadline (not per byte), others served meanwhile.
    body = b"x" * 100
    slow = Trickle(srv, "127.0.0.3", b"", 1)
    slow.sock.sendall(post("/sdapi/v1/txt2img", body)[:-len(body)])
    slow.data = body
    slow.start()
    time.sleep(1)
    quick_ok(srv, c, "slow-body-others-served")
    slow.join(BODY_S + 15)
    c.check("slow-body-408-at-deadline", slow.status == 408 and BODY_S - 1 < slow.at < BODY_S + 4,
            (slow.status, slow.at))

    # Idle connections: closed without an answer after the idle time.
    idle = connect(srv, "127.0.0.4", timeout=IDLE_S + 10)
    t0 = time.time()
    gone = closed_after(idle, IDLE_S + 5)
    c.check("idle-closed", gone and IDLE_S - 1 < time.time() - t0 < IDLE_S + 3, round(time.time() - t0, 1))
    idle.close()

    # Many connections from many addresses fill the ordinary slots: the light routes are still
    # answered (the reserve), anything else gets 503 naming the reason; then all is as before.
    time.sleep(2)  # the connections of the cases before have gone (their close lingers up to 1 s)
    holders = [Trickle(srv, f"127.0.1.{i}", slow_head()) for i in range(1, TOTAL // 8 + 1) for _ in range(8)]
    for t in holders:
        t.start()
    time.sleep(2)
    quick_ok(srv, c, "full-progress-on-reserve", source="127.0.0.5")
    status, _, err, _ = exchange(srv, head("GET", "/sdapi/v1/samplers"), "127.0.0.5")
    early = [(t.status, round(t.at, 1)) for t in holders if t.at is not None]  # a holder not in an ordinary slot
    c.check("full-others-503", status == 503 and "busy" in err, (status, err, early))
    status, _, err, _ = exchange(srv, post("/sdapi/v1/interrupt", b""), "127.0.0.6")
    c.check("full-interrupt-on-reserve", status == 200, (status, err))
    for t in holders:
        t.join(HEAD_S + 15)
    status, _, _, _ = exchange(srv, head("GET", "/sdapi/v1/samplers"), "127.0.0.5")
    c.check("full-recovered", status == 200, status)
    c.check("connections-server-alive", srv.proc.poll() is None)


# ---- encodings --------------------------------------------------------------------------------
def check_encodings(c, srv, binary, model):
    bomb = gzip.compress(b"{\"prompt\": \"" + b" " * (200 << 20) + b"\"}", 9)  # 200 MB as ~200 KB
    bodies = {"gzip": gzip.compress(TXT2IMG), "deflate": zlib.compress(TXT2IMG), "br": TXT2IMG}
    rss0, _ = srv.resources()
    for coding in ["gzip", "deflate", "br", "x-gzip", "compress", "GZIP", "gzip, identity", "identity, gzip",
                   "identity;q=1", "bomb"]:
        body = bomb if coding == "bomb" else bodies.get(coding.lower(), TXT2IMG)
        status, _, err, closed = exchange(srv, post("/sdapi/v1/txt2img", body,
                                                    [f"Content-Encoding: {'gzip' if coding == 'bomb' else coding}"]))
        c.check(f"encoding-{coding}-415", status == 415 and "Content-Encoding" in err and closed, (status, err, closed))
    rss1, _ = srv.resources()
    c.check("encoding-bomb-not-expanded", rss1 - rss0 < 64 * 1024, (rss0, rss1))
    for coding in ["identity", "Identity"]:
        status, _, err, _ = exchange(srv, post("/sdapi/v1/txt2img", TXT2IMG, [f"Content-Encoding: {coding}"]))
        c.check(f"encoding-{coding}-accepted", status == 200, (status, err))
    chunked = head("POST", "/sdapi/v1/txt2img", ["Transfer-Encoding: chunked", "Content-Encoding: gzip"]) + \
        b"%x\r\n" % len(bodies["gzip"]) + bodies["gzip"] + b"\r\n0\r\n\r\n"
    status, _, err, closed = exchange(srv, chunked)
    c.check("encoding-gzip-chunked-415", status == 415 and closed, (status, err))


# ---- framing ----------------------------------------------------------------------------------
def chunks(data, size):
    out = b""
    for i in range(0, len(data), size):
        part = data[i:i + size]
        out += b"%x\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\n\r\n"


def check_framing(c, srv, binary, model):
    body = TXT2IMG
    n = len(body)
    cases = [  # (name, raw request, status, what the error says)
        ("cl-and-te", head("POST", "/sdapi/v1/txt2img", [f"Content-Length: {n}", "Transfer-Encoding: chunked"])
         + chunks(body, 64), 400, "Transfer-Encoding"),
        ("te-and-cl", head("POST", "/sdapi/v1/txt2img", ["Transfer-Encoding: chunked", f"Content-Length: {n}"])
         + chunks(body, 64), 400, "Transfer-Encoding"),
        ("cl-twice-same", head("POST", "/sdapi/v1/txt2img", [f"Content-Length: {n}"] * 2) + body, 400, "two Content-Length"),
        ("cl-twice-differ", head("POST", "/sdapi/v1/txt2img", [f"Content-Length: {n}", "Content-Length: 5"]) + body,
         400, "two Content-Length"),
        ("te-twice", head("POST", "/sdapi/v1/txt2img", ["Transfer-Encoding: chunked"] * 2) + chunks(body, 64), 400,
         "two Transfer-Encoding"),
        ("te-http10", head("POST", "/sdapi/v1/txt2img", ["Transfer-Encoding: chunked"], "HTTP/1.0") + chunks(body, 64),
         400, "HTTP/1.0"),
        ("space-before-colon", head("POST", "/sdapi/v1/txt2img", [f"Content-Length : {n}"]) + body, 400, "not a token"),
        ("tab-before-colon", head("POST", "/sdapi/v1/txt2img", [f"Transfer-Encoding\t: chunked"]) + chunks(body, 64),
         400, "not a token"),
        ("obs-fold", head("POST", "/sdapi/v1/txt2img", ["X-Folded: a", " chunked"]) + chunks(body, 64), 400,
         "folding"),
        ("no-colon", head("GET", "/sdapi/v1/samplers", ["Transfer-Encoding chunked"]), 400, "without a colon"),
        ("bare-lf", f"POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: localhost\nContent-Length: {n}\r\n\r\n".encode() + body, 400,
         "bare LF"),
        ("cr-inside", head("GET", "/sdapi/v1/samplers", ["X-A: a\rContent-Length: 5"]), 400, "CR inside"),
        ("nul-in-head", head("GET", "/sdapi/v1/samplers", ["X-A: a\0b"]), 400, "NUL"),
    ]
    for value in ["+5", "-1", "0x10", "5, 5", "1e3", "%35", "5 5", "", "99999999999999999999"]:
        cases.append((f"cl-{value or 'empty'}", head("POST", "/sdapi/v1/txt2img", [f"Content-Length: {value}"]) + body,
                      400, "Content-Length"))
    for value in ["gzip, chunked", "chunked, identity", "identity", "xchunked", "chunked;q=1"]:
        cases.append((f"te-{value}", head("POST", "/sdapi/v1/txt2img", [f"Transfer-Encoding: {value}"])
                      + chunks(body, 64), 501, "Transfer-Encoding"))
    te = head("POST", "/sdapi/v1/txt2img", ["Transfer-Encoding: chunked"])
    cases += [
        ("chunk-size-junk", te + b"zz\r\n" + body + b"\r\n0\r\n\r\n", 400, "chunk size"),
        ("chunk-size-0x", te + b"0x5\r\nabcde\r\n0\r\n\r\n", 400, "chunk size"),
        ("chunk-size-space", te + b" 5\r\nabcde\r\n0\r\n\r\n", 400, "chunk size"),
        ("chunk-size-negative", te + b"-1\r\nabcde\r\n0\r\n\r\n", 400, "chunk size"),
        ("chunk-size-huge", te + b"ffffffffffffffffff\r\n", 400, "chunk size"),
        ("chunk-size-long-line", te + b"5;" + b"x" * 300 + b"\r\n", 400, "chunk-size line"),
        ("chunk-no-crlf-after-data", te + b"5\r\nabcdeXY0\r\n\r\n", 400, "CRLF"),
        ("chunk-trailer", te + chunks(body, 64)[:-2] + b"X-T: 1\r\n\r\n", 400, "trailer"),
        ("chunked-over-limit", te + chunks(b"x" * (MAX_BODY + 1), 4096), 413, "longer than"),
        ("chunked-over-limit-one-chunk", te + b"%x\r\n" % (MAX_BODY + 1), 413, "longer than"),
        ("cl-over-limit-no-body", head("POST", "/sdapi/v1/txt2img", [f"Content-Length: {MAX_BODY + 1}"]), 413,
         "limit"),
        ("cl-huge-no-body", head("POST", "/sdapi/v1/txt2img", ["Content-Length: 999999999999999999"]), 413, "limit"),
        ("http2-version", head("GET", "/sdapi/v1/samplers", version="HTTP/2.0"), 505, "HTTP version"),
        ("bad-request-line", b"GET  /sdapi/v1/samplers HTTP/1.1\r\nHost: localhost\r\n\r\n", 400, "request line"),
    ]
    for name, raw, want, says in cases:
        status, _, err, closed = exchange(srv, raw)
        c.check(f"framing-{name}", status == want and says in err and closed, (status, err, closed))

    # Accepted framings give the same image as a plain body.
    ok = {}
    ok["plain"] = exchange(srv, post("/sdapi/v1/txt2img", body))[0]
    ok["chunked-1"] = exchange(srv, te + chunks(body, 1))[0]
    ok["chunked-ext"] = exchange(srv, te + chunks(body, 64).replace(b"\r\n", b";x=1\r\n", 1))[0]
    ok["te-Chunked"] = exchange(srv, head("POST", "/sdapi/v1/txt2img", ["Transfer-Encoding: Chunked"])
                                + chunks(body, 64))[0]
    ok["post-no-length"] = exchange(srv, head("POST", "/sdapi/v1/interrupt"))[0]
    c.check("framing-accepted-forms", all(v == 200 for v in ok.values()), ok)

    # A body the route does not read is never parsed as the next request (the connection closes);
    # pipelined requests without bodies are each answered.
    s = connect(srv)
    s.sendall(head("GET", "/sdapi/v1/samplers", ["Content-Length: 45"]) + head("GET", "/sdapi/v1/progress"))
    first = read_response(s)[0]
    c.check("framing-get-body-not-a-request", first == 200 and closed_after(s), first)
    s.close()
    s = connect(srv)
    s.sendall(head("GET", "/sdapi/v1/samplers") + head("GET", "/sdapi/v1/progress", ["Connection: close"]))
    everything = read_until_closed(s)
    both = re.findall(rb"HTTP/1\.1 (\d{3}) ", everything)
    c.check("framing-pipelined-both-answered", both == [b"200", b"200"], both)
    s.close()


# ---- methods ----------------------------------------------------------------------------------
ROUTES = {"/sdapi/v1/txt2img": ["POST"], "/sdapi/v1/progress": ["GET"], "/sdapi/v1/interrupt": ["POST"],
          "/sdapi/v1/sd-models": ["GET"], "/sdapi/v1/samplers": ["GET"], "/sdapi/v1/schedulers": ["GET"],
          "/sdapi/v1/scripts": ["GET"], "/sdapi/v1/options": ["GET", "POST"]}


def check_methods(c, srv, binary, model):
    for path, allowed in ROUTES.items():
        for method in ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]:
            if method in allowed:
                continue
            fields = ["Content-Length: 2"] if method in ("POST", "PUT", "PATCH") else []
            raw = head(method, path, fields) + (b"{}" if fields else b"")
            status, headers, err, _ = exchange(srv, raw)
            allow = {m.strip() for m in headers.get("allow", "").split(",")}
            want = set(allowed) | ({"HEAD"} if "GET" in allowed else set())
            c.check(f"method-{method}-{path}", status == 405 and allow == want and "not allowed" in err,
                    (status, headers.get("allow"), err))
    status, headers, _, _ = exchange(srv, head("HEAD", "/sdapi/v1/samplers"))
    c.check("method-HEAD-on-GET-route", status == 200, status)
    for method in ["FOO", "get", "BREW", "CONNECT", "TRACE"]:
        status, _, err, _ = exchange(srv, head(method, "/sdapi/v1/samplers"))
        c.check(f"method-unknown-{method}-501", status == 501 and method in err, (status, err))
    status, _, _, _ = exchange(srv, head("GET", "/sdapi/v1/nothing-here"))
    c.check("method-unknown-path-404", status == 404, status)


# ---- headers ----------------------------------------------------------------------------------
def check_headers(c, srv, binary, model):
    cases = [
        ("request-line-8193", head("GET", "/sdapi/v1/samplers?" + "a" * 8200), 414, "request line"),
        ("request-line-1MB", head("GET", "/" + "a" * (1 << 20)), 414, "request line"),
        ("header-line-8193", head("GET", "/sdapi/v1/samplers", ["X-Big: " + "a" * 8190]), 431, "header line"),
        ("header-line-1MB", head("GET", "/sdapi/v1/samplers", ["X-Big: " + "a" * (1 << 20)]), 431, "header line"),
        ("head-33KB", head("GET", "/sdapi/v1/samplers", [f"X-{i}: " + "a" * 1000 for i in range(34)]), 431,
         "request head"),
        ("fields-101", head("GET", "/sdapi/v1/samplers", [f"X-{i}: 1" for i in range(101)]), 431, "header fields"),
        ("cookie-40KB", head("GET", "/sdapi/v1/samplers", ["Cookie: " + "c=1; " * 1600] * 5), 431, ""),
    ]
    for name, raw, want, says in cases:
        status, _, err, closed = exchange(srv, raw)
        c.check(f"headers-{name}", status == want and says in err and closed, (status, err, closed))
    for name, fields in [("header-line-8000", ["X-Big: " + "a" * 7990]), ("fields-100", [f"X-{i}: 1" for i in range(99)])]:
        status, _, err, _ = exchange(srv, head("GET", "/sdapi/v1/samplers", fields))
        c.check(f"headers-{name}-accepted", status == 200, (status, err))
    quick_ok(srv, c, "headers-server-alive")


# ---- records ----------------------------------------------------------------------------------
def png_texts(data):
    texts, pos = {}, 8
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, chunk = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"tEXt":
            k, _, v = chunk.partition(b"\0")
            texts[k.decode()] = v.decode("latin-1")
        elif kind == b"iTXt":
            k, _, rest = chunk.partition(b"\0")
            rest = rest[2:]  # compression flag and method
            _, _, rest = rest.partition(b"\0")  # language
            _, _, v = rest.partition(b"\0")  # translated keyword
            texts[k.decode()] = v.decode("utf-8")
        pos += 12 + n
    return texts


def check_records(c, srv, binary, model):
    status, r, _ = srv.request("GET", "/sdapi/v1/sd-models")
    m = r[0] if status == 200 and r else {}
    name = os.path.basename(os.path.normpath(model))
    c.check("sd-models-folder-name-only", m.get("filename") == name and m.get("model_name") == name and
            "/" not in m.get("filename", "/"), m)
    for prompt in ["a\0b", "\0", "apple\0\0 pear", "ünï\0cödé"]:
        status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": prompt, "seed": 1, "steps": 1})
        if status != 200:  # a refusal of the NUL is a contract too: 422 naming the prompt
            c.check(f"nul-prompt-{prompt!r}", status == 422 and r and r.get("field") == "prompt", (status, r))
            continue
        texts = png_texts(b64png(r["images"][0]))
        params, record = texts.get("parameters", ""), json.loads(texts.get("generation", "{}"))
        c.check(f"nul-prompt-{prompt!r}-parameters-whole",
                params.startswith(prompt.replace("\0", "\ufffd")) and "Steps: 1" in params, params[:80])
        c.check(f"nul-prompt-{prompt!r}-record-exact", record.get("prompt") == prompt, record.get("prompt"))


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    only = set(sys.argv[3:])
    srv = Server(binary, model.rstrip("/") + "/")  # MODEL_DIR/: /sd-models must still name it
    try:
        for name, check in [("listen", check_listen), ("methods", check_methods), ("headers", check_headers),
                            ("framing", check_framing), ("encodings", check_encodings), ("records", check_records),
                            ("connections", check_connections)]:
            if only and name not in only:
                continue
            before = c.passed + c.failed
            check(c, srv, binary, model)
            print(f"== {name}: {c.passed + c.failed - before} cases")
            sys.stdout.flush()
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)  # idle: the drain ends 2 s after the SIGTERM
    c.finish()


if __name__ == "__main__":
    main()
