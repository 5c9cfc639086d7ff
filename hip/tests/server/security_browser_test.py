#!/usr/bin/env python3
"""Issue 50 in a real browser (Debian's headless Chromium through Selenium, as web_browser_test.py):
a page of another site, served here on another port, tries what any page a person visits can try
against their local server:
  - HTML forms posted to txt2img with enctype text/plain (a JSON body in disguise),
    application/x-www-form-urlencoded and multipart/form-data;
  - fetch() in no-cors mode: POST /sdapi/v1/interrupt without a body, POST txt2img with a
    text/plain JSON body;
  - fetch() in cors mode reading GET /sdapi/v1/options (the browser must not hand it the answer);
and a DNS-rebinding page (a name the browser resolves to 127.0.0.1) loading the server's routes.
None may compute, interrupt or read: the server's metrics count the refusals (403 for a foreign
Origin, 415 for the forms' types, 421 for the rebound name) and no image. The user's own page still
works from the server's origin (a same-origin interrupt is answered 200).
Exit 77 (ctest: skipped) only where chromium or chromedriver is absent.
Usage: security_browser_test.py BINARY MODEL_DIR"""
import http.server
import os
import re
import sys
import threading
import time
import urllib.request

from harness import Server, Checks, free_port

import chromium  # exits 77 (skipped) where chromium or chromedriver is absent
from selenium.webdriver.support.ui import WebDriverWait

REBIND = "rebind.example"  # resolved to 127.0.0.1 by the browser (--host-resolver-rules)


def attack_page(target):
    """The other site's page: three forms into hidden frames, then the fetches; the page writes what
    it could read into #report and sets the title to "done"."""
    forms = []
    for i, enctype in enumerate(("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")):
        forms.append(f'<iframe name="f{i}"></iframe>'
                     f'<form id="form{i}" method="POST" action="{target}/sdapi/v1/txt2img" enctype="{enctype}" '
                     f'target="f{i}"><input name=\'{{"prompt":"csrf","steps":2,"x":"\' value=\'"}}\'></form>')
    return f"""<!doctype html><html><head><title>attack</title></head><body>
{''.join(forms)}
<pre id="report"></pre>
<script>
const report = (t) => {{ document.getElementById("report").textContent += t + "\\n"; }};
for (let i = 0; i < 3; i++) document.getElementById("form" + i).submit();
(async () => {{
  await new Promise((r) => setTimeout(r, 500));
  try {{ await fetch("{target}/sdapi/v1/interrupt", {{method: "POST", mode: "no-cors"}}); report("interrupt sent"); }}
  catch (e) {{ report("interrupt error " + e); }}
  try {{
    await fetch("{target}/sdapi/v1/txt2img", {{method: "POST", mode: "no-cors",
                headers: {{"Content-Type": "text/plain"}}, body: '{{"prompt": "csrf fetch", "steps": 2}}'}});
    report("txt2img sent");
  }} catch (e) {{ report("txt2img error " + e); }}
  try {{
    const r = await fetch("{target}/sdapi/v1/options");
    report("READ options " + (await r.text()).slice(0, 40));
  }} catch (e) {{ report("read refused"); }}
  await new Promise((r) => setTimeout(r, 1500));
  document.title = "done";
}})();
</script></body></html>"""


