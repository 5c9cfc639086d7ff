// The rules every request of `serve` passes before any route sees it (docs/security.md), so that
// a route added later is covered with no code of its own. They keep the server to its user and
// the clients they configured: no web page they happen to visit can start, read or interrupt a
// generation.
//  1. Host (DNS rebinding: a page of evil.example whose name turns into 127.0.0.1): the Host
//     header must be an IP address, `localhost` (or a name under .localhost), the --host name, or
//     an --allowed-host entry ("*": any); else 421 naming the Host. A request without Host (an
//     HTTP/1.0 health check) passes: a browser always sends one.
//  2. Credentials (--api-auth, --api-auth-file; server/credentials.h): every route but /health,
//     /internal/ping, CORS preflights and /metrics (unless --metrics-auth) needs them; else 401
//     with WWW-Authenticate: Basic, which makes a browser ask through its own prompt.
//  3. Origin (cross-site request forgery): a request that can change state (any method but GET,
//     HEAD and OPTIONS) with an Origin header naming another origin than the Host's, not allowed
//     by --cors-origin, is 403. Browsers send Origin with every such request.
//  4. Content-Type: such a request with a body, or with a Content-Type, must say application/json
//     (415): an HTML form can send text/plain, form-urlencoded and multipart bodies to any origin
//     without asking it first, never JSON. A bodiless POST without Content-Type (a client's
//     interrupt) passes; from a browser it carries an Origin (rule 3).
#pragma once
#include <string>
#include <vector>

#include <httplib.h>

#include "server/credentials.h"

namespace moss {

struct GuardRules {
  std::string listen_host;                 // --host, as given
  std::vector<std::string> allowed_hosts;  // --allowed-host (lower case; "*": any)
  std::vector<std::string> cors_origins;   // --cors-origin (server/cors.h)
  Credentials credentials;                 // --api-auth, --api-auth-file: none, no check
  bool metrics_auth = false;               // --metrics-auth: /metrics needs credentials too
};

// False when the request passes; true when it is refused, with `res` filled (status, JSON body
// naming the rule, and WWW-Authenticate for 401).
bool refuse_request(const GuardRules& rules, const httplib::Request& req, httplib::Response& res);

}  // namespace moss
