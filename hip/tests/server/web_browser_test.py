#!/usr/bin/env python3
"""The web page at / of `serve` in a real browser: Debian's headless Chromium driven by Selenium
(PyPI; CI installs it into $MOSSINFER_CI_PYTHON, default ~/.cache/mossinfer-ci-python) through
Debian's chromedriver, at a phone's width. Loads the page, generates with Ctrl+Enter, watches the
progress move, compares the image (its <img> and its download link) with the CLI's pixels for the
same settings, checks the record and the history, a random seed and its reuse, interrupt, and an
invalid size showing the server's own message. Issue 46: the server's defaults in the fields'
placeholders, the stage named with its own progress, no ETA before a step has run, the previous
image marked while a new one runs, the result scrolled into view at a phone's width, and the steps
that ran after an interrupt in the history.
Exit 77 (ctest: skipped) only where chromium or chromedriver is absent. With MOSSINFER_TEST_CHROOT
the server is the AMD release's binary inside the ROCm root (hip/ci/amd.sh).
Usage: web_browser_test.py BINARY MODEL_DIR"""
import base64
import os
import re
import sys
import tempfile
import time

from harness import run_server_test, cli_png, png_pixels

import chromium  # exits 77 (skipped) where chromium or chromedriver is absent
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

PHONE = (390, 844)  # CSS pixels of a common phone
# Steps of the watched generation: long enough (seconds on the tiny model) for the page's 250 ms
# progress polls to see several steps on a fast machine too.
STEPS = 32


def browser():
    return chromium.browser(f"--window-size={PHONE[0]},{PHONE[1]}", console_log=True)


