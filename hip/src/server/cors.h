// CORS for browser-based clients, off unless asked: `serve --cors-origin ORIGIN` (repeatable;
// "*" allows any) answers preflights (OPTIONS, 204 with the allowed methods and headers) and
// adds Access-Control-Allow-Origin to every answer to a request from an allowed Origin. A
// request from another origin gets no CORS headers (the browser then refuses it), and its
// preflight 403. Without --cors-origin a preflight is a wrong method (405), whose message names
// the option (server/guarded_server.cpp).
#pragma once
#include <string>
#include <vector>

#include "server/guarded_server.h"

namespace moss {

void install_cors(GuardedServer& server, const std::vector<std::string>& origins);

// Whether `origin` (an Origin header's value) is one of `origins`, or they hold "*".
bool origin_allowed(const std::vector<std::string>& origins, const std::string& origin);

// Why a --cors-origin value is not one a browser can send (empty: it is): an origin is
// scheme://host[:port] in lower case, http or https, with no path, query, user or trailing slash
// ("*" is taken too).
std::string cors_origin_refusal(const std::string& value);

}  // namespace moss
