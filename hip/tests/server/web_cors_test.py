#!/usr/bin/env python3
"""A browser client on another origin, as KoboldAI Lite runs (a page served from elsewhere that
posts its A1111 request to the server with fetch): Debian's headless Chromium driven by Selenium
loads a page from a second local origin, which does what Lite's connect_to_a1111 and
generate_a1111_image do (LostRuins/lite.koboldai.net index.html at 27eb1dcc, LITEVER 339): fetch
sd-models and options, post Lite's txt2img payload with the options' model in override_settings, and
show images[0] as a data:image/jpeg URL. With `serve --cors-origin '*'` the browser lets the page
read the answers and decodes the image; without it the browser refuses the first request ("Failed
to fetch", as Lite shows) and the server's refusal of the preflight names --cors-origin. (Lite's
own page, driven in Chromium once: bench/results/2026-12-07-session23/lite/.)
Exit 77 only where chromium or chromedriver is absent. Usage: web_cors_test.py BINARY MODEL_DIR"""
import http.server
import os
import sys
import threading

from harness import Checks, Server, http_request

import chromium  # exits 77 (skipped) where chromium or chromedriver is absent

# Lite's payload with its defaults (sizes and steps cut); its model is filled in from /options.
LITE_BODY = {"prompt": "a fox in the snow", "seed": 48213377, "sampler_name": "Euler", "batch_size": 1, "n_iter": 1,
             "steps": 2, "cfg_scale": 5, "width": 32, "height": 32, "negative_prompt": "ugly, deformed",
             "do_not_save_samples": True, "do_not_save_grid": True, "enable_hr": False, "eta": 0, "s_churn": 0,
             "s_tmax": 0, "s_tmin": 0, "s_noise": 1,
             "override_settings": {"sd_model_checkpoint": None, "eta_noise_seed_delta": 0.0,
                                   "CLIP_stop_at_last_layers": 1.0, "ddim_discretize": "uniform",
                                   "img2img_fix_steps": False, "sd_hypernetwork": "None",
                                   "inpainting_mask_weight": 1.0, "initial_noise_multiplier": 1.0,
                                   "comma_padding_backtrack": 20.0}}


class Page(http.server.BaseHTTPRequestHandler):
    """The other origin: one empty HTML page."""

    def do_GET(self):
        body = b"<!doctype html><title>client</title>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def browser():
    return chromium.browser()


def post_from_page(driver, port):
    """Lite's calls from the page: the image count and the decoded image's width, or the error."""
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const base = `http://127.0.0.1:${arguments[0]}`, body = arguments[1];
        (async () => {
          const models = await (await fetch(base + "/sdapi/v1/sd-models")).json();
          const options = await (await fetch(base + "/sdapi/v1/options")).json();
          if (options.samples_format == null || models.length == 0) return done({error: "no models found"});
          body.override_settings.sd_model_checkpoint = options.sd_model_checkpoint;
          const resp = await (await fetch(base + "/sdapi/v1/txt2img", {method: "POST",
              headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)})).json();
          if (!(resp.images && resp.images.length > 0)) return done({error: "Generation Error"});
          const img = new Image();
          img.onload = () => done({images: resp.images.length, width: img.naturalWidth});
          img.onerror = () => done({error: "the image did not decode"});
          img.src = "data:image/jpeg;base64," + resp.images[0];
        })().catch(e => done({error: String(e)}));""", port, LITE_BODY)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    origin = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=origin.serve_forever, daemon=True).start()
    driver = browser()
    driver.set_script_timeout(120)
    try:
        driver.get(f"http://localhost:{origin.server_address[1]}/")  # another origin than 127.0.0.1:PORT
        srv = Server(binary, model, ["--cors-origin", "*"])
        try:
            got = post_from_page(driver, srv.port)
            c.check("any-origin-page-gets-image", got == {"images": 1, "width": 32}, got)
        finally:
            srv.stop()
        srv = Server(binary, model)
        try:
            got = post_from_page(driver, srv.port)
            c.check("no-cors-browser-refuses", "error" in got and "fetch" in got["error"].lower(), got)
            status, err, _, _ = http_request(srv.port, "OPTIONS", "/sdapi/v1/txt2img")
            c.check("no-cors-preflight-names-option", status == 405 and "--cors-origin" in err["error"], (status, err))
        finally:
            srv.stop()
    finally:
        driver.quit()
        origin.shutdown()
    c.finish()


if __name__ == "__main__":
    main()