def fetch_bytes(driver, url):
    """The bytes behind a URL of the page (a blob: URL of an image), read by the page itself."""
    b64 = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        fetch(arguments[0]).then(r => r.arrayBuffer()).then(b => {
          let s = ""; const u = new Uint8Array(b);
          for (let i = 0; i < u.length; i++) s += String.fromCharCode(u[i]);
          done(btoa(s));
        }).catch(e => done("error: " + e));""", url)
    if b64.startswith("error"):
        raise AssertionError(f"the page cannot read {url}: {b64}")
    return base64.b64decode(b64)


def set_value(driver, element_id, value):
    el = driver.find_element(By.ID, element_id)
    el.clear()
    if value != "":
        el.send_keys(str(value))


def custom_size(driver, w, h):
    Select(driver.find_element(By.ID, "size")).select_by_value("custom")
    set_value(driver, "width", w)
    set_value(driver, "height", h)


def wait_idle(driver, timeout=300):
    """Until the running request has its answer (Generate is enabled again)."""
    WebDriverWait(driver, timeout, poll_frequency=0.05).until(
        lambda d: d.find_element(By.ID, "generate").is_enabled())


def generate_watching(driver, start):
    """Starts a generation with `start()` and samples the progress line every few milliseconds
    until the answer: returns the (step, steps) pairs seen, in order, and the lines seen."""
    start()
    seen, lines, deadline = [], set(), time.time() + 300
    WebDriverWait(driver, 10, poll_frequency=0.02).until(lambda d: not d.find_element(By.ID, "generate").is_enabled())
    while time.time() < deadline and not driver.find_element(By.ID, "generate").is_enabled():
        line = driver.find_element(By.ID, "progress-text").text
        lines.add(line)
        m = re.search(r"step (\d+)/(\d+)", line)
        if m and (not seen or seen[-1] != (int(m[1]), int(m[2]))):
            seen.append((int(m[1]), int(m[2])))
        time.sleep(0.02)
    return seen, lines


def shown_seed(driver):
    m = re.search(r"Seed: (\d+)", driver.find_element(By.ID, "record").text)
    return int(m[1]) if m else None


def check_page(c, srv, binary, model):
    work = tempfile.mkdtemp()
    driver = browser()
    try:
        driver.get(f"http://127.0.0.1:{srv.port}/")
        c.check("title", driver.title == "moss-infer-hip", driver.title)
        WebDriverWait(driver, 10).until(lambda d: "tiny-moss" in d.find_element(By.ID, "model").text)
        c.check("model-named", True)
        width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        c.check("phone-width-no-sideways-scroll", width[0] <= width[1], width)
        c.check("random-seed-by-default", driver.find_element(By.ID, "random-seed").is_selected())
        # The server's defaults (the harness's serve --steps 2 --size 32x32) in the placeholders.
        c.check("placeholder-steps", driver.find_element(By.ID, "steps").get_attribute("placeholder") ==
                "server default: 2", driver.find_element(By.ID, "steps").get_attribute("placeholder"))
        c.check("placeholder-cfg", driver.find_element(By.ID, "cfg").get_attribute("placeholder") ==
                "server default: 3", driver.find_element(By.ID, "cfg").get_attribute("placeholder"))
        c.check("placeholder-size", "32 × 32" in Select(driver.find_element(By.ID, "size")).first_selected_option.text)
        c.check("placeholder-seed", driver.find_element(By.ID, "seed").get_attribute("placeholder") ==
                "drawn at random")

        # Generate with Ctrl+Enter: fixed seed, custom size; progress moves; the CLI's pixels.
        driver.find_element(By.ID, "prompt").send_keys("a red apple")
        driver.find_element(By.ID, "negative").send_keys("blurry")
        custom_size(driver, 128, 96)
        set_value(driver, "steps", STEPS)
        set_value(driver, "cfg", 4.5)
        set_value(driver, "seed", 6)
        c.check("typing-a-seed-keeps-it", not driver.find_element(By.ID, "random-seed").is_selected())
        seen, lines = generate_watching(
            driver, lambda: driver.find_element(By.ID, "prompt").send_keys(Keys.CONTROL, Keys.ENTER))
        print(f"     progress steps seen: {seen}")
        c.check("progress-moves", len(seen) >= 2 and seen == sorted(seen) and all(n == STEPS for _, n in seen), seen)
        c.check("progress-has-eta", any(re.search(rf"denoise · step \d+/{STEPS} · \d+% · ETA \d+\.\d s", x)
                                            for x in lines), lines)
        # No ETA until a step has run, and none while decoding; the stages are named.
        c.check("no-eta-before-a-step", not any(re.search(r"step 0/|^(starting|text encoder|loading).*ETA", x)
                                                 and "ETA" in x for x in lines), lines)
        c.check("no-eta-while-decoding", not any(x.startswith("decoding") and "ETA" in x for x in lines), lines)
        c.check("stages-named", any(x.startswith("denoise · step") for x in lines), lines)
        # At a phone's width the finished image is scrolled into view.
        top = driver.execute_script("return document.getElementById('result').getBoundingClientRect().top")
        c.check("result-scrolled-into-view", 0 <= top < PHONE[1] / 2, top)
        c.check("progress-done", driver.find_element(By.ID, "progress-text").text == "done")
        img = driver.find_element(By.ID, "result-img")
        cli = cli_png(binary, model, work, "--prompt", "a red apple", "--negative", "blurry", "--seed", "6",
                      "--size", "128x96", "--steps", str(STEPS), "--cfg", "4.5")
        page_png = fetch_bytes(driver, img.get_attribute("src"))
        c.check("image-shown-cli-pixels", img.is_displayed() and page_png[:4] == b"\x89PNG" and
                png_pixels(page_png) == png_pixels(cli), img.get_attribute("src")[:40])
        link = driver.find_element(By.ID, "download")
        c.check("download-link-cli-pixels", link.get_attribute("download") == "moss-6.png" and
                png_pixels(fetch_bytes(driver, link.get_attribute("href"))) == png_pixels(cli),
                link.get_attribute("download"))
        record = driver.find_element(By.ID, "record").text
        c.check("record-shown", "a red apple" in record and "Seed: 6" in record and "Size: 128x96" in record and
                f"Steps: {STEPS}" in record, record)
        c.check("record-details", '"cfg_scale": 4.5' in driver.find_element(By.ID, "record-json").get_attribute(
            "textContent"))
        c.check("no-error-shown", not driver.find_element(By.ID, "error").is_displayed())

        # A random seed, drawn by the page and shown; the history keeps both; reuse the first.
        driver.find_element(By.ID, "random-seed").click()
        Select(driver.find_element(By.ID, "size")).select_by_value("")  # the server's default (32x32)
        set_value(driver, "steps", "")
        driver.find_element(By.ID, "generate").click()
        wait_idle(driver)
        c.check("previous-mark-cleared", not driver.find_element(By.ID, "previous-note").is_displayed() and
                driver.find_element(By.ID, "result").get_attribute("class") == "")
        drawn = driver.find_element(By.ID, "seed").get_attribute("value")
        c.check("random-seed-drawn-and-shown", drawn.isdigit() and shown_seed(driver) == int(drawn),
                (drawn, shown_seed(driver)))
        c.check("random-seed-server-default-size", "Size: 32x32" in driver.find_element(By.ID, "record").text)
        items = driver.find_elements(By.CSS_SELECTOR, "#history li")
        c.check("history-two-newest-first", len(items) == 2 and drawn in items[0].text and "seed 6" in items[1].text,
                [i.text for i in items])
        items[1].click()
        c.check("history-shows-older", shown_seed(driver) == 6, shown_seed(driver))
        driver.find_element(By.ID, "reuse-seed").click()
        c.check("reuse-seed", driver.find_element(By.ID, "seed").get_attribute("value") == "6" and
                not driver.find_element(By.ID, "random-seed").is_selected())

        # Interrupt a long request: the page says so and is ready for the next.
        custom_size(driver, 128, 96)
        set_value(driver, "steps", 400)
        driver.find_element(By.ID, "generate").click()
        WebDriverWait(driver, 60, poll_frequency=0.05).until(
            lambda d: re.search(r"step [1-9]", d.find_element(By.ID, "progress-text").text))
        # While it runs the image on display is marked as the previous one.
        c.check("previous-image-marked", driver.find_element(By.ID, "previous-note").is_displayed() and
                driver.find_element(By.ID, "result").get_attribute("class") == "previous")
        driver.find_element(By.ID, "interrupt").click()
        wait_idle(driver, 60)
        c.check("interrupt", "interrupted" in driver.find_element(By.ID, "progress-text").text,
                driver.find_element(By.ID, "progress-text").text)
        # The history records the steps that ran, not the 400 asked for.
        caption = driver.find_elements(By.CSS_SELECTOR, "#history li")[0].text
        m = re.search(r"(\d+) of 400 steps", caption)
        c.check("interrupt-steps-ran-in-history", m is not None and 1 <= int(m[1]) < 400, caption)

        # An invalid size: the page shows the server's own message for that request.
        custom_size(driver, 36, 36)
        set_value(driver, "steps", 2)
        driver.find_element(By.ID, "generate").click()
        wait_idle(driver)
        status, err, _ = srv.request("POST", "/sdapi/v1/txt2img",
                                     {"prompt": "a red apple", "width": 36, "height": 36, "steps": 2, "seed": 6})
        shown = driver.find_element(By.ID, "error")
        c.check("invalid-size-server-message", status == 422 and shown.is_displayed() and
                err["error"] in shown.text and "422" in shown.text, (status, err, shown.text))
        c.check("no-image-replaced", shown_seed(driver) == 6)

        problems = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "422" not in e["message"]]
        c.check("browser-console-clean", not problems, problems[:3])
    finally:
        driver.quit()


if __name__ == "__main__":
    run_server_test(check_page)
