#include "server/cors.h"

#include <algorithm>
#include <cctype>

namespace moss {
namespace {

// The value of Access-Control-Allow-Origin for this request; empty when it is not allowed.
std::string allowed_origin(const std::vector<std::string>& origins, const httplib::Request& req) {
  const std::string origin = req.get_header_value("Origin");
  if (origin.empty() || !origin_allowed(origins, origin)) return "";
  return std::find(origins.begin(), origins.end(), "*") != origins.end() ? "*" : origin;
}

}  // namespace

bool origin_allowed(const std::vector<std::string>& origins, const std::string& origin) {
  return std::find(origins.begin(), origins.end(), "*") != origins.end() ||
         std::find(origins.begin(), origins.end(), origin) != origins.end();
}

std::string cors_origin_refusal(const std::string& value) {
  if (value == "*") return "";
  const size_t sep = value.find("://");
  if (sep == std::string::npos) return "not an origin (scheme://host[:port], such as http://localhost:3000)";
  const std::string scheme = value.substr(0, sep), authority = value.substr(sep + 3);
  if (scheme != "http" && scheme != "https") return "the scheme must be http or https, in lower case";
  if (authority.empty()) return "no host after " + scheme + "://";
  if (authority.find('/') != std::string::npos)
    return "an origin has no path, not even a trailing slash (a browser sends " + scheme + "://" +
           authority.substr(0, authority.find('/')) + ")";
  std::string host = authority, port;
  bool colon = false;  // a port separator
  if (host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return "an IPv6 address without its closing ]";
    port = host.substr(close + 1);
    host = host.substr(0, close + 1);
    if (!port.empty() && port[0] != ':') return "characters after the IPv6 address's ]";
    colon = !port.empty();
    if (colon) port = port.substr(1);
  } else if (host.find(':') != std::string::npos) {
    colon = true;
    port = host.substr(host.find(':') + 1);
    host = host.substr(0, host.find(':'));
  }
  if (host.empty() || host == "[]") return "no host";
  if (colon && port.empty()) return "a colon without a port";
  for (char c : host)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
          c == '-' || (host[0] == '[' && (c == ':' || c == '[' || c == ']' || (c >= 'a' && c <= 'f')))))
      return "the host may hold only lower-case letters, digits, '.' and '-' (a browser sends it in lower case; "
             "no user@, query or fragment)";
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      return "the port must be a number from 1 to 65535";
    if ((scheme == "http" && port == "80") || (scheme == "https" && port == "443"))
      return "a browser leaves out the scheme's default port " + port + " (give " + scheme + "://" + host + ")";
  }
  return "";
}

void install_cors(GuardedServer& s, const std::vector<std::string>& origins) {
  if (origins.empty()) return;  // a preflight then gets guarded_server.h's 405, naming --cors-origin
  s.Options(R"(.*)", [origins](const httplib::Request& req, httplib::Response& res) {
    const std::string allow = allowed_origin(origins, req);
    if (allow.empty()) {
      res.status = 403;
      res.set_content(R"json({"error":"origin not allowed (serve --cors-origin)"})json", "application/json");
      return;
    }
    res.status = 204;
    res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    const std::string asked = req.get_header_value("Access-Control-Request-Headers");
    res.set_header("Access-Control-Allow-Headers", asked.empty() ? "Content-Type, Authorization" : asked);
    res.set_header("Access-Control-Max-Age", "600");
  });
  // Every answer (the preflight's too) names the allowed origin; Vary keeps caches per origin.
  s.set_post_routing_handler([origins](const httplib::Request& req, httplib::Response& res) {
    const std::string allow = allowed_origin(origins, req);
    if (allow.empty()) return;
    res.set_header("Access-Control-Allow-Origin", allow);
    if (allow != "*") res.set_header("Vary", "Origin");
  });
}

}  // namespace moss
