// moss-check <subcommand> [options]: see subcommand.h.
#include <cstdio>
#include <exception>

#include "subcommand.h"
#include "util/error.h"

namespace check {

std::map<std::string, Subcommand>& registry() {
  static std::map<std::string, Subcommand> r;
  return r;
}

}  // namespace check

static void usage() {
  std::fprintf(stderr, "usage: moss-check <subcommand> [options]\n");
  for (auto& [name, sub] : check::registry())
    std::fprintf(stderr, "  moss-check %s %s%s\n", name.c_str(), sub.usage.c_str(), sub.needs_device ? "  (GPU)" : "");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  auto it = check::registry().find(argv[1]);
  if (it == check::registry().end()) {
    std::fprintf(stderr, "moss-check: unknown subcommand '%s'%s\n", argv[1],
#if MOSSINFER_CHECK_DEVICE
                 ""
#else
                 " (this is a host-only build: the GPU checks are built into device builds only)"
#endif
    );
    usage();
    return 2;
  }
  try {
    return it->second.run(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const moss::Error& e) {
    std::fprintf(stderr, "moss-check %s: %s\n", argv[1], e.what());
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moss-check %s: %s\n", argv[1], e.what());
    return 1;
  }
}
