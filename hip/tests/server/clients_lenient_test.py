#!/usr/bin/env python3
"""Four more A1111 clients, each replayed from its own source (the table SOURCES: repository, file,
commit read) against `serve` (host backend, tiny model): the calls each makes, in its order, with
its headers, its body's fields and value types (text numbers as text, JavaScript's numbers as
JSON.stringify writes them), and the answer read as it reads it, each ending with a decoded image
(issue 46). Only sizes and steps are cut for the host backend (each client's own defaults are 512
px and 20 to 32 steps).

Also the leniency rule's refusals: a value that asks for what this engine does not do is a 422
naming it; text that is not a number is a 422 as in A1111.
Usage: clients_lenient_test.py BINARY MODEL_DIR"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from harness import CHROOT, WRAP, Checks, Server, b64png, http_request, inside, png_pixels

# What was read, and where: each check below follows these files at these commits.
SOURCES = {
    "aiya": ("Kilvoctu/aiyabot", "core/settings.py (startup_check, populate_global_vars, authenticate_user), "
             "core/stablecog.py (dream_handler, dream, update_progress)", "eb8ff684cd44", "2025-12-08"),
    "ooba": ("oobabooga/text-generation-webui", "extensions/sd_api_pictures/script.py (get_checkpoints, "
             "load_checkpoint, get_samplers, give_VRAM_priority, get_SD_pictures)", "1dcde41d03d1", "2026-05-03"),
    "lite": ("LostRuins/lite.koboldai.net", "index.html (LITEVER 339: connect_to_a1111, generate_new_image, "
             "generate_a1111_image)", "27eb1dcc59d6", "2026-07-21"),
    "photoshop": ("AbdullahAlfaraj/Auto-Photoshop-StableDiffusion-Plugin", "plugin 1.4.1: index.js "
                  "(checkAutoStatus), utility/session.js (getSettings), typescripts/sd_tab/util.ts (defaults), "
                  "typescripts/session/session.ts (getProgress), utility/sdapi/python_replacement.js "
                  "(txt2ImgRequest, getAuto1111Metadata, convertMetadataToJson)", "6f6d4907adf0", "2023-12-09"),
}


def decoded(c, name, status, reply, size, count=1):
    """The reply holds `count` PNGs of size (w, h) that decode."""
    ok = status == 200 and isinstance(reply, dict) and len(reply.get("images", [])) == count
    if ok:
        for image in reply["images"]:
            got, rows = png_pixels(b64png(image))
            ok = ok and got == size and len(rows) > 0
    c.check(f"{name}-image-decodes", ok, (status, str(reply)[:300]))
    return ok


def while_polling(work, poll, interval=0.2):
    """Runs work() in a thread while poll() is called every `interval` seconds (a client's progress
    timer); returns work()'s result and what each poll returned."""
    result, polls = [], []
    thread = threading.Thread(target=lambda: result.append(work()))
    thread.start()
    while thread.is_alive():
        polls.append(poll())
        time.sleep(interval)
    thread.join()
    return result[0], polls


