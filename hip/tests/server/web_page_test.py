#!/usr/bin/env python3
"""The web page at / of `serve`, over plain HTTP (no browser: web_browser_test.py drives it in
Chromium): GET / answers the page (src/server/web/index.html, byte for byte but for the server's
defaults put in its {{...}} placeholders: serve --steps 2 --size 32x32 here) as UTF-8 HTML with a
policy that forbids loading anything from elsewhere; the page names no other origin; every route it
calls answers, and txt2img with the page's request body gives the CLI's image.
Also run from the AMD release tarball (hip/ci/amd_package_check.sh): the shipped server.
Usage: web_page_test.py BINARY MODEL_DIR"""
import http.client
import os
import re
import tempfile

from harness import run_server_test, b64png, cli_png, png_pixels, http_request

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "server", "web", "index.html")


def page_request(**fields):
    """The body the page's buildRequest() sends (hip/src/server/web/index.html)."""
    return {"prompt": "", "negative_prompt": "", "sampler_name": "Euler", "batch_size": 1, "n_iter": 1, **fields}


def check_static(c):
    html = open(PAGE, encoding="utf-8").read()
    # Self-contained: no script, style sheet, font or image from a file or another origin.
    style = html[html.index("<style>"):html.index("</style>")]
    c.check("page-no-external-resource", not re.search(r'<script[^>]*\bsrc=|<link(?![^>]*href="data:)|<iframe|<object|<embed', html, re.I)
            and not re.search(r"@import|url\(", style, re.I))
    c.check("page-names-no-origin", not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", html, re.I),
            re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}\S*", html, re.I)[:3])
    c.check("page-phone-viewport", 'name="viewport" content="width=device-width' in html)
    routes = sorted(set(re.findall(r'fetch\("(/[^"]*)"', html)))
    c.check("page-calls-a1111-routes-only",
            routes == ["/sdapi/v1/interrupt", "/sdapi/v1/progress", "/sdapi/v1/samplers", "/sdapi/v1/schedulers",
                       "/sdapi/v1/sd-models", "/sdapi/v1/txt2img"], routes)


