#include <cstdio>
#include <exception>

#include "golden_check.h"
#include "util/error.h"

namespace golden {

std::map<std::string, Subcommand>& registry() {
  static std::map<std::string, Subcommand> r;
  return r;
}

std::string flag(const std::vector<std::string>& args, const std::string& name, const char* fallback) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  if (fallback) return fallback;
  throw moss::usage_error("missing " + name);
}

double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb + 1e-300);
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
