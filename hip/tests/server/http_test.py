#!/usr/bin/env python3
"""The server over plain HTTP (standard library): endpoints, the CLI's image byte for byte,
batches, A1111 bodies, refusals with their status and field, progress, interrupt, a client that
disconnects, bounds. Usage: http_test.py BINARY MODEL_DIR"""
import json
import os
import socket
import subprocess
import tempfile
import threading
import time

from harness import run_server_test, b64png, cli_png, png_pixels

# The body webuiapi 0.9 sends for txt2img(prompt=..., sampler_name="Euler"): every field at its
# default, as A1111 clients send it.
A1111_BODY = {
    "enable_hr": False, "hr_scale": 2, "hr_upscaler": "Latent", "hr_second_pass_steps": 0, "hr_resize_x": 0,
    "hr_resize_y": 0, "hr_checkpoint_name": None, "hr_sampler_name": None, "hr_scheduler": None, "hr_prompt": "",
    "hr_negative_prompt": "", "denoising_strength": 0.7, "firstphase_width": 0, "firstphase_height": 0,
    "prompt": "a red apple", "styles": [], "seed": 6, "subseed": -1, "subseed_strength": 0.0,
    "seed_resize_from_h": 0, "seed_resize_from_w": 0, "batch_size": 1, "n_iter": 1, "steps": 2, "cfg_scale": 3.0,
    "width": 32, "height": 32, "restore_faces": False, "tiling": False, "do_not_save_samples": False,
    "do_not_save_grid": False, "negative_prompt": "", "eta": 1.0, "s_churn": 0, "s_tmax": 0, "s_tmin": 0,
    "s_noise": 1, "override_settings": {}, "override_settings_restore_afterwards": True, "sampler_name": "Euler",
    "scheduler": "automatic", "sampler_index": "Euler a", "script_name": None, "script_args": [],
    "send_images": True, "save_images": False, "alwayson_scripts": {},
}

# Bodies refused with 422, and the field each refusal names.
REFUSED = [
    ({"sampler_name": "LMS"}, "sampler_name"),
    ({"sampler_name": "", "sampler_index": "PLMS"}, "sampler_index"),
    ({"scheduler": "kl_optimal"}, "scheduler"),
    ({"enable_hr": True}, "enable_hr"),
    ({"restore_faces": True}, "restore_faces"),
    ({"tiling": True}, "tiling"),
    ({"styles": "cinematic"}, "styles"),
    ({"alwayson_scripts": {"controlnet": {"args": []}}}, "alwayson_scripts"),
    ({"script_name": "x/y/z plot"}, "script_name"),
    ({"init_images": ["aGVsbG8="]}, "init_images"),
    ({"prompt": "an apple <lora:style:0.8>"}, "prompt"),
    ({"subseed_strength": 0.5}, "subseed_strength"),
    ({"s_churn": 1.0}, "s_churn"),
    ({"save_images": "maybe"}, "save_images"),
    ({"batch_size": 1.5}, "batch_size"),
    ({"override_settings": {"sd_vae": "other.vae.pt"}}, "override_settings.sd_vae"),
    ({"refiner_checkpoint": "sdxl_refiner"}, "refiner_checkpoint"),
    ({"override_settings": {"sd_model_checkpoint": "other"}}, "override_settings.sd_model_checkpoint"),
    ({"steps": 0}, "steps"),
    ({"steps": 1001}, "steps"),
    ({"steps": "twenty"}, "steps"),
    ({"cfg_scale": -1}, "cfg_scale"),
    ({"cfg_scale": None, "width": 30}, "width"),
    ({"width": 4096, "height": 4096}, "width"),
    ({"height": True}, "height"),
    ({"seed": -7}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"skip_layers": [9]}, "skip_layers"),
    ({"skip_layers": ["a"]}, "skip_layers"),
    ({"max_seq": 0}, "max_seq"),
    ({"prompt": 5}, "prompt"),
    ({"batch_size": 0}, "batch_size"),
    ({"batch_size": 8, "n_iter": 9}, "n_iter"),
    ({"output": "/tmp/x.png"}, "output"),
    ({"tier": "turbo"}, "tier"),
]


# serve's own command line: refused with status 2 and a message naming the option.
SERVE_REFUSED = [
    (["--port", "0"], "--port '0'"), (["--port", "http"], "--port 'http'"), (["--port", "70000"], "--port '70000'"),
    (["--host", ""], "--host: empty"), (["-o", "x.png"], "-o does not apply"),
    (["--batch-count", "2"], "--batch-count"), (["--jobs", "j.jsonl"], "--jobs"), (["--steps", "0"], "--steps '0'"),
    (["--sampler", "dpm"], "--sampler 'dpm': unknown sampler (known: euler,"),
    (["--frobnicate"], "unknown option"),
]


