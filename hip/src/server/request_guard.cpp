#include "server/request_guard.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "server/cors.h"
#include "server/error_body.h"
#include "util/ascii_case.h"

namespace moss {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The refusal in the dialect of the route's clients (OpenAI's shape under /v1/: server/error_body.h).
void refuse(const httplib::Request& req, httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  const nlohmann::json body = error_body(req.path, status, message);
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

// The host name of a Host header value ("name", "name:port", "[v6]", "[v6]:port"), lower case,
// without a final dot; `ip` says whether it is an IP address (no name to rebind).
std::string host_name(const std::string& host, bool& ip) {
  std::string name = host;
  ip = false;
  if (!name.empty() && name[0] == '[') {
    const size_t close = name.find(']');
    // "[v6]" or "[v6]:port" only: "[::1].evil.example" is no address
    if (close == std::string::npos || (close + 1 < name.size() && name[close + 1] != ':')) return ascii_lowercase(name);
    name = name.substr(1, close - 1);
    in6_addr v6;
    ip = inet_pton(AF_INET6, name.c_str(), &v6) == 1;
    return ascii_lowercase(name);
  }
  const size_t colon = name.find(':');
  if (colon != std::string::npos) name = name.substr(0, colon);
  if (!name.empty() && name.back() == '.') name.pop_back();
  in_addr v4;
  ip = inet_pton(AF_INET, name.c_str(), &v4) == 1;
  return ascii_lowercase(name);
}

bool host_allowed(const GuardRules& rules, const std::string& host) {
  bool ip = false;
  const std::string name = host_name(host, ip);
  if (ip || name == "localhost" || ends_with(name, ".localhost")) return true;
  bool listen_ip = false;
  if (name == host_name(rules.listen_host, listen_ip)) return true;
  const auto& allowed = rules.allowed_hosts;
  return std::find(allowed.begin(), allowed.end(), "*") != allowed.end() ||
         std::find(allowed.begin(), allowed.end(), name) != allowed.end();
}

bool open_route(const GuardRules& rules, const httplib::Request& req) {
  if (req.method == "OPTIONS") return true;  // a preflight carries no credentials (Fetch standard)
  // An image URL of the OpenAI Images API (server/openai_images.h) is a capability, as OpenAI's
  // own image URLs are: its 128-bit random id is the key, it expires, and the clients that follow
  // it (LibreChat's DALL-E tool downloads it with a plain GET) send no credentials.
  const bool image_url = req.path == "/v1/images/file" && (req.method == "GET" || req.method == "HEAD");
  return req.path == "/health" || req.path == "/internal/ping" || image_url ||
         (req.path == "/metrics" && !rules.metrics_auth);
}

bool changes_state(const std::string& method) { return method != "GET" && method != "HEAD" && method != "OPTIONS"; }

// The Origin names this server when its host[:port] is the Host header's.
bool same_origin(const std::string& origin, const std::string& host) {
  const size_t sep = origin.find("://");
  return sep != std::string::npos && !host.empty() && ascii_lowercase(origin.substr(sep + 3)) == ascii_lowercase(host);
}

// The media type of a Content-Type value: before any ';', trimmed, lower case.
std::string media_type(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  const size_t a = t.find_first_not_of(" \t"), b = t.find_last_not_of(" \t");
  return a == std::string::npos ? "" : ascii_lowercase(t.substr(a, b - a + 1));
}

bool has_body(const httplib::Request& req) {
  // Checked before the library reads the body: its framing says whether there is one.
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

}  // namespace

bool refuse_request(const GuardRules& rules, const httplib::Request& req, httplib::Response& res) {
  const std::string host = req.get_header_value("Host");
  if (req.has_header("Host") && !host_allowed(rules, host)) {
    refuse(req, res, 421,
           "Host '" + host + "' is not a name of this server: use its address, localhost, or a name given "
           "with serve --allowed-host NAME (this refuses pages that rebind their own name to this address)");
    return true;
  }
  if (rules.credentials.required() && !open_route(rules, req) &&
      !rules.credentials.accepts(req.get_header_value("Authorization"))) {
    refuse(req, res, 401, "credentials needed (serve --api-auth): HTTP Basic USER:PASS, or Authorization: Bearer PASS");
    res.set_header("WWW-Authenticate", "Basic realm=\"moss-infer-hip\", charset=\"UTF-8\"");
    return true;
  }
  if (!changes_state(req.method)) return false;
  const std::string origin = req.get_header_value("Origin");
  if (req.has_header("Origin") && !same_origin(origin, host) && !origin_allowed(rules.cors_origins, origin)) {
    refuse(req, res, 403,
           "Origin '" + origin + "' may not " + req.method + " to this server: a page of another site "
           "(allow one with serve --cors-origin ORIGIN)");
    return true;
  }
  if ((has_body(req) || req.has_header("Content-Type")) &&
      media_type(req.get_header_value("Content-Type")) != "application/json") {
    const std::string sent = req.get_header_value("Content-Type");
    refuse(req, res, 415,
           req.method + " " + req.path + " takes Content-Type: application/json" +
               (sent.empty() ? " (none was sent)" : " (not '" + sent + "')"));
    return true;
  }
  return false;
}

}  // namespace moss
