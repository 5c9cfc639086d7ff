#include "io/gguf_summary.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

namespace moss {
namespace {

// ggml's tensor type numbers (ggml.h, enum ggml_type) and their names.
const char* ggml_type_name(uint32_t t) {
  static const std::map<uint32_t, const char*> names = {
      {0, "F32"},      {1, "F16"},     {2, "Q4_0"},     {3, "Q4_1"},   {6, "Q5_0"},    {7, "Q5_1"},   {8, "Q8_0"},
      {9, "Q8_1"},     {10, "Q2_K"},   {11, "Q3_K"},    {12, "Q4_K"},  {13, "Q5_K"},   {14, "Q6_K"},  {15, "Q8_K"},
      {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"}, {21, "IQ3_S"}, {22, "IQ2_S"},
      {23, "IQ4_XS"},  {24, "I8"},     {25, "I16"},     {26, "I32"},   {27, "I64"},    {28, "F64"},   {29, "IQ1_M"},
      {30, "BF16"},    {34, "TQ1_0"},  {35, "TQ2_0"},   {39, "MXFP4"}};
  auto it = names.find(t);
  return it == names.end() ? "unknown" : it->second;
}

// A bounded reader over the header: every count is checked against what is left of the file.
struct Reader {
  std::ifstream in;
  uint64_t left;
  template <class T>
  T get() {
    T v{};
    if (left < sizeof v) throw std::runtime_error("short");
    in.read(reinterpret_cast<char*>(&v), sizeof v);
    if (!in) throw std::runtime_error("short");
    left -= sizeof v;
    return v;
  }
  void skip(uint64_t n) {
    if (n > left) throw std::runtime_error("short");
    in.seekg(std::streamoff(n), std::ios::cur);
    left -= n;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    if (n > left || n > (1u << 20)) throw std::runtime_error("short");
    std::string s(size_t(n), '\0');
    in.read(s.data(), std::streamsize(n));
    left -= n;
    return s;
  }
  // Skips a value of GGUF metadata type `type` (gguf.md: 0..12).
  void skip_value(uint32_t type, int depth = 0) {
    static const uint64_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
      str();
    } else if (type == 9) {
      const uint32_t inner = get<uint32_t>();
      const uint64_t n = get<uint64_t>();
      if (depth > 2 || n > left) throw std::runtime_error("bad");
      if (inner != 8 && inner != 9 && inner <= 12)
        skip(n * sizes[inner]);
      else
        for (uint64_t i = 0; i < n; ++i) skip_value(inner, depth + 1);
    } else if (type <= 12) {
      skip(sizes[type]);
    } else {
      throw std::runtime_error("bad");
    }
  }
};

}  // namespace

bool is_gguf_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

std::string gguf_summary(const std::string& path) {
  try {
    Reader r{std::ifstream(path, std::ios::binary | std::ios::ate), 0};
    r.left = uint64_t(r.in.tellg());
    r.in.seekg(0);
    r.get<uint32_t>();  // magic
    const uint32_t version = r.get<uint32_t>();
    const uint64_t tensors = r.get<uint64_t>(), kvs = r.get<uint64_t>();
    std::string arch;
    for (uint64_t i = 0; i < kvs; ++i) {
      const std::string key = r.str();
      const uint32_t type = r.get<uint32_t>();
      if (key == "general.architecture" && type == 8)
        arch = r.str();
      else
        r.skip_value(type);
    }
    std::map<std::string, uint64_t> types;
    for (uint64_t i = 0; i < tensors; ++i) {
      r.str();
      const uint32_t dims = r.get<uint32_t>();
      if (dims > 8) throw std::runtime_error("bad");
      r.skip(8 * uint64_t(dims));
      ++types[ggml_type_name(r.get<uint32_t>())];
      r.get<uint64_t>();  // offset
    }
    std::vector<std::pair<uint64_t, std::string>> order;
    for (const auto& [t, n] : types) order.push_back({n, t});
    std::sort(order.rbegin(), order.rend());
    std::string s = "GGUF v" + std::to_string(version) + (arch.empty() ? "" : ", architecture '" + arch + "'") + ", " +
                    std::to_string(tensors) + " tensors";
    for (size_t i = 0; i < order.size(); ++i)
      s += (i ? ", " : ": ") + std::to_string(order[i].first) + " " + order[i].second;
    return s;
  } catch (const std::exception&) {
    return "an unreadable GGUF header";
  }
}

}  // namespace moss
