#include "server/openai_images.h"

#include <ctime>
#include <random>

#include "server/base64.h"
#include "server/credentials.h"
#include "server/error_body.h"

namespace moss {
namespace {

using json = nlohmann::json;

void answer(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

// OpenAI's error shape (server/error_body.h); `param` null when the error concerns no field.
void error(httplib::Response& res, int status, const std::string& message, const std::string& param = "",
           const char* code = nullptr) {
  answer(res, status, openai_error_body(status, message, param, code));
}

// The OpenAI field an A1111 field's refusal concerns.
std::string openai_param(const std::string& field) {
  if (field == "width" || field == "height") return "size";
  if (field == "batch_size" || field == "n_iter") return "n";
  return field;
}

// A refusal of the A1111 field that an OpenAI field became, named by the OpenAI field first:
// "n: batch_size 0: must be an integer from 1 to 64".
std::string worded(const std::string& message, const std::string& field) {
  const std::string param = openai_param(field);
  return param == field ? message : param + ": " + message;
}

std::string random_id() {
  static std::mutex mutex;
  static std::random_device device;
  std::lock_guard<std::mutex> lock(mutex);
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 4; ++i) {
    const uint32_t v = device();
    for (int shift = 28; shift >= 0; shift -= 4) id += kHex[(v >> shift) & 15];
  }
  return id;  // 128 bits: a URL no one guesses
}

}  // namespace

std::string response_format(const json& body) {
  const json asked = body.value("response_format", json());
  if (asked.is_string()) return asked.get<std::string>();
  // OpenAI's default: url for DALL-E models, b64_json for the gpt-image ones (which return
  // nothing else, so their clients send no response_format and read b64_json).
  const json model = body.value("model", json());
  return model.is_string() && model.get<std::string>().rfind("gpt-image", 0) == 0 ? "b64_json" : "url";
}

json openai_to_a1111(const json& body) {
  if (!body.is_object())
    throw RequestError(400, "", std::string("the body must be a JSON object, got ") + body.type_name());
  const json prompt = body.value("prompt", json());
  if (!prompt.is_string() || prompt.get<std::string>().empty())
    throw RequestError(400, "prompt", "prompt: a text prompt is required");
  json a1111 = {{"prompt", prompt}};
  const json n = body.value("n", json());
  if (!n.is_null()) a1111["batch_size"] = n;  // its type and range are the request path's checks
  const json size = body.value("size", json());
  if (!size.is_null() && size != "auto") {
    const std::string text = size.is_string() ? size.get<std::string>() : size.dump();
    const size_t x = text.find('x');
    if (!size.is_string() || x == std::string::npos)
      throw RequestError(400, "size", "size '" + text.substr(0, 60) + "': give WIDTHxHEIGHT (e.g. 1024x1024) or auto");
    a1111["width"] = text.substr(0, x);  // numeric text: the request path converts and checks it
    a1111["height"] = text.substr(x + 1);
  }
  const json format = body.value("response_format", json());
  if (!format.is_null() && format != "url" && format != "b64_json")
    throw RequestError(400, "response_format",
                       "response_format " + format.dump().substr(0, 60) + ": give url or b64_json");
  const json output = body.value("output_format", json());
  if (!output.is_null() && output != "png")
    throw RequestError(400, "output_format",
                       "output_format " + output.dump().substr(0, 60) + ": not supported: only png is made");
  return a1111;
}

void OpenAiImages::install(GuardedServer& s) {
  s.Post("/v1/images/generations",
         [this](const httplib::Request& req, httplib::Response& res) { generations(req, res); });
  // The id is in the query, not the path: the route (a metrics label) stays one value.
  s.Get("/v1/images/file", [this](const httplib::Request& req, httplib::Response& res) { file(req, res); });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    answer(res, 200, {{"object", "list"},
                      {"data", json::array({{{"id", a1111_.engine().model_identity()}, {"object", "model"},
                                             {"created", 0}, {"owned_by", "moss-infer-hip"}}})}});
  });
}

void OpenAiImages::generations(const httplib::Request& req, httplib::Response& res) {
  json body;
  A1111Request request;
  try {
    body = parse_request_json(req.body);
    request = a1111_.read_request(openai_to_a1111(body), "images/generations");
  } catch (const RequestError& e) {
    return error(res, e.status == 422 ? 400 : e.status, worded(e.what(), e.field), openai_param(e.field));
  }
  const bool url = response_format(body) == "url";
  const A1111Routes::Generated g = a1111_.generate(req, request, "images/generations");
  if (g.retry_after) res.set_header("Retry-After", "1");
  if (g.status != 200)
    return error(res, g.status == 422 ? 400 : g.status, worded(g.message, g.field), openai_param(g.field));
  // The URL names this server as the client reached it (its Host header: the name it resolves).
  // (An HTTP/1.0 request may have none: then the address it reached.)
  std::string host = req.get_header_value("Host");
  if (host.empty()) host = req.local_addr + ":" + std::to_string(req.local_port);
  json data = json::array();
  for (const GeneratedImage& image : g.made) {
    if (url)
      data.push_back({{"url", "http://" + host + "/v1/images/file?id=" + keep(image.png)}});
    else
      data.push_back({{"b64_json", base64_encode(image.png)}});
  }
  answer(res, 200, {{"created", int64_t(std::time(nullptr))}, {"data", data}});
}

std::string OpenAiImages::keep(const std::string& png) {
  const std::string id = random_id();
  std::lock_guard<std::mutex> lock(mutex_);
  kept_.push_back({id, png, std::chrono::steady_clock::now()});
  while (kept_.size() > kUrlImages) kept_.pop_front();
  return id;
}

void OpenAiImages::file(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.get_param_value("id");
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  while (!kept_.empty() && now - kept_.front().made > std::chrono::seconds(kUrlLifetimeSeconds)) kept_.pop_front();
  // The id is the URL's only key (the route needs no credentials: server/request_guard.cpp), so it
  // is compared in constant time.
  for (const Kept& k : kept_)
    if (same_secret(k.id, id)) {
      res.set_content(k.png, "image/png");
      return;
    }
  error(res, 404,
        "no such image: it expired (images are kept " + std::to_string(kUrlLifetimeSeconds / 60) +
            " minutes, the newest " + std::to_string(kUrlImages) + ") or was never made here",
        "", "image_not_found");
}

}  // namespace moss
