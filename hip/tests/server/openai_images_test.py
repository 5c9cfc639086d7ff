#!/usr/bin/env python3
"""The OpenAI Images API of `serve` (issue 46) driven by the clients that speak it: the openai Python
SDK (PyPI `openai`; its client.images.generate and client.models.list) and LiteLLM (PyPI `litellm`;
litellm.image_generation with an openai/ model and api_base), for response_format b64_json and url
(OpenAI's default, which LibreChat's DALL-E tool downloads), and the same routes over plain HTTP for
the answer's shape, OpenAI's error shape, the URL store's bounds and Authorization headers. And three
clients replayed from their sources (the table SOURCES: repository, file, commit read): Open WebUI's
"openai" image engine, LibreChat's DALL-E 3 tool and the openai Node SDK it calls through, each with
its headers, its body and its reading of the answer (sizes cut for the host backend). Both
libraries come from $MOSSINFER_CI_PYTHON (default ~/.cache/mossinfer-ci-python); where one is not
installed its checks are skipped (status 77 when neither is and nothing else ran).
Usage: openai_images_test.py BINARY MODEL_DIR"""
import base64
import json
import os
import re
import sys
import urllib.parse
import urllib.request

sys.path.insert(0, os.environ.get("MOSSINFER_CI_PYTHON", os.path.expanduser("~/.cache/mossinfer-ci-python")))

from harness import Checks, Server, http_request, png_pixels  # noqa: E402

try:
    import openai
except ImportError:
    openai = None
try:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    import litellm
except ImportError:
    litellm = None


# What was read, and where. (LibreChat and Open WebUI are read through the code index, whose
# stored version of a file may be one commit of many.)
SOURCES = {
    "open_webui": ("open-webui/open-webui", "backend/open_webui/routers/images.py (get_image_model, "
                   "image_generations, get_image_data), backend/open_webui/config.py (IMAGE_SIZE, "
                   "IMAGE_URL_RESPONSE_MODELS_REGEX_PATTERN)", "02530d501461"),
    "librechat": ("danny-avila/LibreChat", "api/app/clients/tools/structured/DALLE3.js (_call), "
                  "api/server/services/Files/images/parse.js (getImageBasename), "
                  "api/server/services/Files/Local/crud.js (saveFileFromURL)", "37d31ec25f2a"),
    "openai_node": ("openai/openai-node", "src/resources/images.ts (generate), src/client.ts (buildHeaders), "
                    "src/internal/detect-platform.ts, src/core/error.ts (APIError.generate, makeMessage)",
                    "7b7d6ca71130 (7.5.0)"),
}


def post(port, path, body, headers=None):
    status, parsed, _, _ = http_request(port, "POST", path, body, headers=headers)
    return status, parsed


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
    models = http_request(port, "GET", "/v1/models")[1]
    c.check("http-models", models["object"] == "list" and models["data"][0]["object"] == "model" and
            "MOSS-Image" in models["data"][0]["id"], models)


def openai_node_headers(api_key):
    """What openai-node 7.5.0 sends with every request under Node (buildHeaders, getPlatformHeaders), as
    the SDK run for real sent them (bench/results/2026-12-07-session23/openai-node: no
    X-Stainless-Timeout unless a call sets its own timeout)."""
    return {"Accept": "application/json", "Content-Type": "application/json", "User-Agent": "OpenAI/JS 7.5.0",
            "X-Stainless-Retry-Count": "0", "X-Stainless-Lang": "js",
            "X-Stainless-Package-Version": "7.5.0", "X-Stainless-OS": "Linux", "X-Stainless-Arch": "x64",
            "X-Stainless-Runtime": "node", "X-Stainless-Runtime-Version": "v22.12.0",
            "Authorization": f"Bearer {api_key}"}


