// Comparison and reporting shared by the moss-check subcommands: the metrics (cosine, relative
// L2, max |diff|), the verdict limits and how a verdict line reads, the tally that ends every run
// with "N passed, M failed", and the command-line helpers. Header-only: small inline functions.
//
// A verdict line:  "PASS <what>: cos 0.9999871 rel_l2 5.07e-03 max|diff| 1.2e-02 (limit: ...)"
// An info line:    "info <what>: cos ... rel_l2 ..."   (reported, not judged)
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "util/error.h"
#include "util/numbers.h"

namespace golden {

// ||a - b|| / ||b|| in double precision (||a - b|| when b is all zeros).
inline double rel_l2(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

inline double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb + 1e-300);
}

// Counts verdicts and prints the closing line.
struct Tally {
  int passed = 0, failed = 0;
  void check(bool ok, const std::string& what) {
    (ok ? passed : failed)++;
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
  }
  int finish() const {
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed > 0 ? 0 : 1;
  }
};

struct Metrics {
  double cos = 0, rel = INFINITY, max_abs = INFINITY;
  bool same_size = false, finite = false;
};

inline Metrics measure(const std::vector<float>& got, const std::vector<float>& want) {
  Metrics m;
  m.same_size = got.size() == want.size() && !want.empty();
  if (!m.same_size) return m;
  m.cos = cosine(got.data(), want.data(), got.size());
  m.rel = rel_l2(got.data(), want.data(), got.size());
  m.max_abs = max_abs_diff(got.data(), want.data(), got.size());
  m.finite = std::isfinite(m.cos) && std::isfinite(m.rel);
  return m;
}

// A verdict limit: relative L2 at most max_rel and cosine at least min_cos; `basis` says where
// the numbers come from (printed with every verdict, so a line explains itself).
struct Limit {
  double max_rel = INFINITY;
  double min_cos = -INFINITY;
  std::string basis;
  bool info_only = false;  // report the numbers, judge nothing

  static Limit rel(double r, std::string why) { return Limit{r, -INFINITY, std::move(why), false}; }
  static Limit cos(double c, std::string why) { return Limit{INFINITY, c, std::move(why), false}; }
  static Limit info(std::string why = "") { return Limit{INFINITY, -INFINITY, std::move(why), true}; }
  bool accepts(const Metrics& m) const { return m.same_size && m.finite && m.rel <= max_rel && m.cos >= min_cos; }
  std::string str() const {
    char b[96] = "";
    if (std::isfinite(max_rel) && std::isfinite(min_cos))
      std::snprintf(b, sizeof b, "rel_l2 <= %.3g, cos >= %.7g", max_rel, min_cos);
    else if (std::isfinite(max_rel))
      std::snprintf(b, sizeof b, "rel_l2 <= %.3g", max_rel);
    else if (std::isfinite(min_cos))
      std::snprintf(b, sizeof b, "cos >= %.7g", min_cos);
    return basis.empty() ? std::string(b) : std::string(b) + (b[0] ? ": " : "") + basis;
  }
};

inline std::string metrics_str(const Metrics& m) {
  char line[160];
  std::snprintf(line, sizeof line, "cos %.7f rel_l2 %.3e max|diff| %.3e", m.cos, m.rel, m.max_abs);
  return line;
}

// Compares `got` with `want` (any shapes of equal element count and, when `want_dims` is given,
// equal dims), prints a verdict (or an info line) and returns the metrics.
inline Metrics report(Tally& tally, const std::string& what, const std::vector<float>& got,
                      const std::vector<float>& want, const Limit& limit) {
  const Metrics m = measure(got, want);
  if (!m.same_size) {
    const std::string msg = what + ": " + std::to_string(got.size()) + " values, the reference has " +
                            std::to_string(want.size());
    if (limit.info_only)
      std::printf("info %s\n", msg.c_str());
    else
      tally.check(false, msg);
    return m;
  }
  std::string line = what + ": " + metrics_str(m);
  if (!m.finite) line += " (NOT FINITE)";
  if (limit.info_only) {
    std::printf("info %s%s\n", line.c_str(), limit.basis.empty() ? "" : ("  [" + limit.basis + "]").c_str());
    std::fflush(stdout);
  } else {
    tally.check(limit.accepts(m), line + "  (limit " + limit.str() + ")");
  }
  return m;
}

