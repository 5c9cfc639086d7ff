#!/usr/bin/env python3
"""Three image clients' request sequences, read from their sources, replayed against `serve` (host
backend, tiny model), each ending with a decoded image (issue 30). The sizes the clients ask for
(512 or 1024 a side) are cut to 32 so that the host backend answers in seconds; every other field
is sent as the client sends it, with the client's stored defaults.

- SillyTavern 1.12.6: public/scripts/extensions/stable-diffusion/index.js (generateAutoImage, the
  defaultSettings: sampler "DDIM", scheduler "normal", clip_skip 1) and src/endpoints/
  stable-diffusion.js (what its server asks of A1111: /ping, /upscalers, /vaes, /samplers, ...,
  /set-model, /generate, which forwards the browser's body, its url and auth included).
- Open WebUI (commit 02530d50): backend/open_webui/routers/images.py (verify_url, get_models,
  get_image_model, set_image_model, image_generations for the automatic1111 engine).
- LibreChat (commit 00b3bc32): api/app/clients/tools/structured/StableDiffusion.js (_call).

Also the A1111 list routes and CORS, which browser clients and these probes need.
Usage: clients_test.py BINARY MODEL_DIR"""
import json
import sys

from harness import Checks, Server, b64png, http_request, png_pixels

SIDE = 32  # the clients' 512 and 1024, cut for the host backend


def decoded(c, name, status, reply, count=1):
    """The reply holds `count` PNGs of SIDE x SIDE that decode."""
    ok = status == 200 and isinstance(reply, dict) and len(reply.get("images", [])) == count
    if ok:
        for image in reply["images"]:
            size, rows = png_pixels(b64png(image))
            ok = ok and size == (SIDE, SIDE) and len(rows) > 0
    c.check(f"{name}-image-decodes", ok, (status, str(reply)[:300]))
    return ok


def sillytavern_probes(c, srv, title):
    """What SillyTavern's server asks when its image settings open, then its /set-model."""
    for path in ["/sdapi/v1/options", "/sdapi/v1/upscalers", "/sdapi/v1/latent-upscale-modes",
                 "/sdapi/v1/sd-vae", "/sdapi/v1/sd-modules", "/sdapi/v1/samplers", "/sdapi/v1/schedulers",
                 "/sdapi/v1/sd-models"]:
        status, body, _ = srv.request("GET", path)
        c.check(f"sillytavern-probe-{path}", status == 200 and body is not None, (status, body))
    status, upscalers, _ = srv.request("GET", "/sdapi/v1/upscalers")
    c.check("sillytavern-upscalers-none-first", [u["name"] for u in upscalers][:1] == ["None"], upscalers)
    status, _, _ = srv.request("POST", "/sdapi/v1/options", {"sd_model_checkpoint": title})
    c.check("sillytavern-set-model", status == 200, status)
    status, progress, _ = srv.request("GET", "/sdapi/v1/progress")  # it waits for progress 0, job_count 0
    c.check("sillytavern-set-model-idle", progress["progress"] == 0 and progress["state"]["job_count"] == 0,
            progress)


def sillytavern_body(port):
    """generateAutoImage's body with the extension's stored defaults (seed -1 is left out)."""
    return {
        "url": f"http://127.0.0.1:{port}", "auth": "",
        "prompt": "a red apple on a table", "negative_prompt": "lowres, blurry",
        "sampler_name": "DDIM", "scheduler": "normal", "steps": 20, "cfg_scale": 7, "width": SIDE, "height": SIDE,
        "restore_faces": False, "enable_hr": False, "hr_upscaler": "Latent", "hr_scale": 2.0,
        "denoising_strength": 0.7, "hr_second_pass_steps": 0,
        "override_settings": {"CLIP_stop_at_last_layers": 1}, "override_settings_restore_afterwards": True,
        "clip_skip": 1, "save_images": True, "send_images": True, "do_not_save_grid": False,
        "do_not_save_samples": False,
    }


