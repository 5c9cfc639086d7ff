#include "server/serve.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include <httplib.h>

#include "io/mapping_faults.h"
#include "pipeline/engine.h"
#include "server/a1111_routes.h"
#include "server/guarded_server.h"
#include "server/serve_options.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/thread_pool.h"

namespace moss {

int serve_command(const std::vector<std::string>& args) {
  const ServeOptions options = parse_serve_args(args);
  if (options.help) {
    std::fputs(serve_help_text().c_str(), stdout);
    return 0;
  }
  Reporter rep(options.run.quiet, options.run.progress_json ? ProgressFormat::Json : ProgressFormat::Text);
  install_interrupt_handlers();
  install_mapping_fault_handler();
  // A client that goes away mid-answer is that connection's write error, not a reason to stop
  // serving: SIGPIPE (which a run treats as an interrupt, 141) is ignored here.
  std::signal(SIGPIPE, SIG_IGN);
  const HostThreads threads = host_threads_from_env();  // a bad MOSSINFER_THREADS: exit 2
  if (!threads.note.empty()) rep.warning("%s", threads.note.c_str());
  EngineSettings settings;
  settings.model = options.run.model;
  settings.vram_budget_gib = options.run.vram_budget_gib;
  settings.device = options.run.device;
  settings.keep_loaded = true;  // the point of a server: weights stay between requests
  Engine engine(settings, rep);

  GuardedServer server;  // connection, head and body limits: server/guarded_server.h
  A1111Routes routes(engine, options, rep);
  routes.install(server);

  server.listen_on(options.host, options.port, rep);  // a port in use: exit 1
  rep.event("listening on http://" + options.host + ":" + std::to_string(options.port) + " (A1111 API: /sdapi/v1)",
            {{"event", "listening"}, {"host", options.host}, {"port", options.port}});

  // SIGINT / SIGTERM stop the server: the handler only records the signal (util/interrupt.h);
  // this thread sees it and stops the listening loop, and a running image stops at its next step.
  std::atomic<bool> stopped{false};
  std::thread watcher([&] {
    while (!stopped && !pending_signal()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
  });
  const bool ok = server.listen_after_bind();
  stopped = true;
  watcher.join();
  if (pending_signal()) {
    rep.line("serve: stopped by a signal");
    return 128 + pending_signal();
  }
  if (!ok) throw failure("serve: the listening socket failed");
  return 0;
}

}  // namespace moss
