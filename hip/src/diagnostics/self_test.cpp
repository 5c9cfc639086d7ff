#include "diagnostics/self_test.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "diagnostics/diagnostics_options.h"
#include "diagnostics/kernel_runs.h"
#include "io/private_files.h"
#include "runtime/device_choice.h"
#include "util/error.h"
#include "pipeline/record.h"

namespace moss {
namespace {

#if MOSSINFER_HAVE_HIP
const char* kernel_path_name() {
  const char* v = std::getenv("MOSSINFER_KERNELS");
  return v && *v ? v : "native";
}

// The table after the rows: one line per family, its verdict and its worst error against its
// tolerance. Returns the first failing family's name (empty when all passed).
std::string print_verdicts(const std::vector<FamilyVerdict>& results) {
  std::printf("\nself-test summary (error: the worst case's relative L2 over its tolerance; a pass is <= 1)\n");
  std::printf("%-8s %-6s %7s %7s %8s %10s %8s\n", "family", "result", "passed", "failed", "skipped", "error/tol",
              "seconds");
  std::string failing;
  for (const FamilyVerdict& r : results) {
    std::printf("%-8s %-6s %7d %7d %8d %10.3f %8.1f\n", r.name.c_str(), r.ok() ? "pass" : "FAIL", r.passed, r.failed,
                r.skipped, r.worst, r.seconds);
    if (!r.ok() && failing.empty()) failing = r.name;
  }
  return failing;
}

// Runs fn with stdout sent to the descriptor `log` (the gate keeps a generation's terminal clean;
// the log is what a report attaches), which it closes. With -1, stdout is left as it is.
void with_stdout_to(int log, const std::function<void()>& fn) {
  std::fflush(stdout);
  const int saved = log >= 0 ? dup(1) : -1;
  if (saved >= 0) dup2(log, 1);
  auto restore = [&] {
    std::fflush(stdout);
    if (saved >= 0) {
      dup2(saved, 1);
      close(saved);
    }
    if (log >= 0) close(log);
  };
  try {
    fn();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}
#endif

}  // namespace

std::string self_test_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/moss-infer-hip";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/moss-infer-hip";
  return "";
}

int self_test_command(const std::vector<std::string>& args) {
  const SelfTestOptions o = parse_self_test_args(args);
  if (o.help) {
    std::fputs(kSelfTestHelp, stdout);
    return 0;
  }
  const DeviceInfo d = choose_device(o.device);
#if MOSSINFER_HAVE_HIP
  std::printf("moss-infer-hip self-test%s: %s\ndevice %d: %s (%s, %.1f GiB); %s; kernels: %s\n", o.full ? " --full" : "",
              engine_version().c_str(), d.index, d.name.c_str(), d.arch.c_str(),
              double(d.total_bytes) / double(1ull << 30), runtime_versions().c_str(), kernel_path_name());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string failing = print_verdicts(run_kernel_self_test(d.index, o.full));
  std::printf("self-test %s in %.1f s\n", failing.empty() ? "passed" : "FAILED",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (!failing.empty())
    std::printf("please report it (an issue with this whole output): the %s kernels compute wrong results here\n",
                failing.c_str());
  return failing.empty() ? 0 : 1;
#else
  (void)d;  // a host build lists no devices: choose_device has thrown
  return 1;
#endif
}

void self_test_gate(const DeviceInfo& d, const Reporter& rep) {
#if MOSSINFER_HAVE_HIP
  const std::string key = engine_version() + " | device " + d.name + " " + d.arch + " | " + runtime_versions() +
                          " | kernels " + kernel_path_name();
  // The cache (io/private_files.h): only the user's own directory and regular files, opened
  // without following links or blocking; anything else is reported and the run goes on without.
  const std::string dir = self_test_cache_dir();
  std::string why = private_dir_refusal(dir);
  const bool usable = why.empty();
  const std::string passed_file = dir + "/self-test-passed.txt";
  if (usable) {
    std::string text;
    if (read_private_file(passed_file, text, why)) {
      std::istringstream lines(text);
      for (std::string line; std::getline(lines, line);)
        if (line == key) return;
    }
  }
  if (!why.empty()) rep.warning("self-test cache: %s; the self-test runs without it", why.c_str());
  const std::string log = usable ? dir + "/self-test-device" + std::to_string(d.index) + ".log" : "";
  std::string log_why;
  const int log_fd = usable ? open_private_file(log, WriteMode::Replace, log_why) : -1;
  if (!log_why.empty()) rep.warning("self-test log: %s; its output goes to stdout", log_why.c_str());
  rep.line("kernel self-test on device %d (once per binary, device and runtime; a few seconds)", d.index);
  const auto t0 = std::chrono::steady_clock::now();
  std::string failing;
  int cases = 0;
  with_stdout_to(log_fd, [&] {
    const std::vector<FamilyVerdict> results = run_kernel_self_test(d.index, false);
    failing = print_verdicts(results);
    for (const FamilyVerdict& r : results) cases += r.passed + r.failed;
  });
  if (!failing.empty())
    throw failure("kernel self-test failed on device " + std::to_string(d.index) + " (" + d.name + ", " + d.arch +
                  "): the " + failing + " kernels compute wrong results here, so nothing runs on this device. " +
                  "Please open an issue with the output of `moss-infer-hip self-test --device " +
                  std::to_string(d.index) + "`" + (log_fd < 0 ? "" : " (this run's: " + log + ")"));
  rep.line("kernel self-test passed: %d cases in %.1f s", cases,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  if (usable) {
    std::string write_why;
    const int fd = open_private_file(passed_file, WriteMode::Append, write_why);
    const std::string line = key + "\n";
    const bool written = fd >= 0 && write(fd, line.data(), line.size()) == ssize_t(line.size());
    if (fd >= 0) close(fd);
    if (!written)
      rep.warning("could not remember the self-test's pass in %s%s: it runs again next time", passed_file.c_str(),
                  write_why.empty() ? "" : (" (" + write_why + ")").c_str());
  }
#else
  (void)d;
  (void)rep;
#endif
}

}  // namespace moss
