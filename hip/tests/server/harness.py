"""A `moss-infer-hip serve` on the tiny model and the host backend, for the server tests, and the
helpers they share (standard library only). Usage of a test: test.py BINARY MODEL_DIR."""
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import zlib
import struct

TINY_DEFAULTS = ["--skip-layers", "2", "--size", "32x32", "--steps", "2"]
# MOSSINFER_TEST_CHROOT=ROOT: the binary (and the model) are paths inside ROOT, and run there through
# chroot (the AMD release's binary in the ROCm root, hip/ci/amd.sh); the network is the host's.
CHROOT = os.environ.get("MOSSINFER_TEST_CHROOT", "")
WRAP = ["chroot", CHROOT] if CHROOT else []


def inside(path):
    """A host path as the binary sees it (under MOSSINFER_TEST_CHROOT, a path in that root)."""
    return "/" + os.path.relpath(path, CHROOT) if CHROOT else path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_until_closed(sock):
    """Every byte the server sends until it closes the connection."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def http_request(port, method, path, body=None, timeout=120, raw=None, headers=None):
    """One request to 127.0.0.1:port (body as JSON, or raw bytes): (status, parsed JSON or None,
    raw bytes (decompressed when the server compressed them for an Accept-Encoding the test sent),
    the response's headers: lookups ignore case). Sent: Host 127.0.0.1:port, Content-Type
    application/json, Content-Length (0 on a POST, PUT or PATCH without a body), then `headers` over
    them, a None value leaving that header out (a request without Host, or a lying Content-Length,
    is sent as given). Raises OSError when the connection fails."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    sent = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"}
    if data is not None:
        sent["Content-Length"] = str(len(data))
    elif method in ("POST", "PUT", "PATCH"):
        sent["Content-Length"] = "0"
    sent.update(headers or {})
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for name, value in sent.items():
        if value is not None:
            conn.putheader(name, value)
    conn.endheaders(data)
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    if resp.headers.get("Content-Encoding", "") in ("gzip", "deflate"):
        payload = zlib.decompress(payload, zlib.MAX_WBITS | 32)  # either header, as a client reads it
    try:
        parsed = json.loads(payload)
    except ValueError:
        parsed = None
    return resp.status, parsed, payload, resp.headers


def error_message(body):
    """The message of an error answer in either dialect of the server (server/error_body.h):
    OpenAI's {"error": {"message": ...}} under /v1/, A1111's {"error": MESSAGE, "detail": MESSAGE}
    elsewhere; "" for anything else."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    return error if isinstance(error, str) else ""


class Server:
    """Starts the server, waits until it listens, stops it with SIGTERM (a drain: status 0)."""

    def __init__(self, binary, model, extra=()):
        self.binary, self.model = binary, model
        self.port = free_port()
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        env = dict(os.environ, MOSSINFER_BACKEND="host")
        self.proc = subprocess.Popen([*WRAP, binary, "serve", "--model", model, "--port", str(self.port), *TINY_DEFAULTS,
                                      *extra], stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited with {self.proc.returncode}: {self.output()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("server did not listen within 60 s")

    def output(self):
        self.log.flush()
        return open(self.log.name).read()

    def request(self, method, path, body=None, timeout=120, raw=None, headers=None):
        """Returns (status, parsed JSON or None, raw bytes); headers as http_request's."""
        return http_request(self.port, method, path, body, timeout, raw, headers)[:3]

    def resources(self):
        """(resident set in KiB, open descriptors) of the server process."""
        rss = 0
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        return rss, len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self):
        self.proc.terminate()
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise SystemExit("server did not stop within 60 s of SIGTERM")
        os.unlink(self.log.name)
        return code


def png_pixels(data):
    """The filtered rows of a PNG (equal rows decode to equal pixels) and its size."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, size = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, chunk = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            size = struct.unpack(">II", chunk[:8])
        if kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    return size, zlib.decompress(idat)


def cli_png(binary, model, workdir, *flags):
    """The PNG the CLI makes with the tiny defaults and `flags`."""
    if CHROOT:
        workdir = tempfile.mkdtemp(dir=os.path.join(CHROOT, "tmp"))
    out = os.path.join(workdir, f"cli-{abs(hash(flags))}.png")
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    settings = dict(zip(TINY_DEFAULTS[::2], TINY_DEFAULTS[1::2]))
    settings.update(zip(flags[::2], flags[1::2]))  # flags win over the server's defaults
    args = [a for pair in settings.items() for a in pair]
    subprocess.run([*WRAP, binary, "--model", model, *args, "-o", inside(out), "--quiet"], check=True, env=env)
    return open(out, "rb").read()


def b64png(s):
    return base64.b64decode(s)


class Checks:
    """PASS/FAIL lines and a summary; the exit status says whether all passed."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        sys.stdout.flush()
        return ok

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(0 if self.failed == 0 else 1)


def run_server_test(test, before=None, extra=()):
    """The main of a server test (argv: BINARY MODEL_DIR): before(c, binary, model), when given, runs
    ahead of the server; then test(c, srv, binary, model) runs against a server of its own (with the
    serve flags `extra` after the tiny defaults), which is stopped with SIGTERM even when the test
    raises and must then drain and exit 0. Exits with the summary."""
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    if before:
        before(c, binary, model)
    srv = Server(binary, model, extra)
    try:
        test(c, srv, binary, model)
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    c.finish()