def openai_node_error_message(status, body):
    """APIError.generate / makeMessage: the answer's `error` object; its message after the status."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"{status} {message}" if isinstance(message, str) else None


def check_openai_node(c, srv):
    """images.generate(): POST {baseURL}/images/generations with the params as the body, as given."""
    headers = openai_node_headers("sk-local")
    status, reply = post(srv.port, "/v1/images/generations",
                         {"prompt": "a paper boat", "size": "32x32", "response_format": "b64_json"}, headers)
    c.check("node-sdk-b64-json", status == 200 and is_png(base64.b64decode(reply["data"][0]["b64_json"])), status)
    status, reply = post(srv.port, "/v1/images/generations", {"prompt": "a paper boat", "size": "30x30"}, headers)
    message = openai_node_error_message(status, reply)
    error = reply.get("error", {})
    c.check("node-sdk-error-read", status == 400 and message and message.startswith("400 ") and "size" in message and
            error.get("param") == "size" and error.get("type") == "invalid_request_error" and "code" in error,
            (status, reply))


def check_librechat_dalle3(c, srv):
    """The DALL-E 3 tool with its base URL (DALLE_REVERSE_PROXY) on this server: openai-node's
    images.generate with the tool's defaults (quality standard, style vivid, size 1024x1024, here
    cut to 32x32: the tool's schema allows only 1024x1024, 1792x1024 and 1024x1792), no
    response_format, so OpenAI's default for DALL-E models, a url; then resp.data[0].url downloaded."""
    prompt = 'A watercolor painting of a lighthouse on a cliff at dawn, "soft light"\nwaves below'
    cleaned = re.sub(r"\r\n|\r|\n", " ", prompt).replace('"', "").strip()  # replaceUnwantedChars
    status, reply = post(srv.port, "/v1/images/generations",
                         {"model": "dall-e-3", "quality": "standard", "style": "vivid", "size": "32x32",
                          "prompt": cleaned, "n": 1}, openai_node_headers("sk-librechat"))
    url = reply["data"][0].get("url") if status == 200 else None
    c.check("librechat-url-answer", isinstance(url, str) and url.startswith("http://"), (status, reply))
    if not url:
        return
    # getImageBasename(): the URL path's last part when it ends in an image extension, else "";
    # the file is then named img-<uuid>. and saveFileFromURL() puts the extension its bytes show.
    basename = os.path.basename(urllib.parse.urlparse(url).path)
    image_name = re.search(r"\.(jpg|jpeg|png|gif|bmp|tiff|svg)$", basename, re.I)
    extension = os.path.splitext(basename)[1] if image_name else ""
    c.check("librechat-basename", extension in ("", ".png"), basename)
    # saveFileFromURL(): axios GET of the URL (responseType arraybuffer, axios's default headers).
    parts = urllib.parse.urlparse(url)
    status, _, data, headers = http_request(int(parts.port), "GET", parts.path + "?" + parts.query,
                                            headers={"Accept": "application/json, text/plain, */*",
                                                     "User-Agent": "axios/1.7.9", "Content-Type": None})
    c.check("librechat-download", status == 200 and data[:8] == b"\x89PNG\r\n\x1a\n" and is_png(data),
            (status, headers.get("content-type")))


def check_open_webui(c, srv):
    """Engine "openai" with the base URL http://127.0.0.1:PORT/v1 and an empty key (allowed): the
    request of image_generations() through aiohttp, the answer read as it reads it."""
    aiohttp_headers = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate", "User-Agent": "Python/3.11 aiohttp/3.12.15"}
    headers = {**aiohttp_headers, "Authorization": "Bearer ", "Content-Type": "application/json"}
    # No model chosen: get_image_model() sends dall-e-2, and a model not matching ^gpt-image gets
    # response_format b64_json; IMAGE_SIZE (default 512x512, cut) is sent as size.
    for model, body in [("dall-e-2", {"model": "dall-e-2", "prompt": "a blue bicycle", "n": 1, "size": "32x32",
                                      "response_format": "b64_json"}),
                        # A ^gpt-image model gets no response_format: Open WebUI would fetch a url
                        # through its SSRF check (which refuses 127.0.0.1), so the answer must be b64.
                        ("gpt-image-1", {"model": "gpt-image-1", "prompt": "a blue bicycle", "n": 1, "size": "32x32"})]:
        status, res = post(srv.port, "/v1/images/generations", body, headers)
        images = []
        for image in (res or {}).get("data", []) if status == 200 else []:
            if not image.get("url"):  # get_image_data(image['b64_json']): no comma, so image/png
                images.append(base64.b64decode(image["b64_json"]))
        c.check(f"open-webui-{model}", status == 200 and len(images) == 1 and is_png(images[0]), (status, str(res)[:200]))


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


