// bench_tokenizer: times the engine's tokenizer on the inputs bench/tokenizer/run_bench.py
// prepares (and feeds to Hugging Face `tokenizers` in the same run). Prints one JSON object:
// load time of tokenizer.json, and for each input its token count, the first encode (empty
// piece cache, as for a prompt right after start) and the median of repeated encodes, both
// wall clock and this thread's CPU time (the machine may be shared, so CPU time is the
// steadier number).
//
// usage: bench_tokenizer --tokenizer tokenizer.json --input NAME=FILE [--input ...]
//                        [--loads 5] [--repeat 20]
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/files.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

struct Clock {
  double wall, cpu;
  static Clock now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return {std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(),
            double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec)};
  }
};

struct Sample {
  double wall = 0, cpu = 0;
};

template <typename Fn>
Sample timed(Fn&& fn) {
  const Clock a = Clock::now();
  fn();
  const Clock b = Clock::now();
  return {b.wall - a.wall, b.cpu - a.cpu};
}

Sample median(std::vector<Sample> v) {
  auto mid = [&](auto key) {
    std::vector<double> x;
    for (const Sample& s : v) x.push_back(key(s));
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  return {mid([](const Sample& s) { return s.wall; }), mid([](const Sample& s) { return s.cpu; })};
}

std::string sample_json(const Sample& s) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "{\"wall_s\": %.6f, \"cpu_s\": %.6f}", s.wall, s.cpu);
  return buf;
}

int run(int argc, char** argv) {
  std::string tokenizer_path;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, path
  int loads = 5, repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--tokenizer") {
      tokenizer_path = value;
    } else if (flag == "--input") {
      const size_t eq = value.find('=');
      if (eq == std::string::npos) throw moss::usage_error("--input wants NAME=FILE");
      inputs.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (flag == "--loads") {
      loads = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--repeat") {
      repeat = std::max(1, std::atoi(value.c_str()));
    } else {
      throw moss::usage_error("unknown option " + flag);
    }
  }
  if (tokenizer_path.empty()) throw moss::usage_error("missing --tokenizer");

  // Each input's first encode runs on a freshly loaded tokenizer (empty cache).
  std::vector<Sample> load_samples;
  std::vector<moss::Tokenizer> fresh;
  for (int i = 0; i < std::max<int>(loads, int(inputs.size())); ++i) {
    load_samples.push_back(timed([&] { fresh.push_back(moss::Tokenizer::load(tokenizer_path)); }));
  }
  const Sample load_min = *std::min_element(load_samples.begin(), load_samples.end(),
                                            [](const Sample& a, const Sample& b) { return a.wall < b.wall; });

  std::string out = "{\"engine\": \"moss\", \"tokenizer\": \"" + tokenizer_path +
                    "\", \"vocab_size\": " + std::to_string(fresh[0].vocab_size()) +
                    ", \"regex_jit\": " + (fresh[0].regex_jit() ? "true" : "false") +
                    ", \"load\": {\"median\": " + sample_json(median(load_samples)) +
                    ", \"min\": " + sample_json(load_min) + "}, \"inputs\": {";
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string text = moss::read_text_file(inputs[k].second);
    const moss::Tokenizer& tok = fresh[k];
    std::vector<int32_t> ids;
    const Sample first = timed([&] { ids = tok.encode(text); });
    std::vector<Sample> warm;
    for (int r = 0; r < repeat; ++r) warm.push_back(timed([&] { ids = tok.encode(text); }));
    // A checksum lets the script compare the ids with tokenizers' without printing them.
    uint64_t hash = 1469598103934665603ull;
    for (int32_t id : ids) hash = (hash ^ uint64_t(uint32_t(id))) * 1099511628211ull;
    out += std::string(k ? ", " : "") + "\"" + inputs[k].first + "\": {\"bytes\": " + std::to_string(text.size()) +
           ", \"tokens\": " + std::to_string(ids.size()) + ", \"ids_fnv1a\": \"" + std::to_string(hash) +
           "\", \"first\": " + sample_json(first) + ", \"warm_median\": " + sample_json(median(warm)) + "}";
  }
  out += "}}";
  std::printf("%s\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const moss::Error& e) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
    return int(e.code());
  }
}
