#!/usr/bin/env python3
"""GET /metrics read by a real Prometheus parser (prometheus_client's, from PyPI; exit 77,
skipped, where it is not installed; CI installs it, .ci/run): every family the README lists,
counters that count what was asked (requests by route and status, images per device, denoise
steps, stages), the queue and the in-flight jobs of each device while two host engines run
(`--device 0,1` on the host backend), and label values a client cannot invent.
Usage: metrics_test.py BINARY MODEL_DIR"""
import os
import sys
import threading
import time

sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:
    print(f"skipped: {e} (pip install prometheus_client)")
    sys.exit(77)

from harness import run_server_test

FAMILIES = {"moss_build_info": "gauge", "moss_http_requests": "counter", "moss_images": "counter",
            "moss_queue_depth": "gauge", "moss_queue_capacity": "gauge", "moss_jobs_in_flight": "gauge",
            "moss_ready": "gauge", "moss_draining": "gauge", "moss_device_memory_used_bytes": "gauge",
            "moss_device_memory_total_bytes": "gauge", "moss_denoise_step_seconds": "histogram",
            "moss_stage_seconds": "histogram"}
LONG = {"prompt": "a red apple", "steps": 400, "shift": 1, "width": 64, "height": 64}


def scrape(srv):
    status, _, raw = srv.request("GET", "/metrics")
    assert status == 200, status
    families = {f.name: f for f in text_string_to_metric_families(raw.decode())}
    return families


def value(families, family, sample_name, **labels):
    for s in families[family].samples:
        if s.name == sample_name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    return None


def check_server(c, srv, binary, model):
    fams = scrape(srv)
    c.check("every-family", all(n in fams and fams[n].type == t for n, t in FAMILIES.items()),
            {n: (fams[n].type if n in fams else None) for n in FAMILIES})
    build = fams["moss_build_info"].samples[0]
    c.check("build-info", build.value == 1 and build.labels["version"].startswith("moss-infer-hip") and
            "architectures" in build.labels, build)
    c.check("two-devices", sorted(s.labels["device"] for s in fams["moss_jobs_in_flight"].samples) == ["0", "1"],
            fams["moss_jobs_in_flight"].samples)
    c.check("idle-state", value(fams, "moss_queue_depth", "moss_queue_depth") == 0 and
            value(fams, "moss_ready", "moss_ready") == 1 and value(fams, "moss_queue_capacity", "moss_queue_capacity")
            == 16, fams["moss_queue_depth"].samples)

    # What requests did, counted.
    for _ in range(2):
        srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "an apple", "seed": 2, "steps": 2})
    srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "an apple", "steps": 0})
    srv.request("GET", "/no/such/route/\"with\\quotes")
    srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "an apple", "steps": 3, "batch_size": 2})
    fams = scrape(srv)
    req = "moss_http_requests_total"
    c.check("requests-200", value(fams, "moss_http_requests", req, route="/sdapi/v1/txt2img", status="200") == 3,
            fams["moss_http_requests"].samples)
    c.check("requests-422", value(fams, "moss_http_requests", req, route="/sdapi/v1/txt2img", status="422") == 1)
    c.check("requests-unknown-route-is-other",
            value(fams, "moss_http_requests", req, route="other", status="404") == 1 and
            not any("quotes" in s.labels["route"] for s in fams["moss_http_requests"].samples))
    c.check("requests-metrics-counted", value(fams, "moss_http_requests", req, route="/metrics", status="200") >= 1)
    images = sum(s.value for s in fams["moss_images"].samples if s.name == "moss_images_total")
    c.check("images-4", images == 4, fams["moss_images"].samples)
    steps = value(fams, "moss_denoise_step_seconds", "moss_denoise_step_seconds_count")
    c.check("denoise-steps-counted", steps == 2 + 2 + 3 * 2, steps)
    inf = value(fams, "moss_denoise_step_seconds", "moss_denoise_step_seconds_bucket", le="+Inf")
    c.check("histogram-inf-equals-count", inf == steps, (inf, steps))
    buckets = [s.value for s in fams["moss_denoise_step_seconds"].samples if s.name.endswith("_bucket")]
    c.check("histogram-cumulative", buckets == sorted(buckets), buckets)
    c.check("stages-counted", all(value(fams, "moss_stage_seconds", "moss_stage_seconds_count", stage=s) == 4
                                  for s in ("text_encoder", "dit_load", "denoise", "vae", "total")),
            fams["moss_stage_seconds"].samples[-3:])

    # Two long requests at once: one on each host engine, each device shows one job in flight.
    done = []
    threads = [threading.Thread(target=lambda s=s: done.append(srv.request(
        "POST", "/sdapi/v1/txt2img", {**LONG, "seed": s}, timeout=300)[0])) for s in (1, 2)]
    for t in threads:
        t.start()
    both = None
    deadline = time.time() + 60
    while time.time() < deadline and not both:
        fams = scrape(srv)
        flight = {s.labels["device"]: s.value for s in fams["moss_jobs_in_flight"].samples}
        if flight == {"0": 1, "1": 1}:
            both = flight
        time.sleep(0.05)
    c.check("in-flight-per-device", both is not None, flight)
    # An interrupt keeps the last finished step's latents (none before the first step ends): let
    # both engines finish a few steps first (the histogram counts every finished step).
    def steps_done():
        return sum(s.value for s in scrape(srv)["moss_denoise_step_seconds"].samples
                   if s.name == "moss_denoise_step_seconds_count")
    start = steps_done()
    deadline = time.time() + 60
    while time.time() < deadline and steps_done() < start + 6:
        time.sleep(0.05)
    srv.request("POST", "/sdapi/v1/interrupt")
    for t in threads:
        t.join(120)
    c.check("interrupted-both", done == [200, 200], done)
    fams = scrape(srv)
    per_device = {s.labels["device"]: s.value for s in fams["moss_images"].samples if s.name == "moss_images_total"}
    c.check("images-per-device", per_device["0"] >= 1 and per_device["1"] >= 1 and sum(per_device.values()) == 6,
            per_device)


if __name__ == "__main__":
    run_server_test(check_server, extra=["--device", "0,1"])
