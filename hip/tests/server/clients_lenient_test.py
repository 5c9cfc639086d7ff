#!/usr/bin/env python3
"""Four more A1111 clients' requests, read from their sources (or, where named, from issue 46's
record of them), replayed against `serve` (host backend, tiny model), each ending with a decoded
image (issue 46). Sizes are cut for the host backend; every other field is sent as the client sends
it, its text numbers as text.

- AIYA Discord bot (Kilvoctu/aiyabot, core/stablecog.py at commit 000b61eb): dream(): POST /login
  (its result unread), POST /options {sd_model_checkpoint}, POST /txt2img with cfg_scale as text
  ("7.0": issue 46's record of its settings file), sampler_index "Euler a", styles ["None"], sizes
  rounded to multiples of 8, then POST /png-info {"image": "data:image/png;base64,..."} per image,
  whose "info" it writes into the PNG it posts to Discord.
- text-generation-webui (oobabooga, extensions/sd_api_pictures/script.py at commit 027757e9):
  get_SD_pictures(): hr_scale "1.0" as text, sampler "DPM++ 2M"; give_VRAM_priority():
  POST /unload-checkpoint and /reload-checkpoint with the JSON body "".
- KoboldAI Lite / KoboldCpp (issue 46's record of Lite's A1111 request): override_settings with
  six A1111 options at A1111's defaults; run with a browser's Origin through --cors-origin '*'.
- Auto-Photoshop-StableDiffusion-Plugin (issue 46's record): seed "-1" as text.

Also the leniency rule's refusals: a value that asks for what this engine does not do is a 422
naming it; text that is not a number is a 422 as in A1111.
Usage: clients_lenient_test.py BINARY MODEL_DIR"""
import base64
import http.client
import json
import sys

import os
import subprocess
import tempfile

from harness import CHROOT, WRAP, Checks, Server, b64png, inside, png_pixels


def decoded(c, name, status, reply, size, count=1):
    """The reply holds `count` PNGs of size (w, h) that decode."""
    ok = status == 200 and isinstance(reply, dict) and len(reply.get("images", [])) == count
    if ok:
        for image in reply["images"]:
            got, rows = png_pixels(b64png(image))
            ok = ok and got == size and len(rows) > 0
    c.check(f"{name}-image-decodes", ok, (status, str(reply)[:300]))
    return ok


