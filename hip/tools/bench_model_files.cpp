// bench_model_files: what a load does before it reads a weight, for a model folder against the
// same model as single files (docs/model_files.md), timed in this process: the whole opening
// (open_moss_model: every mapping, name mapper, check and fingerprint) and its parts (each file
// examined, each component's fingerprint). bench/model_files_mapping.sh runs it on sparse
// full-size files (bench_random_model --sparse, model_layouts --sparse), so it needs no GPU and
// no disk space. Each figure is the minimum and the median of --runs repetitions, layouts
// alternating, in CPU seconds of this thread (what a shared machine's other load does not move).
//
//   bench_model_files --folder DIR --dit FILE --te FILE --vae FILE [--tokenizer FILE] [--runs N]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "io/file_fingerprint.h"
#include "pipeline/model_files.h"
#include "pipeline/moss_model.h"
#include "util/error.h"

using namespace moss;

namespace {

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

struct Times {
  std::vector<double> s;
  void add(double v) { s.push_back(v); }
  double min() const { return *std::min_element(s.begin(), s.end()); }
  double median() const {
    std::vector<double> v = s;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

double timed(const std::function<void()>& f) {
  const double t0 = thread_seconds();
  f();
  return thread_seconds() - t0;
}

const char* flag(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  if (fallback) return fallback;
  throw usage_error(std::string("missing ") + name);
}

void row(const char* what, const Times& folder, const Times& files) {
  std::printf("%-34s %9.2f %9.2f   %9.2f %9.2f   %+8.2f\n", what, folder.min() * 1e3, folder.median() * 1e3,
              files.min() * 1e3, files.median() * 1e3, (files.median() - folder.median()) * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string folder = flag(argc, argv, "--folder", nullptr);
    ModelPaths files;
    files.diffusion_model = flag(argc, argv, "--dit", nullptr);
    files.text_encoder = flag(argc, argv, "--te", nullptr);
    files.vae = flag(argc, argv, "--vae", nullptr);
    files.tokenizer = flag(argc, argv, "--tokenizer", (folder + "/tokenizer/tokenizer.json").c_str());
    const int runs = std::max(1, std::stoi(flag(argc, argv, "--runs", "7")));
    ModelPaths folder_paths;
    folder_paths.path = folder;
    const std::vector<std::string> folder_files = {folder + "/transformer/diffusion_pytorch_model.safetensors",
                                                   folder + "/text_encoder/model.safetensors",
                                                   folder + "/vae/diffusion_pytorch_model.safetensors"};
    const std::vector<std::string> single_files = {files.diffusion_model, files.text_encoder, files.vae};

    Times open_folder, open_files, hash_folder, hash_files, examine_files, examine_folder;
    for (int r = 0; r < runs + 1; ++r) {  // the first round warms the page cache and is dropped
      const double of = timed([&] { open_moss_model(folder_paths); });
      const double oi = timed([&] { open_moss_model(files); });
      double hf = 0, hi = 0, ef = 0, ei = 0;
      for (const std::string& p : folder_files) {
        hf += timed([&] { file_fingerprint(p); });
        ef += timed([&] { examine_weights_file(p); });  // what the folder's files would cost as single files
      }
      for (const std::string& p : single_files) {
        hi += timed([&] { file_fingerprint(p); });
        ei += timed([&] { examine_weights_file(p); });
      }
      if (r == 0) continue;
      open_folder.add(of);
      open_files.add(oi);
      hash_folder.add(hf);
      hash_files.add(hi);
      examine_folder.add(ef);
      examine_files.add(ei);
    }
    std::printf("milliseconds of CPU (this thread), %d runs    folder: min  median      files: min  median   "
                "files-folder (median)\n",
                runs);
    row("model opened and checked", open_folder, open_files);
    row("  three files' fingerprints", hash_folder, hash_files);
    row("  three files examined (mapped)", examine_folder, examine_files);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "bench_model_files: %s\n", e.what());
    return int(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_model_files: %s\n", e.what());
    return 1;
  }
}