inline Metrics report(Tally& tally, const std::string& what, const moss::Tensor& got, const moss::Tensor& want,
                      const Limit& limit) {
  if (got.numel() != want.numel()) {
    const std::string msg = what + ": shape " + got.shape_str() + ", the reference " + want.shape_str();
    if (limit.info_only)
      std::printf("info %s\n", msg.c_str());
    else
      tally.check(false, msg);
    return Metrics{};
  }
  return report(tally, what, moss::to_f32_vector(got), moss::to_f32_vector(want), limit);
}

// As report, but the shapes must be equal, not only the element counts.
inline Metrics report_exact(Tally& tally, const std::string& what, const moss::Tensor& got, const moss::Tensor& want,
                            const Limit& limit) {
  if (got.dims() != want.dims()) {
    tally.check(false, what + ": shape " + got.shape_str() + ", the reference " + want.shape_str());
    return Metrics{};
  }
  return report(tally, what, got, want, limit);
}

// Token ids: equal, or the first difference.
inline bool report_ids(Tally& tally, const std::string& what, const std::vector<int32_t>& ours,
                       const std::vector<int32_t>& ref) {
  size_t i = 0;
  while (i < ours.size() && i < ref.size() && ours[i] == ref[i]) ++i;
  const bool same = ours.size() == ref.size() && i == ours.size();
  std::string line = what + ": ";
  if (same)
    line += std::to_string(ours.size()) + " ids equal";
  else if (i < ours.size() && i < ref.size())
    line += "ids differ at " + std::to_string(i) + ": ours " + std::to_string(ours[i]) + ", reference " +
            std::to_string(ref[i]) + " (" + std::to_string(ours.size()) + " vs " + std::to_string(ref.size()) +
            " ids)";
  else
    line += std::to_string(ours.size()) + " ids, the reference has " + std::to_string(ref.size()) +
            " (equal up to there)";
  tally.check(same, line);
  return same;
}

// Host float sequences compared bit for bit (schedules).
inline bool report_bits(Tally& tally, const std::string& what, const std::vector<float>& ours,
                        const std::vector<float>& ref) {
  size_t i = 0;
  while (i < ours.size() && i < ref.size() &&
         std::memcmp(&ours[i], &ref[i], sizeof(float)) == 0)
    ++i;
  const bool same = ours.size() == ref.size() && i == ours.size();
  char line[192];
  if (same)
    std::snprintf(line, sizeof line, ": %zu values bit-identical", ours.size());
  else if (i < ours.size() && i < ref.size())
    std::snprintf(line, sizeof line, ": value %zu is %.9g, reference %.9g", i, double(ours[i]), double(ref[i]));
  else
    std::snprintf(line, sizeof line, ": %zu values, reference %zu", ours.size(), ref.size());
  tally.check(same, what + line);
  return same;
}

// 8-bit images: ours HWC (image_to_u8), the reference CHW (the golden and dump layout).
struct U8Diff {
  bool comparable = false;  // the reference is U8 [3, H, W] with as many values as ours
  double mean = 0;          // mean |level difference|
  int worst = 0;
  int64_t differ = 0, one_off = 0, more = 0, values = 0;  // values one level off, more than one
  std::string mismatch;     // why not comparable
};

inline U8Diff u8_diff(const std::vector<uint8_t>& ours_hwc, const moss::Tensor& ref_chw) {
  U8Diff d;
  if (ref_chw.rank != 3 || ref_chw.dtype != moss::DType::U8 || int64_t(ours_hwc.size()) != ref_chw.numel()) {
    d.mismatch = std::to_string(ours_hwc.size()) + " bytes, the reference " + ref_chw.shape_str() + " " +
                 moss::dtype_name(ref_chw.dtype) + " (want U8 [3, H, W])";
    return d;
  }
  const int64_t C = ref_chw.shape[0], P = ref_chw.shape[1] * ref_chw.shape[2];
  const uint8_t* r = ref_chw.ptr<const uint8_t>();
  double sum = 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t p = 0; p < P; ++p) {
      const int diff = std::abs(int(ours_hwc[size_t(p * C + c)]) - int(r[c * P + p]));
      sum += diff;
      d.worst = std::max(d.worst, diff);
      d.differ += diff != 0;
      d.one_off += diff == 1;
      d.more += diff > 1;
    }
  d.comparable = true;
  d.values = C * P;
  d.mean = sum / double(d.values);
  return d;
}

