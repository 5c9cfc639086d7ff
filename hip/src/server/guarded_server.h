// The HTTP server of `serve`: cpp-httplib's Server with the limits a public endpoint needs
// (README, "Server limits"). cpp-httplib 0.11 serves each connection on a pool thread with a
// read timeout per read, so 32 clients sending a byte a second held all 32 threads for ever;
// it sets SO_REUSEPORT, so a second server on a port in use started and took part of the
// traffic; it decodes gzip/deflate/br bodies past the body limit and reads chunked bodies
// without one. Here, by overriding the one virtual the library calls per connection:
//  - a thread per connection (no pool to starve), admitted by ConnectionSlots: at most
//    SlotLimits::per_address ordinary connections per client address and SlotLimits::total in
//    all, then a small reserve for the light routes; beyond it a connection gets 503 at once;
//  - DeadlineStream's deadlines per request head, body and response instead of per read, and
//    its wire checks (sizes 414/431/413, framing 400/501, Content-Encoding 415);
//  - a wrong method on a known route is 405 with Allow, an unknown method 501;
//  - the listening socket without SO_REUSEPORT: a port in use is an error.
// The pre-routing handler is this class's (check_route): a route-level check belongs there, as
// set_pre_routing_handler would replace it. It applies the rules of server/request_guard.h (Host,
// credentials, Origin, Content-Type) to every request, whatever its route.
#pragma once
#include <regex>
#include <string>
#include <vector>

#include <httplib.h>

#include "pipeline/reporter.h"
#include "server/connection_slots.h"
#include "server/deadline_stream.h"
#include "server/request_guard.h"
#include "server/request_head.h"

namespace moss {

class GuardedServer : public httplib::Server {
 public:
  GuardedServer();

  // The routes, recorded as they are registered so that a wrong method gets 405 with Allow.
  GuardedServer& Get(const std::string& pattern, Handler handler);
  GuardedServer& Post(const std::string& pattern, Handler handler);
  GuardedServer& Put(const std::string& pattern, Handler handler);
  GuardedServer& Delete(const std::string& pattern, Handler handler);
  // OPTIONS routes (CORS preflights, server/cors.h): an OPTIONS request then goes to them
  // whatever the path, instead of a 405.
  GuardedServer& Options(const std::string& pattern, Handler handler);

  // Binds host:port (no SO_REUSEPORT), or throws moss::Error (exit 1) "serve: cannot listen on
  // HOST:PORT: REASON". Warns (rep) when the address is not a loopback one and `authenticated`
  // is false (no --api-auth), saying how to add credentials.
  void listen_on(const std::string& host, int port, bool authenticated, const Reporter& rep);

  // GET /sdapi/v1/progress, GET /health, GET /ready, POST /sdapi/v1/interrupt: answered on a
  // reserve connection; nothing else is.
  static bool light_route(const std::string& method, const std::string& path);

  // The rules every request passes (server/request_guard.h); none set: none applied.
  void set_guard(const GuardRules& rules) { guard_ = &rules; }

  // A request's route as a metrics label: the pattern of a route registered here that matches
  // `path`, else "other" (a client cannot make new label values). Patterns are this program's
  // own ASCII text.
  std::string route_label(const std::string& path) const;
  // The status this connection's last answer was sent with: the wire checks' own refusal (413,
  // 415, 431, ...: server/deadline_stream.h) where there was one, else `library_status`, what
  // cpp-httplib's response says. Called from the logger, on the connection's thread.
  static int status_sent(int library_status);

 private:
  bool process_and_close_socket(socket_t sock) override;
  HandlerResponse check_route(const httplib::Request& req, httplib::Response& res) const;
  void record(const std::string& pattern, const std::string& method);

  ConnectionSlots slots_{SlotLimits{}};
  StreamDeadlines deadlines_;
  HeadLimits head_limits_;
  struct Route {
    std::string pattern;
    std::regex matcher;
    std::vector<std::string> methods;
  };
  std::vector<Route> routes_;
  bool options_routes_ = false;
  const GuardRules* guard_ = nullptr;
};

}  // namespace moss
