#include "server/guarded_server.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>
#include <thread>

#include "server/error_body.h"
#include "util/error.h"

namespace moss {
namespace {

// The slot of the connection this thread serves (one thread per connection).
thread_local SlotKind t_slot = SlotKind::Ordinary;
// The stream of the connection this thread serves, for the status it answered itself.
thread_local const DeadlineStream* t_stream = nullptr;

// A thread per connection, at most `max` at once (the accepting loop waits beyond that: new
// connections then wait in the kernel's backlog). ConnectionSlots bounds the connections that
// are served; the threads beyond its slots only send a 503 and close.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max) : state_(std::make_shared<State>()), max_(max) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock<std::mutex> lock(state_->m);
      state_->cv.wait(lock, [&] { return state_->running < max_; });
      ++state_->running;
    }
    auto task = std::make_shared<std::function<void()>>(std::move(fn));
    auto state = state_;  // the thread's own reference: it may end after this queue
    auto run = [task, state] {
      (*task)();
      std::lock_guard<std::mutex> lock(state->m);
      --state->running;
      state->cv.notify_all();
    };
    try {
      std::thread(run).detach();
    } catch (const std::system_error&) {
      run();  // no thread to be had: served on the accepting thread
    }
  }

  // Returns when every connection has ended (the server stops after this).
  void shutdown() override {
    std::unique_lock<std::mutex> lock(state_->m);
    state_->cv.wait(lock, [&] { return state_->running == 0; });
  }

 private:
  struct State {
    std::mutex m;
    std::condition_variable cv;
    size_t running = 0;
  };
  std::shared_ptr<State> state_;
  size_t max_;
};

void json_error(const httplib::Request& req, httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(error_body(req.path, status, message).dump(
                      -1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa_family == AF_INET6) {
    const in6_addr& v6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(&v6) ||
           (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  }
  return false;
}

}  // namespace

GuardedServer::GuardedServer() {
  const SlotLimits slots;
  new_task_queue = [slots] { return new ConnectionThreads(slots.total + slots.reserve + 16); };
  // SO_REUSEADDR only (a restart may bind while old connections are in TIME_WAIT); the library's
  // default adds SO_REUSEPORT, with which a second server on the same port shares its traffic.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  set_payload_max_length(head_limits_.max_body_bytes);
  set_keep_alive_timeout(time_t(deadlines_.idle_s));
  set_keep_alive_max_count(100);
  set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return check_route(req, res); });
}

void GuardedServer::record(const std::string& pattern, const std::string& method) {
  for (Route& r : routes_)
    if (r.pattern == pattern) {
      r.methods.push_back(method);
      return;
    }
  routes_.push_back({pattern, std::regex(pattern), {method}});
}

GuardedServer& GuardedServer::Get(const std::string& pattern, Handler handler) {
  record(pattern, "GET");
  httplib::Server::Get(pattern, std::move(handler));
  return *this;
}

GuardedServer& GuardedServer::Options(const std::string& pattern, Handler handler) {
  options_routes_ = true;
  httplib::Server::Options(pattern, std::move(handler));
  return *this;
}

GuardedServer& GuardedServer::Post(const std::string& pattern, Handler handler) {
  record(pattern, "POST");
  httplib::Server::Post(pattern, std::move(handler));
  return *this;
}

GuardedServer& GuardedServer::Put(const std::string& pattern, Handler handler) {
  record(pattern, "PUT");
  httplib::Server::Put(pattern, std::move(handler));
  return *this;
}

GuardedServer& GuardedServer::Delete(const std::string& pattern, Handler handler) {
  record(pattern, "DELETE");
  httplib::Server::Delete(pattern, std::move(handler));
  return *this;
}

bool GuardedServer::light_route(const std::string& method, const std::string& path) {
  const bool get = method == "GET" || method == "HEAD";
  return (get && (path == "/sdapi/v1/progress" || path == "/health" || path == "/ready")) ||
         (method == "POST" && path == "/sdapi/v1/interrupt");
}

