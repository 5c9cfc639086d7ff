#!/usr/bin/env python3
"""200 requests from 4 concurrent clients, random valid and invalid bodies (seeded, so a failure
repeats): every answer is the right one, the server never stops, and its memory and open files
stay within a bound. Usage: stress_test.py BINARY MODEL_DIR"""
import json
import random
import threading

from harness import run_server_test, b64png, png_pixels

REQUESTS, CLIENTS = 200, 4
RSS_BOUND_KIB = 64 * 1024  # growth after the warm-up
FD_BOUND = 8

INVALID_BODIES = [  # (body or raw bytes, expected status)
    ({"prompt": "x", "steps": 0}, 422), ({"prompt": "x", "width": 33}, 422),
    ({"prompt": "x", "cfg_scale": "high"}, 422),
    ({"prompt": "x", "sampler_name": "LMS"}, 422), ({"prompt": "x", "enable_hr": True}, 422),
    ({"prompt": "x", "seed": -3}, 422), ({"prompt": "x", "batch_size": 100}, 422),
    ({"prompt": "x <lora:a:1>"}, 422), ({"prompt": "x", "alwayson_scripts": {"a": {}}}, 422),
    ({"prompt": "x", "skip_layers": [99]}, 422), ({"prompt": ["x"]}, 422),
    (b"{\"prompt\": ", 400), (b"", 400), (b"[]", 400), (b"null", 400), (b"{\"prompt\": \"x\"}}", 400),
]


def random_garbage(rng):
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))


def client(srv, rng, count, results):
    for _ in range(count):
        kind = rng.random()
        if kind < 0.4:
            body = {"prompt": rng.choice(["a red apple", "a cat", "", "ünïcödé ✓"]), "seed": rng.randrange(1000),
                    "steps": rng.choice([1, 2]), "cfg_scale": rng.choice([1, 3, 4.5]),
                    "batch_size": rng.choice([1, 1, 2]), "sampler_name": rng.choice(["Euler", None]),
                    "scheduler": rng.choice(["automatic", None]), "enable_hr": False, "styles": []}
            status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
            ok = status == 200 and len(r["images"]) == body["batch_size"] and \
                json.loads(r["info"])["all_seeds"] == list(range(body["seed"], body["seed"] + body["batch_size"])) and \
                all(png_pixels(b64png(i))[0] == (32, 32) for i in r["images"])
            results.append(("valid", ok, status))
        elif kind < 0.8:
            body, expected = rng.choice(INVALID_BODIES)
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", raw=raw)
            results.append(("invalid", status == expected and r is not None and "error" in r, (status, raw[:60])))
        elif kind < 0.9:
            status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", raw=random_garbage(rng))
            results.append(("garbage", status in (400, 422) and r is not None and "error" in r, status))
        else:
            path = rng.choice(["/sdapi/v1/progress", "/sdapi/v1/sd-models", "/sdapi/v1/samplers", "/sdapi/v1/options"])
            status, r, _ = srv.request("GET", path)
            results.append(("get", status == 200 and r is not None, (path, status)))


def check_server(c, srv, binary, model):
    warm = []
    client(srv, random.Random(0), 20, warm)  # the allocator's and the model's first growth
    c.check("warm-up", all(ok for _, ok, _ in warm), [w for w in warm if not w[1]])
    rss0, fds0 = srv.resources()
    results = []
    threads = [threading.Thread(target=client, args=(srv, random.Random(1 + i), REQUESTS // CLIENTS, results))
               for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    wrong = [r for r in results if not r[1]]
    c.check(f"{REQUESTS}-answers-right", len(results) == REQUESTS and not wrong, (len(results), wrong[:5]))
    kinds = {k for k, _, _ in results}
    c.check("mix-of-requests", {"valid", "invalid", "garbage", "get"} <= kinds, kinds)
    c.check("server-alive", srv.proc.poll() is None, srv.output()[-500:])
    rss1, fds1 = srv.resources()
    print(f"resident {rss0} -> {rss1} KiB, descriptors {fds0} -> {fds1}")
    c.check("memory-bounded", rss1 - rss0 < RSS_BOUND_KIB, (rss0, rss1))
    c.check("files-bounded", fds1 - fds0 <= FD_BOUND, (fds0, fds1))


if __name__ == "__main__":
    run_server_test(check_server)
