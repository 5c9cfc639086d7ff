#!/usr/bin/env python3
"""KoboldAI Lite, its real page, in headless Chromium against `serve` (issue 46): a one-off run, not
CI (Lite's index.html is not in this repository and CI cannot fetch it). The page is served from a
local folder on http://localhost:PAGE_PORT (another origin than the server's, as
lite.koboldai.net or KoboldCpp's own page is), the server runs with --cors-origin '*'.

What is driven: Lite's own settings object chooses the A1111 image generator and its step count
(the Media settings dialog writes the same two fields), then the page's own dialogs: "set A1111
endpoint" (Lite's inputBox, the URL typed, OK clicked: connect_to_a1111 reads sd-models and
options) and "Generate Image > From Prompt" (the prompt typed, OK clicked: generate_new_image ->
generate_a1111_image -> POST /sdapi/v1/txt2img). Evidence: the image Lite stored (its data URI),
a screenshot of the story with the image, the server's log and the browser's console, in OUT.

Usage: lite_chromium.py BINARY MODEL_DIR LITE_INDEX_HTML OUT_DIR"""
import functools
import http.server
import json
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "hip", "tests", "server"))
from chromium import browser  # noqa: E402  (exits 77 without chromium)
from harness import Server, free_port  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def wait_for(driver, script, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.25)
    raise SystemExit(f"timed out after {seconds} s waiting for {what}")


def dismiss_messages(driver, record):
    """Clicks OK on each message box Lite shows (first start, connection notes), keeping its text."""
    for _ in range(5):
        shown = driver.execute_script(
            "return !document.getElementById('msgboxcontainer').classList.contains('hidden') && "
            "document.getElementById('msgboxtitle').innerText + ': ' + document.getElementById('msgboxtxt').innerText")
        if not shown:
            return
        record.setdefault("message_boxes", []).append(shown[:400])
        driver.find_element(By.ID, "msgboxbtnok").click()
        time.sleep(0.3)


def answer_input_box(driver, text):
    """Types into Lite's open inputBox and clicks its OK button."""
    wait_for(driver, "return !document.getElementById('inputboxcontainer').classList.contains('hidden')", 10,
             "Lite's input box")
    field = driver.find_element(By.ID, "inputboxcontainerinput")
    field.clear()
    field.send_keys(text)
    driver.find_element(By.XPATH, "//button[@onclick='onInputboxOk()']").click()


def main():
    binary, model, lite_html, out = sys.argv[1:5]
    os.makedirs(out, exist_ok=True)
    page_dir = os.path.join(out, "page")
    os.makedirs(page_dir, exist_ok=True)
    shutil.copy(lite_html, os.path.join(page_dir, "index.html"))
    page_port = free_port()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=page_dir)
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", page_port), handler)
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    srv = Server(binary, model, ["--cors-origin", "*"])
    driver = browser("--window-size=1280,900", console_log=True)
    record = {"server": f"http://127.0.0.1:{srv.port}", "page": f"http://localhost:{page_port}/index.html"}
    try:
        t0 = time.time()
        driver.get(record["page"])
        record["litever"] = wait_for(driver, "return typeof LITEVER !== 'undefined' && LITEVER", 60, "Lite to load")
        # Lite's Media settings: image generator "A1111 / Forge" (mode 2), 4 steps (its default: 20).
        driver.execute_script("localsettings.generate_images_mode = 2; localsettings.img_steps = 4;")
        time.sleep(2)
        dismiss_messages(driver, record)
        # First start: the welcome dialog's "Set UI" (the classic style, preselected).
        if driver.execute_script("return !document.getElementById('welcomecontainer').classList.contains('hidden')"):
            driver.find_element(By.XPATH, "//button[@onclick='close_welcome_panel(true)']").click()
            dismiss_messages(driver, record)
        driver.execute_script("set_a1111_endpoint()")
        answer_input_box(driver, record["server"])
        record["connected"] = bool(wait_for(driver, "return a1111_is_connected", 30, "connect_to_a1111"))
        dismiss_messages(driver, record)
        record["model_dropdown"] = driver.execute_script(
            "return document.getElementById('generate_images_local_model').value")
        driver.execute_script("add_img_btn_custom()")
        answer_input_box(driver, "a red fox sitting in the snow, watercolor")
        started = time.time()
        state = wait_for(driver, """
            for (const id in image_db) {
              const e = image_db[id];
              if (e.done) return {id: id, done: true, prompt: e.prompt, result: e.result};
              if (e.queue == 'Failed') return {id: id, failed: true};
            }
            return null;""", 600, "the image")
        dismiss_messages(driver, record)
        uri = state.pop("result", "")
        state.update(result_prefix=uri[:40], result_chars=len(uri))
        record["image"] = state
        record["image_seconds"] = round(time.time() - started, 1)
        time.sleep(4)  # Lite's timer swaps the "Queue: Generating" placeholder for the image
        driver.save_screenshot(os.path.join(out, "lite_story_with_image.png"))
        if uri.startswith("data:image/"):
            import base64
            kind, data = uri.split(",", 1)
            ext = "webp" if "webp" in kind else "jpg" if "jpeg" in kind else "png"
            open(os.path.join(out, f"lite_image_db_result.{ext}"), "wb").write(base64.b64decode(data))
        record["total_seconds"] = round(time.time() - t0, 1)
        record["console"] = [f"{e['level']} {e['message'][:300]}" for e in driver.get_log("browser")]
    finally:
        driver.quit()
        open(os.path.join(out, "server.log"), "w").write(srv.output())
        record["server_exit"] = srv.stop()
        pages.shutdown()
        shutil.rmtree(page_dir)  # Lite's page is not ours to keep
        json.dump(record, open(os.path.join(out, "lite_run.json"), "w"), indent=1)
    print(json.dumps({k: v for k, v in record.items() if k != "console"}, indent=1))
    sys.exit(0 if record.get("image", {}).get("done") else 1)


if __name__ == "__main__":
    main()
