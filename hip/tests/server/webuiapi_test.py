#!/usr/bin/env python3
"""The server driven by a real AUTOMATIC1111 client library (webuiapi, from PyPI). Exit 77
(ctest: skipped) when webuiapi is not installed; CI installs it (.ci/run) into
$MOSSINFER_CI_PYTHON (default ~/.cache/mossinfer-ci-python). Usage: webuiapi_test.py BINARY MODEL_DIR"""
import io
import os
import sys
import tempfile

sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))
try:
    import webuiapi
    from PIL import Image
except ImportError as e:
    print(f"skipped: {e} (pip install webuiapi)")
    sys.exit(77)

from harness import run_server_test, cli_png


def rgb(image):
    return image.convert("RGB").tobytes()


def check_server(c, srv, binary, model):
    work = tempfile.mkdtemp()
    api = webuiapi.WebUIApi(host="127.0.0.1", port=srv.port, sampler="Euler", steps=3)
    models = api.get_sd_models()
    c.check("get_sd_models", len(models) == 1 and "tiny-moss" in models[0]["title"], models)
    c.check("util_get_current_model", api.util_get_current_model() == models[0]["title"])
    samplers = [s["name"] for s in api.get_samplers()]
    c.check("get_samplers", samplers[0] == "Euler" and "Euler a" in samplers and "DPM++ 2M" in samplers, samplers)
    c.check("get_options", api.get_options()["samples_format"] == "png")
    c.check("set_options-unchanged", api.set_options({"samples_format": "png"}) is None)

    result = api.txt2img(prompt="a red apple", negative_prompt="blurry", seed=6, cfg_scale=4.5, width=32,
                         height=32)
    cli = cli_png(binary, model, work, "--prompt", "a red apple", "--negative", "blurry", "--seed", "6", "--steps",
                  "3", "--cfg", "4.5")
    c.check("txt2img-same-image-as-cli", rgb(result.image) == rgb(Image.open(io.BytesIO(cli))))
    c.check("txt2img-info", result.info["seed"] == 6 and result.info["steps"] == 3 and
            "Steps run: 3" in result.info["infotexts"][0], result.info)
    c.check("txt2img-parameters", result.parameters["prompt"] == "a red apple", result.parameters)
    c.check("png-record", "Steps: 3" in result.image.info.get("parameters", ""), result.image.info)

    # A1111's combined name runs the sampler and schedule the CLI runs with --sampler/--scheduler.
    dpm = api.txt2img(prompt="a red apple", seed=6, cfg_scale=4.5, width=32, height=32, sampler_name="DPM++ 2M Karras")
    cli = cli_png(binary, model, work, "--prompt", "a red apple", "--seed", "6", "--steps", "3", "--cfg", "4.5",
                  "--sampler", "dpmpp_2m", "--scheduler", "karras")
    c.check("txt2img-dpmpp-2m-karras-same-image-as-cli", rgb(dpm.image) == rgb(Image.open(io.BytesIO(cli))))
    c.check("txt2img-dpmpp-2m-karras-infotext", "Sampler: DPM++ 2M Karras, Schedule type: Karras" in
            dpm.info["infotexts"][0], dpm.info["infotexts"])

    batch = api.txt2img(prompt="a red apple", seed=6, batch_size=2, n_iter=2, width=32, height=32)
    c.check("batch", len(batch.images) == 4 and batch.info["all_seeds"] == [6, 7, 8, 9], batch.info)
    random_seed = api.txt2img(prompt="a cat", width=32, height=32)  # webuiapi's default seed is -1
    c.check("random-seed", isinstance(random_seed.info["seed"], int) and random_seed.info["seed"] >= 0)

    for name, kwargs in [("sampler", {"sampler_name": "LMS"}), ("hires", {"enable_hr": True}),
                         ("faces", {"restore_faces": True}), ("steps", {"steps": 0})]:
        try:
            api.txt2img(prompt="x", width=32, height=32, **kwargs)
            c.check(f"refused-{name}", False, "accepted")
        except RuntimeError as e:
            c.check(f"refused-{name}", e.args[0] == 422, e.args)
    c.check("get_progress", "progress" in api.get_progress())
    c.check("interrupt", api.interrupt() == {})


if __name__ == "__main__":
    run_server_test(check_server)