def check_server(c, srv, binary, model):
    page = open(PAGE, encoding="utf-8").read()
    c.check("page-has-default-placeholders", all(t in page for t in ("{{steps}}", "{{cfg}}", "{{size}}", "{{seed}}")))
    for token, value in [("{{steps}}", "2"), ("{{cfg}}", "3"), ("{{size}}", "32 × 32"), ("{{seed}}", "drawn at random")]:
        page = page.replace(token, value)
    expected = page.encode("utf-8")
    for method in ("GET", "HEAD"):
        status, _, body = srv.request(method, "/")
        c.check(f"{method}-root-200", status == 200, status)
    conn_headers = raw_headers(srv, "/")
    c.check("root-content-type-html-utf8", conn_headers.get("content-type") == "text/html; charset=utf-8", conn_headers)
    c.check("root-csp-self-contained", "default-src 'none'" in conn_headers.get("content-security-policy", "") and
            "connect-src 'self'" in conn_headers.get("content-security-policy", ""), conn_headers)
    c.check("root-nosniff", conn_headers.get("x-content-type-options") == "nosniff", conn_headers)
    # Issue 50: the page's own script and style run by this answer's nonce, nothing inline else;
    # no site may frame it.
    csp = conn_headers.get("content-security-policy", "")
    directives = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
    c.check("root-csp-no-unsafe-inline", "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp, csp)
    c.check("root-csp-frame-ancestors-none", directives.get("frame-ancestors") == ["'none'"] and
            conn_headers.get("x-frame-options") == "DENY", conn_headers)
    nonces = []
    for _ in range(2):
        status, _, body, headers = http_request(srv.port, "GET", "/")
        policy = headers.get("content-security-policy", "")
        nonce = re.search(r"script-src 'nonce-([A-Za-z0-9+/=]{22,})'", policy)
        marked = re.findall(rb'<(script|style) nonce="([^"]*)">', body)
        c.check("root-nonce-on-script-and-style", nonce is not None and
                sorted(t for t, _ in marked) == [b"script", b"style"] and
                all(n.decode() == nonce.group(1) for _, n in marked) and
                f"style-src 'nonce-{nonce.group(1)}'" in policy, (policy, marked))
        nonces.append(nonce.group(1) if nonce else None)
        c.check("root-body-is-the-page", re.sub(rb' nonce="[^"]*"', b"", body) == expected,
                f"{len(body)} bytes, page has {len(expected)}")
        c.check("root-not-cached", headers.get("cache-control") == "no-store", headers.get("cache-control"))
    c.check("root-nonce-fresh-per-answer", nonces[0] != nonces[1], nonces)
    # Nothing the policy would refuse: no inline handler or style attribute in the page.
    c.check("page-no-inline-handlers", not re.search(rb'\son[a-z]+\s*=|\sstyle\s*=', expected), 
            re.findall(rb'\s(?:on[a-z]+|style)\s*=[^>]*', expected)[:3])
    status, _, body = srv.request("GET", "/?from=bookmark")
    c.check("root-with-query-is-the-page", status == 200 and re.sub(rb' nonce="[^"]*"', b"", body) == expected,
            status)
    status, err, _ = srv.request("POST", "/", {"prompt": "x"})
    c.check("root-post-refused-json", status in (404, 405) and err is not None and "error" in err, status)

    # The routes the page calls, as it calls them.
    status, models, _ = srv.request("GET", "/sdapi/v1/sd-models")
    c.check("page-sd-models", status == 200 and "tiny-moss" in models[0]["title"], models)
    for route, first in (("samplers", "Euler"), ("schedulers", "automatic")):  # the menus
        status, items, _ = srv.request("GET", "/sdapi/v1/" + route)
        c.check(f"page-{route}", status == 200 and items[0]["name"] == first and len(items) > 1, items)
    status, p, _ = srv.request("GET", "/sdapi/v1/progress")
    c.check("page-progress-idle", status == 200 and p["state"]["job"] == "" and p["progress"] == 0, p)
    status, _, _ = srv.request("POST", "/sdapi/v1/interrupt", raw=b"")
    c.check("page-interrupt-idle", status == 200, status)
    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img",
                               page_request(prompt="a red apple", negative_prompt="blurry", seed=3405691582,
                                            width=48, height=32, steps=3, cfg_scale=4.5))
    cli = cli_png(binary, model, tempfile.mkdtemp(), "--prompt", "a red apple", "--negative", "blurry",
                  "--seed", "3405691582", "--size", "48x32", "--steps", "3", "--cfg", "4.5")
    c.check("page-txt2img-cli-image", status == 200 and png_pixels(b64png(r["images"][0])) == png_pixels(cli),
            status if status != 200 else "pixels differ")
    # Fields left empty on the page are left out: the server's defaults (32x32, 2 steps here) apply.
    status, r, _ = srv.request("POST", "/sdapi/v1/txt2img", page_request(prompt="a red apple", seed=7))
    cli = cli_png(binary, model, tempfile.mkdtemp(), "--prompt", "a red apple", "--negative", "", "--seed", "7")
    c.check("page-defaults-cli-image", status == 200 and png_pixels(b64png(r["images"][0])) == png_pixels(cli),
            status if status != 200 else "pixels differ")
    status, err, _ = srv.request("POST", "/sdapi/v1/txt2img", page_request(prompt="x", width=36, height=36, seed=1))
    c.check("page-bad-size-message", status == 422 and "multiple" in err.get("error", ""), (status, err))


def raw_headers(srv, path):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    conn.request("GET", path)
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return {k.lower(): v for k, v in resp.getheaders()}


if __name__ == "__main__":
    run_server_test(check_server, before=lambda c, binary, model: check_static(c))
