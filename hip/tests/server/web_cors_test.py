#!/usr/bin/env python3
"""A browser client on another origin, as KoboldAI Lite runs (a page served from elsewhere that
posts its A1111 request to the server with fetch): Debian's headless Chromium driven by Selenium
loads a page from a second local origin, which posts Lite's txt2img body (its override_settings at
A1111's defaults; issue 46's record of Lite's request) to `serve`. With `serve --cors-origin '*'`
the browser lets the page read the image; without it the browser refuses the request ("Failed to
fetch", as Lite shows) and the server's refusal of the preflight names --cors-origin.
Exit 77 only where chromium or chromedriver is absent. Usage: web_cors_test.py BINARY MODEL_DIR"""
import http.server
import os
import sys
import threading

from harness import Checks, Server, http_request

import chromium  # exits 77 (skipped) where chromium or chromedriver is absent

LITE_BODY = {"prompt": "a fox in the snow", "negative_prompt": "ugly, deformed", "sampler_name": "Euler",
             "batch_size": 1, "n_iter": 1, "steps": 2, "cfg_scale": 7, "width": 32, "height": 32,
             "restore_faces": False, "seed": -1,
             "override_settings": {"sd_vae": "Automatic", "ddim_discretize": "uniform", "img2img_fix_steps": False,
                                   "sd_hypernetwork": "None", "inpainting_mask_weight": 1.0,
                                   "initial_noise_multiplier": 1.0, "comma_padding_backtrack": 20},
             "override_settings_restore_afterwards": True}


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
    """What the page gets from fetch(): the image count, or the error's message."""
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(`http://127.0.0.1:${arguments[0]}/sdapi/v1/txt2img`, {method: "POST",
              headers: {"Content-Type": "application/json"}, body: JSON.stringify(arguments[1])})
          .then(r => r.json()).then(j => done({images: (j.images || []).length}))
          .catch(e => done({error: String(e)}));""", port, LITE_BODY)


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
            c.check("any-origin-page-gets-image", got == {"images": 1}, got)
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