inline std::string u8_diff_str(const U8Diff& d) {
  char line[224];
  std::snprintf(line, sizeof line, ": mean %.3f levels off, worst %d, %lld of %lld values differ (%lld one level off, %.3f%%)",
                d.mean, d.worst, (long long)d.differ, (long long)d.values, (long long)d.one_off,
                100.0 * double(d.one_off) / double(std::max<int64_t>(d.values, 1)));
  return line;
}

// Verdict on the mean level difference; the worst and the count of differing values printed.
inline void report_u8(Tally& tally, const std::string& what, const std::vector<uint8_t>& ours_hwc,
                      const moss::Tensor& ref_chw, double max_mean_levels, bool info_only = false) {
  const U8Diff d = u8_diff(ours_hwc, ref_chw);
  if (!d.comparable) {
    tally.check(false, what + ": " + d.mismatch);
    return;
  }
  if (info_only) {
    std::printf("info %s%s\n", what.c_str(), u8_diff_str(d).c_str());
    return;
  }
  char lim[64];
  std::snprintf(lim, sizeof lim, "  (limit mean <= %.3g levels)", max_mean_levels);
  tally.check(d.mean <= max_mean_levels, what + u8_diff_str(d) + lim);
}

// ---- command line (moss-check subcommands and the device tools) ---------------------------------
// --flag value lookup; returns fallback, or throws moss::usage_error naming the flag when required.
inline std::string flag(const std::vector<std::string>& args, const std::string& name, const char* fallback = nullptr) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == name) return args[i + 1];
  if (fallback) return fallback;
  throw moss::usage_error("missing " + name);
}

inline bool has_flag(const std::vector<std::string>& args, const std::string& name) {
  for (const std::string& a : args)
    if (a == name) return true;
  return false;
}

// Numeric flags go through the program's one number parser (util/numbers.h): a value that is not
// an integer (a decimal) in [lo, hi] is a usage error naming the flag (exit status 2).
inline int64_t parse_int_value(const std::string& name, const std::string& text, int64_t lo, int64_t hi) {
  const moss::ParsedInt p = moss::parse_strict_int(text, lo, hi);
  if (p.error != moss::NumberError::None) throw moss::usage_error(name + " '" + text + "': " + moss::integer_problem(p, lo, hi));
  return p.value;
}
inline int64_t int_flag(const std::vector<std::string>& args, const std::string& name, int64_t fallback, int64_t lo,
                        int64_t hi) {
  if (!has_flag(args, name)) return fallback;
  return parse_int_value(name, flag(args, name), lo, hi);
}
inline double decimal_flag(const std::vector<std::string>& args, const std::string& name, double fallback, double lo,
                           double hi) {
  if (!has_flag(args, name)) return fallback;
  const std::string text = flag(args, name);
  const moss::ParsedDecimal p = moss::parse_strict_decimal(text, lo, hi);
  if (p.error != moss::NumberError::None)
    throw moss::usage_error(name + " '" + text + "': " +
                            (p.error == moss::NumberError::NotANumber ? std::string("not a number")
                                                                      : "must be between " + std::to_string(lo) +
                                                                            " and " + std::to_string(hi)));
  return p.value;
}
// A GPU index (--device N).
inline int device_flag(const std::vector<std::string>& args) { return int(int_flag(args, "--device", 0, 0, 1024)); }

// "2,22" -> {2, 22}; nullopt when the flag is absent.
inline std::optional<std::vector<int>> int_list_flag(const std::vector<std::string>& args, const std::string& name) {
  if (!has_flag(args, name)) return std::nullopt;
  std::vector<int> out;
  std::stringstream ss(flag(args, name));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    out.push_back(int(parse_int_value(name, item, 0, 1 << 20)));
  }
  return out;
}

// Refuses a flag not in `known` (each known flag takes one value).
inline void check_flags(const std::vector<std::string>& args, const std::vector<std::string>& known) {
  for (size_t i = 0; i < args.size(); i += 2) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || args[i] == k;
    if (!ok) throw moss::usage_error("unknown option '" + args[i] + "'");
    if (i + 1 >= args.size()) throw moss::usage_error(args[i] + " needs a value");
  }
}

}  // namespace golden
