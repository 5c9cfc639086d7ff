#include "server/png_info_route.h"

#include <utility>
#include <vector>

#include "frontend/a1111_request.h"
#include "io/png_text.h"
#include "server/base64.h"
#include "util/error.h"

namespace moss {
namespace {

using json = nlohmann::json;

// A text chunk larger than this is not a generation record (ours are a few KiB; the prompt is
// bounded by the request's size).
constexpr size_t kChunkLimit = size_t(4) << 20;

void answer(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void refuse(httplib::Response& res, int status, const std::string& field, const std::string& message) {
  json body = {{"error", message}, {"detail", message}};
  if (!field.empty()) body["field"] = field;
  answer(res, status, body);
}

void png_info(const httplib::Request& req, httplib::Response& res) {
  json body;
  try {
    body = parse_request_json(req.body);
  } catch (const RequestError& e) {
    return refuse(res, e.status, "", e.what());
  }
  if (!body.is_object()) return refuse(res, 400, "", "the body must be a JSON object");
  const json image = body.value("image", json());
  if (!image.is_string()) return refuse(res, 422, "image", "image: expected a base64 PNG (or a data: URL) as a string");
  std::string text = image.get<std::string>();
  if (text.rfind("data:", 0) == 0) {
    const size_t comma = text.find(',');
    text = comma == std::string::npos ? "" : text.substr(comma + 1);
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return answer(res, 200, {{"info", ""}});
  const std::optional<std::string> bytes = base64_decode(text);
  if (!bytes) return refuse(res, 422, "image", "image: not base64");
  json items = json::object();
  std::string info;
  try {
    for (const char* keyword : {"parameters", "generation"}) {
      const PngTextChunk chunk = png_text_chunk(*bytes, "image", keyword, kChunkLimit);
      if (chunk.status != PngTextStatus::Found) continue;
      if (std::string(keyword) == "parameters") info = chunk.text;
      else items[keyword] = chunk.text;
    }
  } catch (const Error& e) {
    return refuse(res, 422, "image", e.what());
  }
  answer(res, 200, {{"info", info}, {"items", items}, {"parameters", infotext_fields(info)}});
}

}  // namespace

namespace {

// "Key: value, Key: "quoted, value", ..." as (key, value) pairs, quoted values unquoted; empty
// when the line is not of that form (a prompt line). A piece between commas that is no "Key: "
// belongs to the value before it (this engine's "Model: ... (dim 128, 4 blocks)" is not quoted).
std::vector<std::pair<std::string, std::string>> infotext_pairs(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> pairs;
  size_t p = 0;
  while (p < line.size()) {
    size_t start = p;
    while (start < line.size() && line[start] == ' ') ++start;
    const size_t colon = line.find(": ", start);
    const size_t comma = line.find(',', start);
    const bool keyed = colon != std::string::npos && colon > start && (comma == std::string::npos || colon < comma) &&
                       line.find('"', start) >= colon;
    if (!keyed) {  // the rest of the value before it
      if (pairs.empty()) return {};
      pairs.back().second += "," + line.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
      p = comma == std::string::npos ? line.size() : comma + 1;
      continue;
    }
    const std::string key = line.substr(start, colon - start);
    p = colon + 2;
    std::string value;
    if (p < line.size() && line[p] == '"') {  // a JSON string: to its closing quote
      size_t end = p + 1;
      while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
      if (end >= line.size()) return {};
      const json unquoted = json::parse(line.substr(p, end + 1 - p), nullptr, false);
      value = unquoted.is_string() ? unquoted.get<std::string>() : line.substr(p, end + 1 - p);
      p = line.find(',', end + 1);
      p = p == std::string::npos ? line.size() : p + 1;
    } else {
      const size_t end = line.find(',', p);
      value = line.substr(p, end == std::string::npos ? std::string::npos : end - p);
      p = end == std::string::npos ? line.size() : end + 1;
    }
    pairs.emplace_back(key, value);
  }
  return pairs;
}

}  // namespace

json infotext_fields(const std::string& infotext) {
  json fields = json::object();
  if (infotext.empty()) return fields;
  // The last line holds the settings; the lines before it are the prompt, then from
  // "Negative prompt: " on, the negative prompt.
  const size_t last_break = infotext.rfind('\n');
  const std::string last = last_break == std::string::npos ? infotext : infotext.substr(last_break + 1);
  auto pairs = infotext_pairs(last);
  std::string head = last_break == std::string::npos ? "" : infotext.substr(0, last_break);
  if (pairs.size() < 3) {  // not a settings line: all of it is prompt
    head = infotext;
    pairs.clear();
  }
  const std::string marker = "Negative prompt: ";
  const size_t negative = head.rfind(marker);
  const bool has_negative = negative != std::string::npos && (negative == 0 || head[negative - 1] == '\n');
  fields["Prompt"] = has_negative ? head.substr(0, negative == 0 ? 0 : negative - 1) : head;
  fields["Negative prompt"] = has_negative ? head.substr(negative + marker.size()) : "";
  for (const auto& [key, value] : pairs) {
    fields[key] = value;
    const size_t x = value.find('x');
    if (key == "Size" && x != std::string::npos) {  // A1111's two size fields
      fields["Size-1"] = value.substr(0, x);
      fields["Size-2"] = value.substr(x + 1);
    }
  }
  return fields;
}

void install_png_info(GuardedServer& s) { s.Post("/sdapi/v1/png-info", png_info); }

}  // namespace moss