# Refusals made before any route (the request guard's Host, credentials, Origin and Content-Type
# rules, a path no route has, a method a route does not take), each asked for under /v1/ and
# under /sdapi/v1/: (name, method, OpenAI path, A1111 path, JSON body or raw bytes, headers, status).
GOOD_KEY = "s3cret-pass"
REFUSALS = [
    ("401-wrong-key", "POST", "/v1/images/generations", "/sdapi/v1/txt2img", {"prompt": "x"},
     {"Authorization": "Bearer wrong-pass"}, 401),
    ("401-no-key", "GET", "/v1/models", "/sdapi/v1/sd-models", None, {}, 401),
    ("404-no-route", "POST", "/v1/chat/completions", "/sdapi/v1/img2img", {"model": "m", "messages": []},
     {"Authorization": f"Bearer {GOOD_KEY}"}, 404),
    ("404-model-retrieve", "GET", "/v1/models/dall-e-3", "/sdapi/v1/loras-nothing", None,
     {"Authorization": f"Bearer {GOOD_KEY}"}, 404),
    ("405-method", "DELETE", "/v1/models", "/sdapi/v1/sd-models", None, {"Authorization": f"Bearer {GOOD_KEY}"}, 405),
    ("415-form-body", "POST", "/v1/images/generations", "/sdapi/v1/txt2img", b"prompt=x",
     {"Authorization": f"Bearer {GOOD_KEY}", "Content-Type": "application/x-www-form-urlencoded"}, 415),
    ("421-rebound-host", "GET", "/v1/models", "/sdapi/v1/sd-models", None,
     {"Authorization": f"Bearer {GOOD_KEY}", "Host": "evil.example"}, 421),
    ("403-other-origin", "POST", "/v1/images/generations", "/sdapi/v1/txt2img", {"prompt": "x"},
     {"Authorization": f"Bearer {GOOD_KEY}", "Origin": "http://evil.example"}, 403),
]


