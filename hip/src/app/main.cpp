// moss-infer-hip: argument handling and the mapping of errors to exit statuses
// (0 success, 2 usage error or unsupported request, 1 any other failure).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <nlohmann/json.hpp>

#include "app/inspect_command.h"
#include "app/run_generation.h"
#include "cli/options.h"
#include "cli/quantize.h"
#include "cli/replay.h"
#include "diagnostics/bench.h"
#include "diagnostics/self_test.h"
#include "pipeline/device_gate.h"
#include "io/standard_streams.h"
#include "pipeline/record.h"
#include "runtime/devices.h"
#include "server/serve.h"
#include "util/backend_env.h"
#include "util/error.h"

using namespace moss;

static void list_devices_command() {
  std::vector<DeviceInfo> devices = list_devices();
  if (devices.empty()) {
    std::printf("no HIP devices\n");
    return;
  }
  for (const DeviceInfo& d : devices) {
    std::printf("device %d: %s (%s%s%s, %.1f GiB, %.1f GiB free): %s\n", d.index, d.name.c_str(), d.arch.c_str(),
                d.family.empty() ? "" : ", ", d.family.c_str(), double(d.total_bytes) / double(1ull << 30),
                double(d.free_bytes) / double(1ull << 30),
                d.supported ? "supported" : ("not supported: " + d.reason).c_str());
    if (d.supported) {
      std::string k;
      for (const std::string& name : d.kernels) k += (k.empty() ? "" : ", ") + name;
      std::printf("  kernels: %s\n", k.c_str());
    }
  }
}

// With --progress json every line on stderr is JSON, errors included (what a frontend parses).
// Another option's value is skipped: `--prompt --progress=json` is a prompt.
static bool json_progress(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--progress=json" || (a == "--progress" && i + 1 < argc && std::string(argv[i + 1]) == "json"))
      return true;
    if (option_takes_value(a)) ++i;
  }
  return false;
}

static int report_error(bool json, const std::string& message, int status) {
  if (json)
    std::fprintf(stderr, "%s\n",
                 nlohmann::ordered_json{{"event", "error"}, {"message", message}, {"exit_status", status}}
                     .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                     .c_str());
  else
    std::fprintf(stderr, "moss-infer-hip: %s\n", message.c_str());
  return status;
}

int main(int argc, char** argv) {
  guard_standard_streams();
  const bool json = json_progress(argc, argv);
  ReplaySource replay;  // the settings a --from-png record supplied: the engine's refusals of them name the record
  try {
    // Every generation on a device (the CLI's and serve's) first passes the kernel self-test.
    set_device_gate(self_test_gate);
    const std::string sub = argc > 1 ? argv[1] : "";
    const std::vector<std::string> rest(argv + std::min(argc, 2), argv + argc);
    // MOSSINFER_BACKEND and MOSSINFER_KERNELS: a misspelt value is refused by name before any
    // command runs, on every backend (a host run would otherwise ignore MOSSINFER_KERNELS).
    if (sub == "serve" || sub == "self-test" || sub == "bench") check_backend_environment();
    if (sub == "serve") return serve_command(rest);
    if (sub == "self-test") return self_test_command(rest);
    if (sub == "bench") return bench_command(rest);
    if (sub == "inspect") return inspect_command(rest);
    if (sub == "quantize") return quantize_command(rest);
    ParsedArgs args = parse_args(std::vector<std::string>(argv + 1, argv + argc));
    replay = args.replay;
    switch (args.action) {
      // A printing command's output that cannot be written is an error (stdout closed, /dev/full);
      // errno is cleared first so that finish_stdout names a write's own failure.
      case Action::Help:
        errno = 0;
        std::fputs(help_text().c_str(), stdout);
        finish_stdout();
        return 0;
      case Action::Version:
        errno = 0;
        std::printf("%s\narchitectures: %s\n", engine_version().c_str(), built_architectures().c_str());
        finish_stdout();
        return 0;
      case Action::ListDevices:
        errno = 0;
        list_devices_command();
        finish_stdout();
        return 0;
      case Action::Run:
        check_backend_environment();
        return run_generation(args.run);
    }
  } catch (const Error& e) {
    const Error blamed = replay.blame(e);
    return report_error(json, blamed.what(), int(blamed.code()));
  } catch (const std::bad_alloc&) {
    return report_error(json, "out of host memory", 1);
  } catch (const std::exception& e) {
    return report_error(json, e.what(), 1);
  }
  return 1;
}
