#include "server/serve.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>
#include <vector>

#include <httplib.h>

#include "io/mapping_faults.h"
#include "pipeline/engine_pool.h"
#include "server/a1111_routes.h"
#include "server/guarded_server.h"
#include "server/openai_images.h"
#include "server/serve_options.h"
#include "server/web_page.h"
#include "server/service_routes.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/thread_pool.h"

namespace moss {
namespace {

// How long a drained server goes on refusing new requests before it closes its listener, counted
// from the SIGTERM and again from each request refused since: longer than a balancer takes to
// notice /ready 503 (docs/deploy/haproxy.cfg: checks every 500 ms, out after 2 failures).
constexpr int kDrainQuietSeconds = 2;

}  // namespace

int serve_command(const std::vector<std::string>& args) {
  const ServeOptions options = parse_serve_args(args);
  if (options.help) {
    std::fputs(serve_help_text().c_str(), stdout);
    return 0;
  }
  Reporter rep(options.run.quiet, options.run.progress_json ? ProgressFormat::Json : ProgressFormat::Text);
  install_server_signal_handlers();
  install_mapping_fault_handler();
  // A client that goes away mid-answer is that connection's write error, not a reason to stop
  // serving: SIGPIPE (which a run treats as an interrupt, 141) is ignored here.
  std::signal(SIGPIPE, SIG_IGN);
  const HostThreads threads = host_threads_from_env();  // a bad MOSSINFER_THREADS: exit 2
  if (!threads.note.empty()) rep.warning("%s", threads.note.c_str());
  EngineSettings settings;
  settings.model = options.run.model;
  settings.vram_budget_gib = options.run.vram_budget_gib;
  settings.keep_loaded = true;  // the point of a server: weights stay between requests
  // One engine per device, each on a thread of its own, all taking requests from one queue.
  EnginePool pool(settings, engine_devices(options.run.devices), rep);
  // The requests' defaults against the model: a --skip-layers given that names a block the model
  // lacks is refused before listening (exit 2); the built-in default on a smaller model (the tiny
  // test model) is a warning, as requests that give their own skip_layers still run.
  const bool skip_layers_given = options.run.given.count(RequestField::SkipLayers) > 0;
  try {
    pool.engine(0).check(options.run, skip_layers_given);
  } catch (const Error& e) {
    if (skip_layers_given || e.code() != ExitCode::Usage) throw;
    rep.warning("%s; until then requests without \"skip_layers\" are refused (422)", e.what());
  }
  std::vector<std::string> device_labels;
  for (size_t e = 0; e < pool.size(); ++e) device_labels.push_back(device_label(pool.device(e)));
  Metrics metrics(device_labels);
  GenerationQueue queue(size_t(options.queue), pool.size());
  std::atomic<bool> draining{false};

  GuardedServer server;  // connection, head and body limits: server/guarded_server.h
  server.set_guard(options.guard);  // Host, credentials, Origin, Content-Type: server/request_guard.h
  A1111Routes routes(pool, queue, metrics, options, rep);
  routes.install(server);
  OpenAiImages openai(routes);
  openai.install(server);
  ServiceRoutes service(queue, metrics, draining);
  service.install(server);
  install_web_page(server, options.run);

  server.listen_on(options.host, options.port, options.guard.credentials.required(), rep);  // in use: exit 1
  std::vector<std::thread> engine_threads;
  for (size_t e = 0; e < pool.size(); ++e) engine_threads.emplace_back([&queue, e] { queue.serve(e); });
  std::string devices_text;
  for (const std::string& d : device_labels) devices_text += (devices_text.empty() ? "" : ",") + d;
  rep.event("listening on http://" + options.host + ":" + std::to_string(options.port) + " (A1111 API: /sdapi/v1; " +
                std::to_string(pool.size()) + " engine" + (pool.size() == 1 ? "" : "s") + ", devices " + devices_text +
                ")",
            {{"event", "listening"}, {"host", options.host}, {"port", options.port}, {"devices", device_labels}});

  // Signals (util/interrupt.h) only record themselves; this thread acts on them. The first
  // SIGTERM drains: the queue takes nothing new (503, /ready 503), what runs and waits finishes,
  // then the server stops and exits 0; past --drain-seconds what is left is stopped as by a
  // second SIGTERM. A second SIGTERM, SIGINT or SIGHUP stops at once: the waiting requests are
  // answered 503 and a running image stops at its next step.
  std::atomic<bool> stopped{false}, drained{false};
  std::thread watcher([&] {
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline;
    while (!stopped) {
      if (pending_signal()) {
        queue.abort();
        break;
      }
      if (drain_requested() && !draining) {
        draining = true;
        queue.close();
        deadline = Clock::now() + std::chrono::seconds(options.drain_seconds);
        rep.line("serve: SIGTERM: draining (no new requests; %zu waiting, up to %d s to finish)", queue.waiting(),
                 options.drain_seconds);
      }
      if (draining && queue.idle()) {
        // Emptied; the listener stays until the balancer has stopped sending here (each new
        // request meanwhile is refused 503, which it sends elsewhere): closing it while one is on
        // its way would end that one without an answer (HAProxy's 502, issue 32's deploy test).
        const bool quiet = Clock::now() - queue.last_closed_refusal() >= std::chrono::seconds(kDrainQuietSeconds);
        if (quiet || Clock::now() >= deadline) {
          drained = true;
          break;
        }
      } else if (draining && Clock::now() >= deadline) {
        rep.line("serve: the drain took longer than --drain-seconds %d; stopping what is left", options.drain_seconds);
        std::raise(SIGTERM);  // the second SIGTERM: an interrupt
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    server.stop();
  });
  const bool ok = server.listen_after_bind();
  stopped = true;
  watcher.join();
  queue.abort();  // nothing waits past here; a running image stops at its next step (a signal)
  queue.stop_engines();
  for (std::thread& t : engine_threads) t.join();
  if (pending_signal()) {
    rep.line("serve: stopped by %s", signal_name(pending_signal()));
    return 128 + pending_signal();
  }
  if (drained) {
    rep.line("serve: drained; every request was answered");
    return 0;
  }
  if (!ok) throw failure("serve: the listening socket failed");
  return 0;
}

}  // namespace moss