def check_serve_command_line(c, binary, model):
    env = dict(os.environ, MOSSINFER_BACKEND="host")
    for args, pattern in SERVE_REFUSED:
        r = subprocess.run([binary, "serve", "--model", model, *args], capture_output=True, text=True, env=env,
                           timeout=30)
        c.check(f"serve-refuses-{' '.join(args)}", r.returncode == 2 and pattern in r.stderr, (r.returncode, r.stderr))
    r = subprocess.run([binary, "serve", "--port", "7999"], capture_output=True, text=True, env=env, timeout=30)
    c.check("serve-needs-model", r.returncode == 2 and "--model is required" in r.stderr, (r.returncode, r.stderr))
    r = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, timeout=30)
    c.check("serve-help", r.returncode == 0 and "/sdapi/v1/txt2img" in r.stdout, r.returncode)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    r = subprocess.run([binary, "serve", "--model", model, "--port", str(busy.getsockname()[1])], capture_output=True,
                       text=True, env=env, timeout=60)
    busy.close()
    c.check("serve-port-in-use", r.returncode == 1 and "cannot listen" in r.stderr, (r.returncode, r.stderr))


def check_server(c, srv, binary, model):
    work = tempfile.mkdtemp()
    status, models, _ = srv.request("GET", "/sdapi/v1/sd-models")
    c.check("sd-models", status == 200 and len(models) == 1 and "tiny-moss" in models[0]["title"], models)
    status, samplers, _ = srv.request("GET", "/sdapi/v1/samplers")
    names = [s["name"] for s in samplers]
    c.check("samplers-listed", status == 200 and names[:2] == ["Euler", "Euler a"] and "DPM++ 2M" in names
            and "DDIM" in names and len(names) == 13
            and {"name": "UniPC", "aliases": ["unipc", "uni_pc"], "options": {}} in samplers, samplers)
    status, schedulers, _ = srv.request("GET", "/sdapi/v1/schedulers")
    c.check("schedulers-listed", status == 200 and [s["name"] for s in schedulers] ==
            ["automatic", "simple", "normal", "karras", "exponential", "sgm_uniform", "beta"], schedulers)
    status, options, _ = srv.request("GET", "/sdapi/v1/options")
    c.check("options", status == 200 and options["sd_model_checkpoint"] == models[0]["title"], options)
    status, _, _ = srv.request("POST", "/sdapi/v1/options", {"samples_format": "png"})
    c.check("options-same-value", status == 200, status)
    status, err, _ = srv.request("POST", "/sdapi/v1/options", {"sd_model_checkpoint": "other.safetensors"})
    c.check("options-read-only", status == 422 and err["field"] == "sd_model_checkpoint", (status, err))
    status, err, _ = srv.request("POST", "/sdapi/v1/options", raw=b"{nope")
    c.check("options-bad-json", status == 400 and "error" in err, (status, err))
    status, err, _ = srv.request("GET", "/sdapi/v1/img2img")
    c.check("unknown-path-404-json", status == 404 and "error" in err, (status, err))

    # The server's image equals the CLI's for the same settings, byte for byte.
    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "a red apple", "seed": 6, "steps": 3,
                                                             "cfg_scale": 4.5, "negative_prompt": "blurry"})
    ok = status == 200 and len(r["images"]) == 1
    c.check("txt2img", ok, (status, r if not ok else ""))
    if ok:
        cli = cli_png(binary, model, work, "--prompt", "a red apple", "--seed", "6", "--steps", "3", "--cfg", "4.5",
                      "--negative", "blurry")
        c.check("same-image-as-cli", png_pixels(b64png(r["images"][0])) == png_pixels(cli))
        info = json.loads(r["info"])
        c.check("info", info["seed"] == 6 and info["all_seeds"] == [6] and info["steps"] == 3 and
                info["infotexts"][0].startswith("a red apple\nNegative prompt: blurry\nSteps: 3"), info)
        c.check("record-in-png", b"Steps: 3, Steps run: 3" in b64png(r["images"][0]))

    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "a red apple", "seed": 5, "batch_size": 2,
                                                             "n_iter": 2})
    ok = status == 200 and len(r["images"]) == 4
    c.check("batch-4-images", ok, (status, r if not ok else ""))
    if ok:
        c.check("batch-seeds", json.loads(r["info"])["all_seeds"] == [5, 6, 7, 8], r["info"])
        cli6 = cli_png(binary, model, work, "--prompt", "a red apple", "--seed", "6")
        c.check("batch-second-is-seed-plus-one", png_pixels(b64png(r["images"][1])) == png_pixels(cli6))

    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", A1111_BODY)
    ok = status == 200 and len(r["images"]) == 1
    c.check("a1111-body-accepted", ok, (status, r if not ok else ""))
    if ok:
        c.check("a1111-body-same-image", png_pixels(b64png(r["images"][0])) == png_pixels(cli6))
    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", "seed": -1, "send_images": False})
    c.check("random-seed-no-images", status == 200 and r["images"] == [] and
            json.loads(r["info"])["seed"] >= 0, (status, r))

    for body, field in REFUSED:
        status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "a red apple", **body})
        c.check(f"refused-{field}-{json.dumps(body)[:40]}", status == 422 and err and err.get("field") == field
                and err["error"].startswith(field.split(".")[0]), (status, err))
    for name, raw in [("bad-json", b"{\"prompt\": "), ("empty-body", b""), ("not-object", b"[1, 2]"),
                      ("string", b"\"a red apple\""), ("bad-utf8", b"{\"prompt\": \"\xff\xfe\"}")]:
        status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", raw=raw)
        c.check(f"400-{name}", status in (400, 422) and err and "error" in err, (status, err))
    status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", raw=b"{\"prompt\": \"" + b"a" * (2 << 20) + b"\"}")
    c.check("body-bound-413", status == 413, status)

    # Progress moves during a long request; interrupt stops it, and the next request runs.
    long_body = {"prompt": "a red apple", "steps": 300, "shift": 1, "width": 64, "height": 64, "seed": 1}
    result = {}

    def long_request():
        result["status"], result["body"], _ = srv.request("POST", "/sdapi/v1/txt2img", long_body)

    t = threading.Thread(target=long_request)
    t.start()
    seen = []
    deadline = time.time() + 60
    while time.time() < deadline and len([p for p in seen if p["state"]["sampling_step"] > 0]) < 5:
        _, p, _ = srv.request("GET", "/sdapi/v1/progress")
        seen.append(p)
        time.sleep(0.05)
    steps = [p["state"]["sampling_step"] for p in seen if p["state"]["sampling_step"] > 0]
    fractions = [p["progress"] for p in seen if p["state"]["sampling_step"] > 0]
    c.check("progress-moves", len(steps) >= 5 and steps == sorted(steps) and steps[-1] > steps[0] and
            0 < fractions[-1] < 1 and seen[-1]["state"]["sampling_steps"] > 0, seen[-3:])
    status, _, _ = srv.request("POST", "/sdapi/v1/interrupt")
    t0 = time.time()
    t.join(60)
    # The answer carries the image as far as it got (A1111's), decoded from the latents at the
    # step the interrupt ended, and says so.
    body = result.get("body") or {}
    info = json.loads(body.get("info", "{}"))
    c.check("interrupt-stops-with-image", status == 200 and result.get("status") == 200 and info.get("interrupted")
            and len(body["images"]) == 1 and png_pixels(b64png(body["images"][0]))[0] == (64, 64) and
            0 < info["generation"][0]["steps_run"] < 300 and time.time() - t0 < 10, result)
    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "a red apple", "seed": 6})
    c.check("next-job-runs", status == 200 and png_pixels(b64png(r["images"][0])) == png_pixels(cli6), status)
    _, p, _ = srv.request("GET", "/sdapi/v1/progress")
    c.check("progress-idle", p["state"]["job_count"] == 0 and p["textinfo"] is None, p)

    # A client that disconnects cancels its job: the server is free again well before the
    # job's own time, and the next one runs.
    sock = socket.create_connection(("127.0.0.1", srv.port))
    payload = json.dumps(long_body).encode()
    sock.sendall(b"POST /sdapi/v1/txt2img HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    deadline = time.time() + 30
    while time.time() < deadline:
        _, p, _ = srv.request("GET", "/sdapi/v1/progress")
        if p["state"]["sampling_step"] > 0:
            break
        time.sleep(0.05)
    sock.close()
    t0 = time.time()
    while time.time() - t0 < 20:
        _, p, _ = srv.request("GET", "/sdapi/v1/progress")
        if p["textinfo"] is None:
            break
        time.sleep(0.05)
    c.check("disconnect-cancels", p["textinfo"] is None and time.time() - t0 < 5, (time.time() - t0, p))
    c.check("disconnect-logged", "client went away" in srv.output(), srv.output()[-300:])
    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "a red apple", "seed": 6})
    c.check("after-disconnect-runs", status == 200 and png_pixels(b64png(r["images"][0])) == png_pixels(cli6))


if __name__ == "__main__":
    run_server_test(check_server, before=check_serve_command_line)