def serve_page(html):
    """The other site: an HTTP server on a port of its own answering every GET with `html`."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def browser():
    return chromium.browser(f"--host-resolver-rules=MAP {REBIND} 127.0.0.1")


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    counts = {}
    for route, status, n in re.findall(r'moss_http_requests_total\{route="([^"]*)",status="(\d+)"\} (\S+)', text):
        counts[(route, int(status))] = counts.get((route, int(status)), 0) + float(n)
    images = sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith("moss_images_total"))
    return counts, images


def check_page_seeds(c, driver, port):
    """The page keeps a typed seed as text: one past 2^53 reaches the server digit for digit; what
    is not a decimal integer from -1 to 2^64-1 is refused on the page, with no request."""
    from selenium.webdriver.common.by import By
    box = driver.find_element(By.ID, "random-seed")
    if box.is_selected():
        box.click()
    driver.find_element(By.ID, "prompt").send_keys("seed as text")
    steps = driver.find_element(By.ID, "steps")
    steps.clear()
    steps.send_keys("1")
    before, _ = metrics(port)
    sent = lambda counts: sum(n for (r, _), n in counts.items() if r == "/sdapi/v1/txt2img")
    for bad in ("0x10", "1e3", "18446744073709551616", "-2", "12.5", "٣"):
        seed = driver.find_element(By.ID, "seed")
        seed.clear()
        seed.send_keys(bad)
        driver.find_element(By.ID, "generate").click()
        error = driver.find_element(By.ID, "error").text
        c.check(f"page-seed-refused {bad!r}", "The seed must be a whole number" in error, error)
    after, _ = metrics(port)
    c.check("page-seed-refused-no-request", sent(after) == sent(before), (before, after))
    big = "18446744073709551557"  # past 2^53: a JavaScript number would round it
    seed = driver.find_element(By.ID, "seed")
    seed.clear()
    seed.send_keys(big)
    driver.find_element(By.ID, "generate").click()
    WebDriverWait(driver, 300, poll_frequency=0.1).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#history li") or d.find_element(By.ID, "error").text)
    items = driver.find_elements(By.CSS_SELECTOR, "#history li")
    c.check("page-seed-past-2^53-exact", items and f"seed {big}" in items[0].text,
            [i.text for i in items] or driver.find_element(By.ID, "error").text)
    record = driver.execute_script("return document.getElementById('record') && document.getElementById('record').textContent")
    c.check("page-seed-record-exact", big in (record or ""), record)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    srv = Server(binary, model)
    target = f"http://127.0.0.1:{srv.port}"
    other = serve_page(attack_page(target))
    driver = browser()
    try:
        driver.get(f"http://127.0.0.1:{other.server_address[1]}/attack.html")
        WebDriverWait(driver, 60).until(lambda d: d.title == "done")
        report = driver.execute_script("return document.getElementById('report').textContent")
        c.check("browser-cross-site-read-refused", "read refused" in report and "READ" not in report, report)
        time.sleep(0.5)
        counts, images = metrics(srv.port)
        c.check("browser-forms-refused-403", counts.get(("/sdapi/v1/txt2img", 403), 0) >= 4, counts)
        c.check("browser-interrupt-refused-403", counts.get(("/sdapi/v1/interrupt", 403), 0) >= 1, counts)
        c.check("browser-nothing-computed", images == 0 and not any(
            s == 200 for (r, s) in counts if r in ("/sdapi/v1/txt2img", "/sdapi/v1/interrupt")), (images, counts))
        # DNS rebinding: the page's name now points here; its requests carry that name as Host.
        driver.get(f"http://{REBIND}:{srv.port}/sdapi/v1/options")
        source = driver.page_source
        c.check("browser-rebinding-refused-421", "is not a name of this server" in source and
                "sd_model_checkpoint" not in source, source[:300])
        driver.get(f"http://{REBIND}:{srv.port}/")
        c.check("browser-rebinding-page-refused", "Generate" not in driver.page_source, driver.page_source[:200])
        counts, _ = metrics(srv.port)
        c.check("browser-rebinding-counted-421", counts.get(("/sdapi/v1/options", 421), 0) >= 1, counts)
        # The user's own page, from the server's origin: its interrupt is answered.
        driver.get(target + "/")
        result = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            fetch("/sdapi/v1/interrupt", {method: "POST"}).then(r => done(r.status)).catch(e => done(String(e)));""")
        c.check("browser-own-page-interrupt-200", result == 200, result)
        check_page_seeds(c, driver, srv.port)
    finally:
        driver.quit()
        other.shutdown()
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    c.finish()


if __name__ == "__main__":
    main()
