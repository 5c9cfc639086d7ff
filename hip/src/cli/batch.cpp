#include "cli/batch.h"

#include <cstdio>

#include "pipeline/request_fields.h"
#include "util/error.h"

namespace moss {
namespace {

// The index as the conversion at path[pos] ("%d" or "%0Nd") writes it; `len` gets its length.
// Returns false when path[pos] starts no such conversion.
bool format_conversion(const std::string& path, size_t pos, int64_t index, size_t& len, std::string& text) {
  size_t p = pos + 1;
  int width = 0;
  if (p < path.size() && path[p] == '0' && p + 1 < path.size() && path[p + 1] >= '1' && path[p + 1] <= '9') {
    width = path[p + 1] - '0';
    p += 2;
  }
  if (p >= path.size() || path[p] != 'd') return false;
  char b[32];
  std::snprintf(b, sizeof b, "%0*lld", width, (long long)index);
  text = b;
  len = p + 1 - pos;
  return true;
}

// path with every conversion filled in; `conversions` counts them. Throws for a stray %.
std::string fill_pattern(const std::string& flag, const std::string& path, int64_t index, int& conversions) {
  std::string out;
  conversions = 0;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '%') {
      out += path[i];
      continue;
    }
    if (i + 1 < path.size() && path[i + 1] == '%') {
      out += '%';
      ++i;
      continue;
    }
    size_t len = 0;
    std::string text;
    if (!format_conversion(path, i, index, len, text))
      throw usage_error(flag + " '" + path + "': a % in a file name starts %d or %0Nd (N 1 to 9); write %% for a %");
    out += text;
    i += len - 1;
    ++conversions;
  }
  return out;
}

}  // namespace

bool has_number_pattern(const std::string& path) {
  int conversions = 0;
  try {
    fill_pattern("", path, 1, conversions);
  } catch (const Error&) {
    return false;
  }
  return conversions > 0;
}

std::string numbered_output(const std::string& flag, const std::string& path, int64_t index, int64_t count) {
  if (path.empty()) return path;
  int conversions = 0;
  std::string filled;
  try {
    filled = fill_pattern(flag, path, index, conversions);
  } catch (const Error&) {
    if (count == 1) return path;  // one image: a % that starts no pattern is the name's own, as before
    throw;
  }
  if (conversions > 0 || count == 1) return filled;
  const size_t dot = filled.rfind('.');
  const size_t slash = filled.rfind('/');
  const size_t stem_end = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? filled.size() : dot;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%04lld", (long long)index);
  return filled.substr(0, stem_end) + suffix + filled.substr(stem_end);
}

std::vector<GenerationRequest> batch_requests(const RunOptions& o) {
  try {
    check_batch_seeds(o.seed, o.batch_count);  // before anything runs
  } catch (const FieldError& e) {
    throw usage_error(e.cli);
  }
  std::vector<GenerationRequest> images;
  for (int64_t i = 0; i < o.batch_count; ++i) {
    GenerationRequest r = o;  // the options' request, without the run's own settings
    r.seed = o.seed + uint64_t(i);
    r.output_png = numbered_output("-o", o.output_png, i + 1, o.batch_count);
    r.latent_out = numbered_output("--latent-out", o.latent_out, i + 1, o.batch_count);
    images.push_back(std::move(r));
  }
  return images;
}

}  // namespace moss
