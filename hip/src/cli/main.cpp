// moss-infer-hip: argument handling and the mapping of errors to exit statuses
// (0 success, 2 usage error or unsupported request, 1 any other failure).
#include <cstdio>
#include <exception>
#include <new>

#include "cli/options.h"
#include "pipeline/record.h"
#include "pipeline/run.h"
#include "runtime/devices.h"
#include "util/error.h"

using namespace moss;

static int list_devices_command() {
  std::vector<DeviceInfo> devices = list_devices();
  if (devices.empty()) {
    std::printf("no HIP devices\n");
    return 0;
  }
  for (const DeviceInfo& d : devices) {
    std::printf("device %d: %s (%s, %.1f GiB, %.1f GiB free): %s\n", d.index, d.name.c_str(), d.arch.c_str(),
                double(d.total_bytes) / double(1ull << 30), double(d.free_bytes) / double(1ull << 30),
                d.supported ? "supported" : ("not supported: " + d.reason).c_str());
    if (d.supported) {
      std::string k;
      for (const std::string& name : d.kernels) k += (k.empty() ? "" : ", ") + name;
      std::printf("  kernels: %s\n", k.c_str());
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    ParsedArgs args = parse_args(std::vector<std::string>(argv + 1, argv + argc));
    switch (args.action) {
      case Action::Help: std::fputs(help_text().c_str(), stdout); return 0;
      case Action::Version:
        std::printf("%s\narchitectures: %s\n", engine_version().c_str(), built_architectures().c_str());
        return 0;
      case Action::ListDevices: return list_devices_command();
      case Action::Run: return run_generation(args.run);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "moss-infer-hip: %s\n", e.what());
    return int(e.code());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "moss-infer-hip: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moss-infer-hip: %s\n", e.what());
    return 1;
  }
  return 1;
}