httplib::Server::HandlerResponse GuardedServer::check_route(const httplib::Request& req, httplib::Response& res) const {
  if (t_slot == SlotKind::Reserve && !light_route(req.method, req.path)) {
    json_error(req, res, 503,
               "busy: every ordinary connection is taken; until one frees, only GET /sdapi/v1/progress, "
               "/health, /ready and POST /sdapi/v1/interrupt are answered");
    res.set_header("Retry-After", "1");
    return HandlerResponse::Handled;
  }
  if (!(req.method == "OPTIONS" && options_routes_)) {
    for (const Route& r : routes_) {
      if (!std::regex_match(req.path, r.matcher)) continue;
      const std::vector<std::string>& methods = r.methods;
      const std::string asked = req.method == "HEAD" ? "GET" : req.method;
      if (std::find(methods.begin(), methods.end(), asked) != methods.end()) break;
      std::string allow;
      for (const std::string& m : methods) allow += (allow.empty() ? "" : ", ") + m + (m == "GET" ? ", HEAD" : "");
      // OPTIONS here is a browser's CORS preflight at a server without --cors-origin (server/cors.h):
      // the browser shows its page only "Failed to fetch"; its tools and a reader show this.
      const std::string cors = req.method == "OPTIONS"
                                   ? "; a browser's cross-origin request needs serve --cors-origin ORIGIN (or '*' "
                                     "for any origin, as A1111's --cors-allow-origins=*)"
                                   : "";
      json_error(req, res, 405, req.method + " " + req.path + ": method not allowed (allowed: " + allow + ")" + cors);
      res.set_header("Allow", allow);
      return HandlerResponse::Handled;
    }
  }
  // Every request that a route (or the 404) would answer passes the guard first.
  if (guard_ && refuse_request(*guard_, req, res)) return HandlerResponse::Handled;
  return HandlerResponse::Unhandled;
}

std::string GuardedServer::route_label(const std::string& path) const {
  for (const Route& r : routes_)
    if (std::regex_match(path, r.matcher)) return r.pattern;
  return "other";
}

int GuardedServer::status_sent(int library_status) {
  const int wire = t_stream ? t_stream->refused_status() : 0;
  return wire ? wire : library_status;
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  // An answer goes out as several writes (head, body): with Nagle's algorithm each one after the
  // first waits for the client's delayed ACK, 40 ms a request on a kept-alive connection.
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  DeadlineStream strm(sock, deadlines_, head_limits_, [this] { return svr_sock_ == INVALID_SOCKET; });
  std::string address;
  int port = 0;
  strm.get_remote_ip_and_port(address, port);
  ConnectionSlots::Held slot(slots_, address);
  if (slot.kind() == SlotKind::Refused) {
    strm.answer(503, "busy: " + slot.why() + "; try again later");
    strm.close_gracefully();
    return false;
  }
  if (slot.kind() == SlotKind::Reserve) {
    StreamDeadlines reserve = deadlines_;
    reserve.idle_s = reserve.head_s = 2;  // a light request's head is one packet
    strm.set_deadlines(reserve);
  }
  t_slot = slot.kind();
  t_stream = &strm;
  bool ok = true;
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!strm.next_request()) break;
    bool closed = false;
    ok = process_request(strm, left == 1, closed, nullptr);
    if (!ok || closed || !strm.reusable()) break;
  }
  strm.close_gracefully();
  t_stream = nullptr;
  return ok;
}

void GuardedServer::listen_on(const std::string& host, int port, bool authenticated, const Reporter& rep) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints = {}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (gai != 0) throw failure("serve: cannot listen on " + where + ": " + gai_strerror(gai));
  bool loopback = true;
  for (addrinfo* a = found; a; a = a->ai_next) loopback = loopback && is_loopback(a->ai_addr);
  freeaddrinfo(found);
  errno = 0;
  if (!bind_to_port(host, port)) {
    const int e = errno;
    const std::string why = e == EADDRINUSE      ? "the port is in use (is another server running?)"
                            : e == EADDRNOTAVAIL ? "not an address of this machine"
                            : e == EACCES        ? "permission denied (ports below 1024 need privileges)"
                            : e                  ? std::strerror(e)
                                                 : "the address cannot be bound";
    throw failure("serve: cannot listen on " + where + ": " + why);
  }
  // cpp-httplib listens with a backlog of 5: a burst of connections beyond it is dropped by the
  // kernel and the clients' retransmissions arrive seconds later. Listening again only resizes
  // the queue of the same socket.
  ::listen(svr_sock_, SOMAXCONN);
  if (!loopback && !authenticated)
    rep.warning("serve: %s is reachable from other machines and this server has no authentication: "
                "anyone who can reach it can make images and read its settings (add credentials with "
                "--api-auth USER:PASS or --api-auth-file FILE, use --host 127.0.0.1, or put it behind a "
                "proxy that authenticates)",
                where.c_str());
}

}  // namespace moss