def check_error_dialects(c, binary, model):
    """Every refusal reads the same way to the client that got it, whichever part of the server
    made it: under /v1/ in OpenAI's shape, so that the SDKs show the server's words (openai-node
    run for real printed a 401 as a quoted JSON string, 401 "credentials needed ...", and an
    unknown route as 404 "404 Not Found"); under /sdapi/ A1111's {"error", "detail"}."""
    srv = Server(binary, model, ["--api-auth", f"alice:{GOOD_KEY}"])
    try:
        for name, method, v1_path, a1111_path, body, headers, want in REFUSALS:
            raw = body if isinstance(body, bytes) else None
            json_body = None if raw is not None else body
            status, reply, _, got_headers = http_request(srv.port, method, v1_path, json_body, raw=raw, headers=headers)
            error = reply.get("error") if isinstance(reply, dict) else None
            shaped = (isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"] and
                      isinstance(error.get("type"), str) and "param" in error and "code" in error)
            message = openai_node_error_message(status, reply)
            c.check(f"dialect-openai-{name}", status == want and shaped and message == f"{status} {error['message']}" and
                    not error["message"].startswith(str(status)), (status, reply))
            if want == 401:
                c.check(f"dialect-openai-{name}-code", shaped and error["code"] == "invalid_api_key" and
                        error["type"] == "invalid_request_error" and "Basic" in got_headers.get("WWW-Authenticate", ""),
                        reply)
            status, reply, _, _ = http_request(srv.port, method, a1111_path, json_body, raw=raw, headers=headers)
            c.check(f"dialect-a1111-{name}", status == want and isinstance(reply, dict) and
                    isinstance(reply.get("detail"), str) and reply.get("error") == reply.get("detail"), (status, reply))
        if openai is not None:
            # The Python SDK reads the same fields: its error's code, and the server's words.
            base = f"http://127.0.0.1:{srv.port}/v1"
            try:
                openai.OpenAI(base_url=base, api_key="wrong-pass", max_retries=0).models.list()
                c.check("openai-sdk-wrong-key", False, "accepted")
            except openai.AuthenticationError as e:
                c.check("openai-sdk-wrong-key", e.code == "invalid_api_key" and "--api-auth" in e.message, repr(e))
            result = openai.OpenAI(base_url=base, api_key=GOOD_KEY, max_retries=0).images.generate(
                prompt="a paper boat", size="32x32", response_format="b64_json")
            c.check("openai-sdk-right-key", is_png(base64.b64decode(result.data[0].b64_json)), result)
        check_image_url_is_a_capability(c, srv)
    finally:
        code = srv.stop()
    c.check("auth-server-sigterm-drains-exit-0", code == 0, code)


def check_image_url_is_a_capability(c, srv):
    """With --api-auth, an image URL still works without credentials, as OpenAI's own image URLs
    do: LibreChat's DALL-E 3 tool (check_librechat_dalle3) downloads data[0].url with a plain GET.
    The URL's 128-bit random id is the key; every other route, and a made-up id, stay closed."""
    status, reply, _, _ = http_request(srv.port, "POST", "/v1/images/generations",
                                       {"prompt": "a kite", "size": "32x32", "response_format": "url"},
                                       headers={"Authorization": f"Bearer {GOOD_KEY}"})
    url = reply["data"][0]["url"] if status == 200 else ""
    path = url[url.index("/v1/"):] if "/v1/" in url else ""
    c.check("auth-url-made", status == 200 and path.startswith("/v1/images/file?id="), (status, reply))
    for method in ("GET", "HEAD"):
        status, _, raw, got = http_request(srv.port, method, path)
        c.check(f"auth-url-{method}-without-credentials", status == 200 and
                got.get("Content-Type") == "image/png" and (method == "HEAD" or is_png(raw)), (status, got))
    made_up = path[:-1] + ("0" if path[-1] != "0" else "1")
    status, reply, _, _ = http_request(srv.port, "GET", made_up)
    c.check("auth-url-made-up-id-404", status == 404 and reply.get("error", {}).get("code") == "image_not_found",
            (status, reply))
    for other in ("/v1/models", "/sdapi/v1/options", "/sdapi/v1/progress"):
        status, _, _, _ = http_request(srv.port, "GET", other)
        c.check(f"auth-url-{other}-still-401", status == 401, status)


def main():
    binary, model = sys.argv[1], sys.argv[2]
    for name, (repo, files, commit, *_) in SOURCES.items():
        print(f"replaying {name}: {repo} at {commit}: {files}")
    c = Checks()
    srv = Server(binary, model)
    try:
        check_http(c, srv)
        for replay in (check_open_webui, check_librechat_dalle3, check_openai_node):
            replay(c, srv)
        ran = [check_openai_sdk(c, srv), check_litellm(c, srv)]
    finally:
        code = srv.stop()
    c.check("sigterm-drains-exit-0", code == 0, code)
    check_error_dialects(c, binary, model)
    if not any(ran):
        print("neither openai nor litellm is installed: their checks were skipped")
    c.finish()


if __name__ == "__main__":
    main()