def check_sillytavern(c, binary, model):
    # The default server runs SillyTavern's DDIM with the normal schedule (issue 48) and names them
    # as asked; a sampler it does not have is refused, naming the field, and its log names the
    # option that helps.
    srv = Server(binary, model)
    try:
        status, models, _ = srv.request("GET", "/sdapi/v1/sd-models")
        sillytavern_probes(c, srv, models[0]["title"])
        srv.request("GET", "/sdapi/v1/options")  # /generate reads the options first (forge_preset)
        status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", sillytavern_body(srv.port))
        if decoded(c, "sillytavern-ddim", status, reply):
            info = json.loads(reply["info"])
            c.check("sillytavern-ddim-runs-as-asked", "sampler_fallback" not in info and
                    "Sampler: DDIM, Schedule type: Normal" in info["infotexts"][0], info["infotexts"])
        status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", dict(sillytavern_body(srv.port), sampler_name="LMS"))
        c.check("sillytavern-strict-refuses-lms", status == 422 and err.get("field") == "sampler_name", (status, err))
        c.check("sillytavern-refusal-log-names-option", "--sampler-fallback euler" in srv.output(),
                srv.output()[-400:])
    finally:
        srv.stop()
    # With --sampler-fallback euler: images, and the reply and the log say what ran.
    srv = Server(binary, model, ["--sampler-fallback", "euler"])
    try:
        status, models, _ = srv.request("GET", "/sdapi/v1/sd-models")
        sillytavern_probes(c, srv, models[0]["title"])
        seeds = []
        for attempt in range(2):  # a regenerate gives a new image
            srv.request("GET", "/sdapi/v1/options")
            body = dict(sillytavern_body(srv.port), sampler_name="LMS", scheduler="kl_optimal")
            status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
            if not decoded(c, f"sillytavern-{attempt}", status, reply):
                return
            info = json.loads(reply["info"])
            seeds.append(info["seed"])
            c.check(f"sillytavern-{attempt}-info-says-fallback",
                    "LMS" in info.get("sampler_fallback", "") and "kl_optimal" in info["sampler_fallback"], info)
            c.check(f"sillytavern-{attempt}-no-url-echo", "url" not in reply["parameters"] and
                    "auth" not in reply["parameters"], reply["parameters"])
        c.check("sillytavern-new-seed-each-time", seeds[0] != seeds[1] and all(0 <= s < 2**32 for s in seeds), seeds)
        c.check("sillytavern-log-says-fallback", "ran as Euler" in srv.output(), srv.output()[-400:])
    finally:
        srv.stop()


def check_open_webui(c, binary, model):
    srv = Server(binary, model)
    try:
        status, _, _ = srv.request("GET", "/sdapi/v1/options")  # verify_url
        c.check("openwebui-verify-url", status == 200, status)
        status, models, _ = srv.request("GET", "/sdapi/v1/sd-models")  # get_models: id title, name model_name
        c.check("openwebui-models", status == 200 and models[0]["title"] and models[0]["model_name"] == "tiny-moss",
                models)
        model_id = models[0]["title"]
        seeds, pixels = [], []
        for attempt in range(2):
            _, options, _ = srv.request("GET", "/sdapi/v1/options")  # get_image_model
            # set_image_model (an admin's request names the model): posts only when it differs.
            _, options, _ = srv.request("GET", "/sdapi/v1/options")
            c.check(f"openwebui-{attempt}-model-current", options["sd_model_checkpoint"] == model_id, options)
            body = {"prompt": "a lighthouse at dusk", "batch_size": 1, "width": SIDE, "height": SIDE, "steps": 50}
            status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
            if not decoded(c, f"openwebui-{attempt}", status, reply):
                return
            seeds.append(json.loads(reply["info"])["seed"])
            pixels.append(png_pixels(b64png(reply["images"][0])))
        # Open WebUI never sends a seed: each request draws one, so a regenerate is a new image.
        c.check("openwebui-regenerate-new-seed", seeds[0] != seeds[1] and all(0 <= s < 2**32 for s in seeds), seeds)
        c.check("openwebui-regenerate-new-image", pixels[0] != pixels[1])
        # set_image_model for another model posts the whole options back: refused, naming it.
        options["sd_model_checkpoint"] = "sd_xl_base_1.0.safetensors"
        status, err, _ = srv.request("POST", "/sdapi/v1/options", options)
        c.check("openwebui-other-model-refused", status == 422 and err["field"] == "sd_model_checkpoint", err)
        options["sd_model_checkpoint"] = model_id
        status, _, _ = srv.request("POST", "/sdapi/v1/options", options)
        c.check("openwebui-options-posted-back-unchanged", status == 200, status)
    finally:
        srv.stop()


