#include <cstdio>
#include <exception>

#include "golden_check.h"
#include "util/error.h"

namespace golden {

std::map<std::string, Subcommand>& registry() {
  static std::map<std::string, Subcommand> r;
  return r;
}

}  // namespace golden

static void usage() {
  std::fprintf(stderr, "usage: golden_check <subcommand> [options]\n");
  for (auto& [name, sub] : golden::registry()) std::fprintf(stderr, "  golden_check %s %s\n", name.c_str(), sub.usage.c_str());
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  auto it = golden::registry().find(argv[1]);
  if (it == golden::registry().end()) {
    std::fprintf(stderr, "golden_check: unknown subcommand '%s'\n", argv[1]);
    usage();
    return 2;
  }
  try {
    return it->second.run(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const moss::Error& e) {
    std::fprintf(stderr, "golden_check %s: %s\n", argv[1], e.what());
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "golden_check %s: %s\n", argv[1], e.what());
    return 1;
  }
}