def request(port, method, path, body=None, headers=None, raw=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    try:
        parsed = json.loads(payload)
    except ValueError:
        parsed = None
    return resp.status, parsed, {k.lower(): v for k, v in resp.getheaders()}


def check_aiya(c, srv):
    status, models, _ = srv.request("GET", "/sdapi/v1/sd-models")
    srv.request("POST", "/login")  # AIYA posts it and reads nothing of the answer
    status, _, _ = srv.request("POST", "/sdapi/v1/options", {"sd_model_checkpoint": models[0]["title"]})
    c.check("aiya-set-model", status == 200, status)
    body = {"prompt": "a castle on a hill", "negative_prompt": "", "steps": 2, "width": 40, "height": 40,
            "cfg_scale": "7.0", "sampler_index": "Euler a", "seed": 1234, "seed_resize_from_h": 0,
            "seed_resize_from_w": 0, "denoising_strength": None, "n_iter": 1, "styles": ["None"],
            "override_settings": {"CLIP_stop_at_last_layers": 1}}
    status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
    if not decoded(c, "aiya", status, reply, (40, 40)):
        return
    info = json.loads(reply["info"])
    c.check("aiya-cfg-text-converted", info["cfg_scale"] == 7.0, info["cfg_scale"])
    c.check("aiya-size-note", info["width"] == 40 and "48x48" in info.get("size_note", ""), info.get("size_note"))
    c.check("aiya-styles-not-used", "styles.None" in info["not_used"], info["not_used"])
    c.check("aiya-clip-skip-not-used", "override_settings.CLIP_stop_at_last_layers" in info["not_used"],
            info["not_used"])
    # The same image from the command line (AIYA's "Euler a" is euler_ancestral there too), which
    # crops only with --crop-to-size.
    out = os.path.join(tempfile.mkdtemp(dir=os.path.join(CHROOT, "tmp") if CHROOT else None), "cli.png")
    made = subprocess.run([*WRAP, srv.binary, "--model", srv.model, "--skip-layers", "2", "--steps", "2",
                           "--prompt", "a castle on a hill",
                           "--seed", "1234", "--size", "40x40", "--cfg", "7", "--sampler", "Euler a", "--crop-to-size", "-o", inside(out),
                           "--quiet"], env=dict(os.environ, MOSSINFER_BACKEND="host"), capture_output=True, text=True)
    c.check("aiya-cli-crop-same-pixels", made.returncode == 0 and
            png_pixels(open(out, "rb").read()) == png_pixels(b64png(reply["images"][0])), made.stderr[-300:])
    refused = subprocess.run([*WRAP, srv.binary, "--model", srv.model, "--prompt", "x", "--size", "40x40", "-o",
                              "/tmp/never-written.png"], capture_output=True, text=True)
    c.check("cli-refuses-40-without-crop", refused.returncode == 2 and "--crop-to-size" in refused.stderr,
            (refused.returncode, refused.stderr[-300:]))
    for image in reply["images"]:
        status, pnginfo, _ = srv.request("POST", "/sdapi/v1/png-info", {"image": "data:image/png;base64," + image})
        ok = status == 200 and pnginfo["info"].startswith("a castle on a hill\n") and "Seed: 1234" in pnginfo["info"]
        c.check("aiya-png-info", ok, (status, pnginfo))
        if ok:
            fields = pnginfo["parameters"]
            c.check("aiya-png-info-fields", fields.get("Prompt") == "a castle on a hill" and
                    fields.get("Seed") == "1234" and fields.get("Size-1") == "40" and fields.get("Size-2") == "40" and
                    fields.get("Steps") == "2" and fields.get("Skip layers") == "2" and
                    fields.get("Model", "").endswith("(dim 128, 4 blocks)") and fields.get("Negative prompt") == "",
                    fields)
            c.check("aiya-png-info-record", json.loads(pnginfo["items"]["generation"])["seed"] == 1234,
                    pnginfo["items"])
    # A PNG without a record: info "" (A1111's answer); not base64 or not a PNG: 422 naming image.
    status, empty, _ = srv.request("POST", "/sdapi/v1/png-info", {"image": ""})
    c.check("png-info-empty", status == 200 and empty["info"] == "", (status, empty))
    for bad in ["%%%", base64.b64encode(b"GIF89a not a png").decode(), 5]:
        status, err, _ = srv.request("POST", "/sdapi/v1/png-info", {"image": bad})
        c.check(f"png-info-refused-{str(bad)[:8]}", status == 422 and err.get("field") == "image", (status, err))
    bare = b"\x89PNG\r\n\x1a\n" + bytes.fromhex("0000000049454e44ae426082")
    status, none, _ = srv.request("POST", "/sdapi/v1/png-info", {"image": base64.b64encode(bare).decode()})
    c.check("png-info-no-record", status == 200 and none["info"] == "" and none["parameters"] == {}, (status, none))


def check_ooba(c, srv):
    for path in ["/sdapi/v1/unload-checkpoint", "/sdapi/v1/reload-checkpoint"]:
        status, _, _ = request(srv.port, "POST", path, raw=b'""')
        c.check(f"ooba{path}", status == 200, status)
    body = {"prompt": "(Masterpiece:1.1), detailed, intricate, colorful(a girl reading a book:1)", "seed": -1,
            "sampler_name": "DPM++ 2M", "enable_hr": False, "hr_scale": "1.0", "hr_upscaler": "ESRGAN_4x",
            "denoising_strength": 0.61, "steps": 2, "cfg_scale": 7, "width": 32, "height": 32,
            "restore_faces": False, "override_settings_restore_afterwards": True,
            "negative_prompt": "(worst quality, low quality:1.3)"}
    status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
    decoded(c, "ooba", status, reply, (32, 32))


def check_lite(c, srv):
    origin = {"Origin": "http://localhost:5001"}
    status, _, headers = request(srv.port, "OPTIONS", "/sdapi/v1/txt2img",
                                 headers={**origin, "Access-Control-Request-Method": "POST",
                                          "Access-Control-Request-Headers": "content-type"})
    c.check("lite-preflight-any-origin", status == 204 and headers.get("access-control-allow-origin") == "*",
            (status, headers))
    body = {"prompt": "a fox in the snow", "negative_prompt": "ugly, deformed", "sampler_name": "Euler",
            "batch_size": 1, "n_iter": 1, "steps": 2, "cfg_scale": 7, "width": 32, "height": 32,
            "restore_faces": False, "seed": -1,
            "override_settings": {"sd_vae": "Automatic", "ddim_discretize": "uniform", "img2img_fix_steps": False,
                                  "sd_hypernetwork": "None", "inpainting_mask_weight": 1.0,
                                  "initial_noise_multiplier": 1.0, "comma_padding_backtrack": 20},
            "override_settings_restore_afterwards": True}
    status, reply, headers = request(srv.port, "POST", "/sdapi/v1/txt2img", body, headers=origin)
    c.check("lite-cors-header", headers.get("access-control-allow-origin") == "*", headers)
    if decoded(c, "lite", status, reply, (32, 32)):
        not_used = json.loads(reply["info"])["not_used"]
        c.check("lite-overrides-not-used", len(not_used) == 7 and "override_settings.ddim_discretize" in not_used,
                not_used)


def check_photoshop(c, srv):
    body = {"prompt": "a watercolor landscape", "negative_prompt": "", "steps": 2, "cfg_scale": 7, "width": 32,
            "height": 32, "seed": "-1", "batch_size": 1, "n_iter": 1, "sampler_index": "Euler",
            "restore_faces": False, "denoising_strength": 0.7}
    status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
    if decoded(c, "photoshop", status, reply, (32, 32)):
        c.check("photoshop-seed-drawn", 0 <= json.loads(reply["info"])["seed"] < 2**32, reply["info"][:200])


def check_refusals(c, srv):
    """The other side of the rule: what asks for something this engine does not do is refused."""
    for body, field in [({"cfg_scale": "seven"}, "cfg_scale"), ({"seed": "1.5"}, "seed"), ({"steps": "nan"}, "steps"),
                        ({"cfg_scale": "inf"}, "cfg_scale"), ({"width": "36"}, "width"),
                        ({"override_settings": {"sd_vae": "other.vae.pt"}}, "override_settings.sd_vae"),
                        ({"override_settings": {"samples_format": "jpg"}}, "override_settings.samples_format"),
                        ({"override_settings": {"no_such_option": 1}}, "override_settings.no_such_option")]:
        status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", {"prompt": "x", **body})
        c.check(f"refused-{field}-{list(body.values())[0]}", status == 422 and err.get("field") == field, (status, err))
    # GET /options lists A1111's options; posting them all back is accepted (Open WebUI does).
    status, options, _ = srv.request("GET", "/sdapi/v1/options")
    c.check("options-lists-a1111", status == 200 and options.get("ddim_discretize") == "uniform" and
            options.get("samples_format") == "png", options)
    status, _, _ = srv.request("POST", "/sdapi/v1/options", options)
    c.check("options-posted-back", status == 200, status)
    status, flags, _ = srv.request("GET", "/sdapi/v1/cmd-flags")
    c.check("cmd-flags-fields", status == 200 and flags.get("api") is True and "lora_dir" in flags and
            flags.get("gradio_auth") is None, flags)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    # One server with what these clients need: other samplers run as Euler, any origin.
    srv = Server(binary, model, ["--sampler-fallback", "euler", "--cors-origin", "*"])
    try:
        for check in (check_aiya, check_ooba, check_lite, check_photoshop, check_refusals):
            check(c, srv)
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    # Without --cors-origin a preflight is refused with the option named.
    srv = Server(binary, model)
    try:
        status, err, headers = request(srv.port, "OPTIONS", "/sdapi/v1/txt2img",
                                       headers={"Origin": "http://localhost:5001",
                                                "Access-Control-Request-Method": "POST"})
        c.check("preflight-refusal-names-option", status == 405 and "--cors-origin" in err["error"] and
                "access-control-allow-origin" not in headers, (status, err))
    finally:
        srv.stop()
    c.finish()


if __name__ == "__main__":
    main()