def check_librechat(c, binary, model):
    srv = Server(binary, model)
    try:
        body = {"prompt": "photo of a man in black clothes, half body, coastline, overcast weather",
                "negative_prompt": "semi-realistic, cgi, 3d, render, sketch, cartoon, drawing",
                "cfg_scale": 4.5, "steps": 22, "width": SIDE, "height": SIDE}
        status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
        if not decoded(c, "librechat", status, reply):
            return
        info = json.loads(reply["info"])  # JSON.parse: a seed above 2^53 would come back rounded
        c.check("librechat-info", info["width"] == SIDE and info["height"] == SIDE and
                info["infotexts"][0].split("\n")[-1].startswith("Steps: 22"), info)
        c.check("librechat-seed-exact-in-javascript", 0 <= info["seed"] < 2**32, info["seed"])
    finally:
        srv.stop()


def cors_request(port, method, path, headers):
    """(status, the answer's headers) of a request with only these headers besides Host."""
    status, _, _, answer = http_request(port, method, path, timeout=60, headers={"Content-Type": None, **headers})
    return status, answer


def check_lists_and_cors(c, binary, model):
    srv = Server(binary, model, ["--cors-origin", "http://localhost:3000"])
    try:
        for path, shape in [("/sdapi/v1/latent-upscale-modes", []), ("/sdapi/v1/sd-vae", []),
                            ("/sdapi/v1/sd-modules", []), ("/sdapi/v1/loras", []), ("/sdapi/v1/prompt-styles", []),
                            ("/sdapi/v1/face-restorers", []),
                            ("/sdapi/v1/embeddings", {"loaded": {}, "skipped": {}}), ("/internal/ping", {})]:
            status, body, _ = srv.request("GET", path)
            c.check(f"list{path}", status == 200 and body == shape, (status, body))
        status, memory, _ = srv.request("GET", "/sdapi/v1/memory")
        c.check("list-memory", status == 200 and memory["ram"]["total"] > 0, memory)
        status, flags, _ = srv.request("GET", "/sdapi/v1/cmd-flags")
        c.check("list-cmd-flags", status == 200 and flags.get("api") is True, flags)
        for path in ["/sdapi/v1/refresh-checkpoints", "/sdapi/v1/skip"]:
            status, _, _ = srv.request("POST", path, {})
            c.check(f"post{path}", status == 200, status)
        status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", "batch_size": None})
        c.check("batch-size-null-is-one", status == 200 and len(reply["images"]) == 1, status)
        deep = b'{"prompt": "x", "extra": ' + b"[" * 100000 + b"]" * 100000 + b"}"
        status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", raw=deep)
        c.check("deep-body-400", status == 400 and "64" in err["error"], (status, err))
        status, _, _ = srv.request("GET", "/sdapi/v1/progress")
        c.check("deep-body-server-alive", status == 200, status)

        allowed = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                   "Access-Control-Request-Headers": "content-type"}
        status, headers = cors_request(srv.port, "OPTIONS", "/sdapi/v1/txt2img", allowed)
        c.check("cors-preflight", status == 204 and headers.get("access-control-allow-origin") ==
                "http://localhost:3000" and "POST" in headers.get("access-control-allow-methods", ""), headers)
        status, headers = cors_request(srv.port, "GET", "/sdapi/v1/sd-models", {"Origin": "http://localhost:3000"})
        c.check("cors-header-on-answer", headers.get("access-control-allow-origin") == "http://localhost:3000",
                headers)
        status, headers = cors_request(srv.port, "GET", "/sdapi/v1/sd-models", {"Origin": "http://evil.example"})
        c.check("cors-other-origin-no-header", status == 200 and "access-control-allow-origin" not in headers,
                headers)
        status, headers = cors_request(srv.port, "OPTIONS", "/sdapi/v1/txt2img", {"Origin": "http://evil.example"})
        c.check("cors-other-origin-preflight-refused", status == 403, status)
    finally:
        srv.stop()
    srv = Server(binary, model)  # CORS is off by default
    try:
        status, headers = cors_request(srv.port, "OPTIONS", "/sdapi/v1/txt2img", {"Origin": "http://localhost:3000"})
        c.check("cors-off-by-default", status != 204 and "access-control-allow-origin" not in headers,
                (status, headers))
    finally:
        srv.stop()


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    for check in (check_sillytavern, check_open_webui, check_librechat, check_lists_and_cors):
        check(c, binary, model)
    c.finish()


if __name__ == "__main__":
    main()
