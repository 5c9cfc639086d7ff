#include "io/model_folder.h"

#include <sstream>

#include "io/files.h"
#include "io/json_text.h"
#include "util/error.h"

namespace moss {

using nlohmann::json;

json read_json_file(const std::string& path) {
  require_regular_file(path);  // "missing file", or what it is instead (a FIFO, a device, ...)
  std::string text = read_text_file(path);
  refuse_nul_bytes(text, path, 1, ExitCode::Failure);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw failure(path + ": malformed JSON (" + e.what() + ")");
  }
}

static const json& config_value(const json& j, const std::string& key, const std::string& file) {
  if (!j.is_object() || !j.contains(key)) throw failure(file + ": missing key '" + key + "'");
  return j.at(key);
}

int64_t config_int(const json& j, const std::string& key, const std::string& file, int64_t lo, int64_t hi) {
  const json& v = config_value(j, key, file);
  if (!v.is_number_integer()) throw failure(file + ": key '" + key + "' must be an integer");
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi)
    throw failure(file + ": key '" + key + "' is " + v.dump() + ", outside " + std::to_string(lo) + ".." +
                  std::to_string(hi));
  return x;
}

void read_config_ints(const json& j, const std::string& file, std::initializer_list<ConfigInt> keys) {
  for (const ConfigInt& k : keys) k.field = config_int(j, k.key, file, 1, k.hi);
}

double config_number(const json& j, const std::string& key, const std::string& file) {
  const json& v = config_value(j, key, file);
  if (!v.is_number()) throw failure(file + ": key '" + key + "' must be a number");
  return v.get<double>();
}

static std::string shape_text(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << ']';
  return o.str();
}

// Dtypes that mark a quantized checkpoint: refused as unsupported rather than malformed.
static bool quantized_dtype_name(const std::string& n) {
  return n == "I8" || n == "U8" || n == "F8_E4M3" || n == "F8_E5M2" || n == "I4" || n == "U4" || n == "F4" ||
         n.rfind("Q", 0) == 0 || n.rfind("F8", 0) == 0;
}

void check_tensors(const WeightFiles& weights, const std::vector<ExpectedTensor>& expected,
                   const std::vector<std::string>& ignored_prefixes) {
  std::map<std::string, const ExpectedTensor*> want;
  for (const ExpectedTensor& e : expected) want[e.name] = &e;
  for (const std::string& name : weights.names()) {
    auto it = want.find(name);
    if (it == want.end()) {
      bool ignored = false;
      for (const std::string& p : ignored_prefixes) ignored = ignored || name.rfind(p, 0) == 0;
      const TensorInfo& info = weights.info(name);
      if (!ignored && (quantized_dtype_name(info.dtype_name) || name.find("qweight") != std::string::npos ||
                       name.find(".scales") != std::string::npos || name.find("weight_scale") != std::string::npos))
        throw usage_error(weights.file_of(name) + ": tensor '" + name + "' (" + info.dtype_name +
                          ") is quantized; only bf16 weights are supported (docs/model_files.md)");
      if (!ignored) throw failure(weights.file_of(name) + ": unexpected tensor '" + name + "'");
      continue;
    }
    const ExpectedTensor& e = *it->second;
    const TensorInfo& info = weights.info(name);
    bool dtype_ok = false;
    for (DType d : e.dtypes) dtype_ok = dtype_ok || d == info.dtype;
    if (!dtype_ok) {
      std::string accepted;
      for (DType d : e.dtypes) accepted += std::string(accepted.empty() ? "" : " or ") + dtype_name(d);
      std::string msg = weights.file_of(name) + ": tensor '" + name + "' has dtype " + info.dtype_name +
                        ", expected " + accepted;
      if (quantized_dtype_name(info.dtype_name)) throw usage_error(msg + " (quantized weights are not supported)");
      throw failure(msg);
    }
    if (info.shape != e.shape)
      throw failure(weights.file_of(name) + ": tensor '" + name + "' has shape " + shape_text(info.shape) +
                    ", the config implies " + shape_text(e.shape));
  }
  for (const ExpectedTensor& e : expected)
    if (!e.optional && !weights.has(e.name)) throw failure(weights.folder() + ": missing tensor '" + e.name + "'");
}

}  // namespace moss