def check_aiya(c, srv):
    # startup_check(): GET cmd-flags (401: --api-auth; 404: "API is unreachable"), then HEAD /.
    status, _, _ = srv.request("GET", "/sdapi/v1/cmd-flags")
    c.check("aiya-cmd-flags", status == 200, status)
    status, _, _ = srv.request("HEAD", "/")
    c.check("aiya-head-root", status == 200, status)
    # populate_global_vars(): /version may fail (only SD.Next has it); authenticate_user(): GET
    # /config (401 would mean gradio auth), POST /login, its answer unread.
    srv.request("GET", "/sdapi/v1/version")
    status, _, _ = srv.request("GET", "/config")
    c.check("aiya-config-no-gradio-auth", status != 401, status)
    srv.request("POST", "/login")
    lists = {name: srv.request("GET", "/sdapi/v1/" + name)[1]
             for name in ["samplers", "prompt-styles", "face-restorers", "embeddings", "hypernetworks", "upscalers",
                          "loras", "sd-models"]}
    ok = (all(isinstance(x["name"], str) for x in lists["samplers"] + lists["face-restorers"] + lists["upscalers"]) and
          all({"name", "prompt", "negative_prompt"} <= set(x) for x in lists["prompt-styles"]) and
          isinstance(lists["embeddings"], (dict, list)) and isinstance(lists["hypernetworks"], (dict, list)) and
          all("alias" in x for x in lists["loras"]) and
          all({"filename", "title", "hash"} <= set(x) and ("name" in x or "model_name" in x) for x in lists["sd-models"]))
    c.check("aiya-lists-read", ok and "Euler a" in [x["name"] for x in lists["samplers"]], lists)
    # The last call of populate_global_vars, outside its try: GET /config's body must be JSON.
    status, config, raw = srv.request("GET", "/config")
    c.check("aiya-config-is-json", config is not None, raw[:200])
    # dream(): the model payload (posted when models.csv names the model), then txt2img with the
    # channel defaults of its config.toml: guidance_scale "7.0" (text), sampler "Euler a", style
    # "None", clip_skip 1, batch "1,1"; sizes through dimensions_validator (round(size / 8) * 8: 40).
    status, _, _ = srv.request("POST", "/sdapi/v1/options", {"sd_model_checkpoint": lists["sd-models"][0]["title"]})
    c.check("aiya-set-model", status == 200, status)
    body = {"prompt": "a castle on a hill", "negative_prompt": "", "steps": 2, "width": 40, "height": 40,
            "cfg_scale": "7.0", "sampler_index": "Euler a", "seed": 4294967295, "seed_resize_from_h": -1,
            "seed_resize_from_w": -1, "denoising_strength": None, "n_iter": 1, "batch_size": 1, "styles": ["None"],
            "override_settings": {"CLIP_stop_at_last_layers": 1}}
    # live_preview (on by default): update_progress() polls /progress while the image is made.
    (status, reply, _), polls = while_polling(lambda: srv.request("POST", "/sdapi/v1/txt2img", body),
                                              lambda: srv.request("GET", "/sdapi/v1/progress")[1])
    c.check("aiya-progress-read", polls and all(
        isinstance(p["state"]["job"], str) and isinstance(p["state"]["sampling_step"], int) and
        isinstance(p["progress"], (int, float)) and isinstance(p["eta_relative"], (int, float)) and
        "current_image" in p for p in polls), polls[:2])
    if not decoded(c, "aiya", status, reply, (40, 40)):
        return
    info = json.loads(reply["info"])
    c.check("aiya-cfg-text-converted", info["cfg_scale"] == 7.0, info["cfg_scale"])
    c.check("aiya-seed-2**32-1", info["seed"] == 4294967295, info["seed"])
    c.check("aiya-size-note", info["width"] == 40 and "48x48" in info.get("size_note", ""), info.get("size_note"))
    c.check("aiya-styles-not-used", "styles.None" in info["not_used"], info["not_used"])
    c.check("aiya-clip-skip-not-used", "override_settings.CLIP_stop_at_last_layers" in info["not_used"],
            info["not_used"])
    # The same image from the command line (AIYA's "Euler a" is euler_ancestral there too), which
    # crops only with --crop-to-size.
    out = os.path.join(tempfile.mkdtemp(dir=os.path.join(CHROOT, "tmp") if CHROOT else None), "cli.png")
    made = subprocess.run([*WRAP, srv.binary, "--model", srv.model, "--skip-layers", "2", "--steps", "2",
                           "--prompt", "a castle on a hill", "--seed", "4294967295", "--size", "40x40", "--cfg", "7",
                           "--sampler", "Euler a", "--crop-to-size", "-o", inside(out), "--quiet"],
                          env=dict(os.environ, MOSSINFER_BACKEND="host"), capture_output=True, text=True)
    c.check("aiya-cli-crop-same-pixels", made.returncode == 0 and
            png_pixels(open(out, "rb").read()) == png_pixels(b64png(reply["images"][0])), made.stderr[-300:])
    refused = subprocess.run([*WRAP, srv.binary, "--model", srv.model, "--prompt", "x", "--size", "40x40", "-o",
                              "/tmp/never-written.png"], capture_output=True, text=True)
    c.check("cli-refuses-40-without-crop", refused.returncode == 2 and "--crop-to-size" in refused.stderr,
            (refused.returncode, refused.stderr[-300:]))
    # Per image: POST png-info with a data URL; .get("info") becomes the "parameters" chunk of the
    # PNG it posts to Discord.
    for image in reply["images"]:
        status, pnginfo, _ = srv.request("POST", "/sdapi/v1/png-info", {"image": "data:image/png;base64," + image})
        ok = status == 200 and pnginfo.get("info", "").startswith("a castle on a hill\n") and \
            "Seed: 4294967295" in pnginfo["info"]
        c.check("aiya-png-info", ok, (status, pnginfo))
        if ok:
            fields = pnginfo["parameters"]
            c.check("aiya-png-info-fields", fields.get("Prompt") == "a castle on a hill" and
                    fields.get("Seed") == "4294967295" and fields.get("Size-1") == "40" and
                    fields.get("Size-2") == "40" and fields.get("Steps") == "2" and fields.get("Skip layers") == "2" and
                    fields.get("Model", "").endswith("(dim 128, 4 blocks)") and fields.get("Negative prompt") == "",
                    fields)
            c.check("aiya-png-info-record", json.loads(pnginfo["items"]["generation"])["seed"] == 4294967295,
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
    # The extension's settings: get_checkpoints() reads sd-models' titles and options'
    # sd_model_checkpoint; load_checkpoint() posts it back; get_samplers() reads the names.
    models = srv.request("GET", "/sdapi/v1/sd-models")[1]
    options = srv.request("GET", "/sdapi/v1/options")[1]
    c.check("ooba-checkpoint-listed", options["sd_model_checkpoint"] in [m["title"] for m in models],
            (options["sd_model_checkpoint"], models))
    status, _, _ = srv.request("POST", "/sdapi/v1/options", {"sd_model_checkpoint": options["sd_model_checkpoint"]})
    c.check("ooba-load-checkpoint", status == 200, status)
    c.check("ooba-samplers", "DPM++ 2M" in [x["name"] for x in srv.request("GET", "/sdapi/v1/samplers")[1]])
    # get_SD_pictures() with "Manage VRAM": reload-checkpoint (requests' json='': the body ""), the
    # picture (raise_for_status; each image's text before its first comma decoded), unload-checkpoint.
    status, _, _ = srv.request("POST", "/sdapi/v1/reload-checkpoint", raw=b'""')
    c.check("ooba-reload-checkpoint", status == 200, status)
    body = {"prompt": "(Masterpiece:1.1), detailed, intricate, colorful(a girl reading a book:1)", "seed": -1,
            "sampler_name": "DPM++ 2M", "enable_hr": False, "hr_scale": "1.0", "hr_upscaler": "ESRGAN_4x",
            "denoising_strength": 0.61, "steps": 2, "cfg_scale": 7, "width": 32, "height": 32,
            "restore_faces": False, "override_settings_restore_afterwards": True,
            "negative_prompt": "(worst quality, low quality:1.3)"}
    status, reply, _ = srv.request("POST", "/sdapi/v1/txt2img", body)
    if decoded(c, "ooba", status, reply, (32, 32)):
        first = reply["images"][0].split(",", 1)[0]
        c.check("ooba-image-before-comma", png_pixels(base64.b64decode(first))[0] == (32, 32))
    status, _, _ = srv.request("POST", "/sdapi/v1/unload-checkpoint", raw=b'""')
    c.check("ooba-unload-checkpoint", status == 200, status)


def check_lite(c, srv):
    # Lite runs in a browser on another origin (KoboldCpp's page, or lite.koboldai.net): every
    # request carries Origin; its POST (Content-Type application/json) is preflighted.
    origin = {"Origin": "http://localhost:5001"}
    # connect_to_a1111(): GET sd-models, then GET options; "no models found" unless
    # options.samples_format is set and a model is listed; the dropdown selects the title equal to
    # options.sd_model_checkpoint.
    status, models, _, headers = http_request(srv.port, "GET", "/sdapi/v1/sd-models", headers=origin)
    c.check("lite-models-cors", status == 200 and headers.get("access-control-allow-origin") == "*", headers)
    status, options, _, headers = http_request(srv.port, "GET", "/sdapi/v1/options", headers=origin)
    c.check("lite-connects", status == 200 and headers.get("access-control-allow-origin") == "*" and
            options.get("samples_format") is not None and len(models) > 0 and
            options["sd_model_checkpoint"] in [m["title"] for m in models], (status, options))
    status, _, _, headers = http_request(srv.port, "OPTIONS", "/sdapi/v1/txt2img",
                                         headers={**origin, "Access-Control-Request-Method": "POST",
                                                  "Access-Control-Request-Headers": "content-type"})
    c.check("lite-preflight-any-origin", status == 204 and headers.get("access-control-allow-origin") == "*",
            (status, headers))
    # generate_new_image() with Lite's defaults (sampler "Euler", cfg 5, scheduler "default": not
    # sent, clip skip -1: not sent), then generate_a1111_image()'s payload; JSON.stringify writes
    # 1.0 as 1, 20.0 as 20 and 0.0 as 0. The seed: Math.floor(Math.random() * 99999999).
    body = {"prompt": "a fox in the snow", "seed": 48213377, "sampler_name": "Euler", "batch_size": 1, "n_iter": 1,
            "steps": 2, "cfg_scale": 5, "width": 32, "height": 32, "negative_prompt": "ugly, deformed",
            "do_not_save_samples": True, "do_not_save_grid": True, "enable_hr": False, "eta": 0, "s_churn": 0,
            "s_tmax": 0, "s_tmin": 0, "s_noise": 1,
            "override_settings": {"sd_model_checkpoint": options["sd_model_checkpoint"], "eta_noise_seed_delta": 0,
                                  "CLIP_stop_at_last_layers": 1, "ddim_discretize": "uniform",
                                  "img2img_fix_steps": False, "sd_hypernetwork": "None", "inpainting_mask_weight": 1,
                                  "initial_noise_multiplier": 1, "comma_padding_backtrack": 20}}
    status, reply, _, headers = http_request(srv.port, "POST", "/sdapi/v1/txt2img", body, headers=origin)
    c.check("lite-cors-header", headers.get("access-control-allow-origin") == "*", headers)
    # It shows resp.images[0] as "data:image/jpeg;base64," + it (the browser reads the PNG inside).
    if decoded(c, "lite", status, reply, (32, 32)):
        not_used = json.loads(reply["info"])["not_used"]
        c.check("lite-overrides-not-used", len(not_used) == 8 and "override_settings.ddim_discretize" in not_used and
                "override_settings.eta_noise_seed_delta" in not_used, not_used)


def photoshop_metadata(info):
    """convertMetadataToJson() of the plugin: the text after the last newline, less its last
    character, split at commas, each at its colons (first two parts: key, value)."""
    settings = {}
    for setting in info[info.rfind("\n") + 1:-1].split(","):
        parts = [part.lstrip() for part in setting.split(":")]
        settings[parts[0]] = parts[1] if len(parts) > 1 else None
    return settings


def check_photoshop(c, srv):
    # checkAutoStatus(): GET options (null on 404 means "offline"), then the plugin's own A1111
    # extension's heartbeat (absent here: the plugin reports the extension missing, which its
    # txt2img does not need); refreshModels() and the sampler list.
    status, options, _ = srv.request("GET", "/sdapi/v1/options")
    c.check("photoshop-online", status == 200 and isinstance(options, dict), status)
    status, _, _ = srv.request("GET", "/sdapi/auto-photoshop-sd/heartbeat")
    c.check("photoshop-no-extension", status == 404, status)
    titles = [m["title"] for m in srv.request("GET", "/sdapi/v1/sd-models")[1]]
    c.check("photoshop-models", len(titles) == 1, titles)
    c.check("photoshop-samplers", "Euler a" in [x["name"] for x in srv.request("GET", "/sdapi/v1/samplers")[1]])
    # getSettings() in txt2img mode with the sd tab's defaults (cfg 7, "Euler a", seed "-1": a
    # BigInt's text), the settings tab's (clip_skip 1; use_sharp_mask gets extension_type, a
    # string), sizes through nearestMultiple(x, 8) (40), and the plugin's own fields it sends along.
    body = {"selection_info": {"left": 0, "top": 0, "right": 40, "bottom": 40, "width": 40, "height": 40},
            "alwayson_scripts": {}, "prompt": "a watercolor landscape", "negative_prompt": "",
            "original_prompt": "a watercolor landscape", "original_negative_prompt": "", "clip_skip": 1,
            "steps": 2, "sampler_index": "Euler a", "width": 40, "height": 40, "denoising_strength": 0.5,
            "batch_size": 1, "cfg_scale": 7, "seed": "-1", "mask_blur": 4, "use_sharp_mask": "auto1111_extension",
            "use_prompt_shortcut": True, "prompt_shortcut_ui_dict": {}, "uniqueDocumentId": "f3c9a1d2",
            "mode": "txt2img", "restore_faces": False, "tiling": False}
    # Generation: getProgress() polls /progress?skip_current_image=false (every 2 s) meanwhile.
    headers = {"Accept": "application/json"}
    (status, reply, _), polls = while_polling(
        lambda: srv.request("POST", "/sdapi/v1/txt2img", body, headers=headers),
        lambda: srv.request("GET", "/sdapi/v1/progress?skip_current_image=false")[1])
    c.check("photoshop-progress-read", polls and all(isinstance(p.get("progress"), (int, float)) and
                                                     "current_image" in p for p in polls), polls[:2])
    if not decoded(c, "photoshop", status, reply, (40, 40)):
        return
    seed = json.loads(reply["info"])["seed"]
    c.check("photoshop-seed-drawn", 0 <= seed < 2**32, reply["info"][:200])
    # Per image: getAuto1111Metadata() posts it to png-info and reads json['info'], which
    # convertMetadataToJson() splits; the plugin keeps its Seed as the session's last seed.
    for image in reply["images"]:
        status, pnginfo, _ = srv.request("POST", "/sdapi/v1/png-info", {"image": "data:image/png;base64," + image},
                                         headers=headers)
        settings = photoshop_metadata(pnginfo.get("info", "")) if status == 200 else {}
        c.check("photoshop-metadata-seed", settings.get("Seed") == str(seed) and settings.get("Steps") == "2",
                (status, settings))

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
    for name, (repo, files, commit, *_) in SOURCES.items():
        print(f"replaying {name}: {repo} at {commit}: {files}")
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
        status, err, _, headers = http_request(srv.port, "OPTIONS", "/sdapi/v1/txt2img",
                                               headers={"Origin": "http://localhost:5001",
                                                        "Access-Control-Request-Method": "POST"})
        c.check("preflight-refusal-names-option", status == 405 and "--cors-origin" in err["error"] and
                "access-control-allow-origin" not in headers, (status, err))
    finally:
        srv.stop()
    c.finish()


if __name__ == "__main__":
    main()
