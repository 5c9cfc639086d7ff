#!/usr/bin/env python3
"""The OpenAI Images API of `serve` (issue 46) driven by the clients that speak it: the openai Python
SDK (PyPI `openai`; its client.images.generate and client.models.list) and LiteLLM (PyPI `litellm`;
litellm.image_generation with an openai/ model and api_base), for response_format b64_json and url
(OpenAI's default, which LibreChat's DALL-E tool downloads), and the same routes over plain HTTP for
the answer's shape, OpenAI's error shape, the URL store's bounds and Authorization headers. Both
libraries come from $MOSSINFER_CI_PYTHON (default ~/.cache/mossinfer-ci-python); where one is not
installed its checks are skipped (status 77 when neither is).
Usage: openai_images_test.py BINARY MODEL_DIR"""
import base64
import http.client
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))

from harness import Checks, Server, png_pixels  # noqa: E402

try:
    import openai
except ImportError:
    openai = None
try:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    import litellm
except ImportError:
    litellm = None


def post(port, path, body, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", path, body=json.dumps(body).encode(),
                 headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    payload = resp.read()
    conn.close()
    return resp.status, json.loads(payload)


def fetch(url):
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read()


def is_png(data, size=(32, 32)):
    try:
        got, rows = png_pixels(data)
        return got == size and len(rows) > 0
    except Exception:
        return False


def check_http(c, srv):
    port = srv.port
    # b64_json, two images, a Bearer header (accepted), OpenAI's ignored fields.
    status, reply = post(port, "/v1/images/generations",
                         {"prompt": "a red kite", "n": 2, "size": "32x32", "response_format": "b64_json",
                          "model": "dall-e-3", "quality": "hd", "style": "vivid", "background": "auto", "user": "u1"},
                         {"Authorization": "Bearer sk-anything"})
    ok = status == 200 and isinstance(reply.get("created"), int) and len(reply.get("data", [])) == 2
    c.check("http-b64-shape", ok and all(set(d) == {"b64_json"} for d in reply["data"]), (status, str(reply)[:200]))
    if ok:
        c.check("http-b64-png", all(is_png(base64.b64decode(d["b64_json"])) for d in reply["data"]))
    # url (the default): served here while kept.
    status, reply = post(port, "/v1/images/generations", {"prompt": "a red kite", "size": "32x32"})
    ok = status == 200 and len(reply["data"]) == 1 and "url" in reply["data"][0]
    c.check("http-url-shape", ok, (status, reply))
    if ok:
        url = reply["data"][0]["url"]
        c.check("http-url-names-this-server", url.startswith(f"http://127.0.0.1:{port}/v1/images/file?id="), url)
        status, kind, data = fetch(url)
        c.check("http-url-download", status == 200 and kind == "image/png" and is_png(data), (status, kind))
    # A gpt-image model's clients send no response_format and read b64_json, as OpenAI answers them.
    status, reply = post(port, "/v1/images/generations", {"prompt": "x", "size": "32x32", "model": "gpt-image-1"})
    c.check("http-gpt-image-default-b64", status == 200 and "b64_json" in reply["data"][0], (status, str(reply)[:200]))
    # size auto: the server's default size (32x32 here).
    status, reply = post(port, "/v1/images/generations", {"prompt": "x", "size": "auto", "response_format": "b64_json"})
    c.check("http-size-auto", status == 200 and is_png(base64.b64decode(reply["data"][0]["b64_json"])), status)
    # OpenAI's error shape, param naming the OpenAI field.
    for body, param in [({"size": "32x33"}, "size"), ({"size": "big"}, "size"), ({"n": 0}, "n"),
                        ({"response_format": "gif"}, "response_format"), ({"output_format": "jpeg"}, "output_format"),
                        ({"prompt": ""}, "prompt"), ({"n": "many"}, "n")]:
        status, err = post(port, "/v1/images/generations", {"prompt": "x", **body})
        e = err.get("error", {})
        c.check(f"http-error-{param}-{list(body.values())[0]}",
                status == 400 and e.get("param") == param and e.get("message") and
                e.get("type") == "invalid_request_error" and "code" in e, (status, err))
    # An unknown or made-up image: 404 in OpenAI's shape.
    status = None
    try:
        fetch(f"http://127.0.0.1:{port}/v1/images/file?id={'0' * 32}")
    except urllib.error.HTTPError as e:
        status, err = e.code, json.loads(e.read())
        c.check("http-unknown-image-404", status == 404 and "expired" in err["error"]["message"], err)
    c.check("http-unknown-image-refused", status == 404, status)
    # The image's id is no metrics label: one route, whatever the ids asked for.
    metrics = fetch(f"http://127.0.0.1:{port}/metrics")[2].decode()
    c.check("http-image-route-one-label", 'route="/v1/images/file"' in metrics and "0" * 32 not in metrics,
            [line for line in metrics.splitlines() if "images" in line])
    # /v1/models lists the loaded model.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    conn.close()
    c.check("http-models", models["object"] == "list" and models["data"][0]["object"] == "model" and
            "MOSS-Image" in models["data"][0]["id"], models)


def check_openai_sdk(c, srv):
    if openai is None:
        print("SKIP openai SDK: not installed")
        return False
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{srv.port}/v1", api_key="sk-local", max_retries=0)
    c.check("openai-models-list", len(list(client.models.list())) == 1)
    result = client.images.generate(prompt="a paper boat", size="32x32", n=1, response_format="b64_json")
    c.check("openai-b64-json", is_png(base64.b64decode(result.data[0].b64_json)), result)
    result = client.images.generate(prompt="a paper boat", size="32x32")
    url = result.data[0].url
    c.check("openai-url", url is not None and is_png(fetch(url)[2]), result)
    try:
        client.images.generate(prompt="a paper boat", size="30x30")
        c.check("openai-error-raised", False, "accepted")
    except openai.BadRequestError as e:
        # The SDK shows the server's message: OpenAI's error shape.
        c.check("openai-error-message", "size" in str(e) and "16" in str(e), str(e))
    return True


def check_litellm(c, srv):
    if litellm is None:
        print("SKIP litellm: not installed")
        return False
    base = f"http://127.0.0.1:{srv.port}/v1"
    # This LiteLLM sends OpenAI image models gpt-image's parameters, without response_format: the
    # server's default, url; b64_json goes as an extra body field (a LiteLLM proxy's
    # "extra_body" setting does the same).
    for fmt in ["b64_json", "url"]:
        try:
            extra = {"extra_body": {"response_format": fmt}} if fmt == "b64_json" else {}
            response = litellm.image_generation(model="openai/moss-image", prompt="a lantern", api_base=base,
                                                api_key="sk-local", size="32x32", **extra)
            image = response.data[0]
            data = base64.b64decode(image.b64_json) if fmt == "b64_json" else fetch(image.url)[2]
            c.check(f"litellm-{fmt}", is_png(data), response)
        except Exception as e:  # noqa: BLE001: the library's error is the failure's detail
            c.check(f"litellm-{fmt}", False, repr(e)[:400])
    return True


def main():
    binary, model = sys.argv[1], sys.argv[2]
    c = Checks()
    srv = Server(binary, model)
    try:
        check_http(c, srv)
        ran = [check_openai_sdk(c, srv), check_litellm(c, srv)]
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    if not any(ran) and c.failed == 0:
        print("neither openai nor litellm is installed: the clients' checks were skipped")
        sys.exit(77)
    c.finish()


if __name__ == "__main__":
    main()
