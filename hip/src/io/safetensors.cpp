#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/files.h"
#include "io/mapping_faults.h"
#include "io/model_folder.h"
#include "util/error.h"

namespace moss {

using nlohmann::json;

// Headers larger than this are refused before they are read (the official files have a few MB).
static constexpr uint64_t kMaxHeader = 256ull << 20;

void parse_safetensors_header(const std::string& path, const char* header, uint64_t header_len, uint64_t data_size,
                              std::map<std::string, TensorInfo>& tensors,
                              std::map<std::string, std::string>& metadata) {
  json h;
  try {
    h = json::parse(header, header + header_len);
  } catch (const json::exception& e) {
    throw failure(path + ": safetensors header is not valid JSON (" + e.what() + ")");
  }
  if (!h.is_object()) throw failure(path + ": safetensors header is not a JSON object");
  struct Span {
    uint64_t begin, end;
    std::string name;
    bool operator<(const Span& o) const { return begin < o.begin || (begin == o.begin && end < o.end); }
  };
  std::vector<Span> spans;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw failure(path + ": __metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) throw failure(path + ": __metadata__ value '" + m.key() + "' is not a string");
        metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& why) { return failure(path + ": tensor '" + name + "': " + why); };
    if (!v.is_object()) throw bad("entry is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw bad("missing dtype");
    if (!v.contains("shape") || !v["shape"].is_array()) throw bad("missing shape");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw bad("missing data_offsets");
    TensorInfo info;
    info.name = name;
    info.dtype_name = v["dtype"].get<std::string>();
    info.dtype = dtype_from_name(info.dtype_name);
    if (v["shape"].size() > size_t(kMaxRank)) throw bad("rank above 4");
    uint64_t count = 1;
    for (const json& d : v["shape"]) {
      if (!d.is_number_unsigned()) throw bad("shape entries must be non-negative integers");
      uint64_t dim = d.get<uint64_t>();
      if (dim > (1ull << 40) || (dim && count > (1ull << 50) / dim)) throw bad("shape too large");
      count *= dim;
      info.shape.push_back(int64_t(dim));
    }
    const json& off = v["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) throw bad("data_offsets must be non-negative integers");
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    if (info.end < info.begin) throw bad("data_offsets end before they begin");
    if (info.end > data_size)
      throw bad("data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                ") lie beyond the file's data (" + std::to_string(data_size) + " bytes)");
    if (info.dtype != DType::Unknown && count * dtype_size(info.dtype) != info.end - info.begin)
      throw bad("byte size " + std::to_string(info.end - info.begin) + " does not match " + info.dtype_name +
                " of " + std::to_string(count) + " elements");
    spans.push_back({info.begin, info.end, name});
    tensors[name] = std::move(info);
  }
  std::sort(spans.begin(), spans.end());
  auto range = [](const Span& s) { return "'" + s.name + "' [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ")"; };
  // The tensors tile the data section exactly, as the format's own reader requires: no two share
  // a byte, and no byte lies outside every tensor (data a loader would never check, or a header
  // that does not describe the file it came with).
  uint64_t covered = 0;  // the data section's bytes before this one are a tensor's
  for (size_t i = 0; i < spans.size(); ++i) {
    if (i > 0 && spans[i].begin < spans[i - 1].end)
      throw failure(path + ": tensors " + range(spans[i - 1]) + " and " + range(spans[i]) + " overlap in the data section");
    if (spans[i].begin > covered)
      throw failure(path + ": bytes [" + std::to_string(covered) + ", " + std::to_string(spans[i].begin) +
                    ") of the data section belong to no tensor (a gap " +
                    (i == 0 ? "before the first tensor " + range(spans[i]) : "after " + range(spans[i - 1])) + ")");
    covered = std::max(covered, spans[i].end);
  }
  if (covered < data_size)
    throw failure(path + ": bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) +
                  ") at the end of the data section belong to no tensor");
}

const TensorInfo& SafetensorsFile::info(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw failure(path_ + ": missing tensor '" + name + "'");
  return it->second;
}

Tensor SafetensorsFile::get(const std::string& name) const {
  const TensorInfo& i = info(name);
  if (i.dtype == DType::Unknown)
    throw usage_error(path_ + ": tensor '" + name + "' has unsupported dtype " + i.dtype_name);
  const char* p = data_ + i.begin;
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(i.dtype) != 0) {
    // A header whose length is not a multiple of 8 leaves the data misaligned: hand out an
    // aligned copy rather than a view no op may read.
    Tensor copy = host_tensor(i.dtype, i.shape);
    std::memcpy(copy.data, p, copy.nbytes());
    return copy;
  }
  Tensor t(const_cast<char*>(p), i.dtype, i.shape);
  t.owner = mapping_;
  return t;
}

SafetensorsFile::~SafetensorsFile() = default;

std::shared_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  const int fd = open_regular_file(path);  // never blocks: FIFOs and devices are refused first
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw failure(path + ": cannot stat (" + std::strerror(err) + ")");
  }
  uint64_t size = uint64_t(st.st_size);
  if (size < 8) {
    ::close(fd);
    throw failure(path + ": truncated safetensors file (" + std::to_string(size) + " bytes)");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw failure(path + ": mmap failed (" + std::strerror(errno) + ")");
  register_mapping(map, size, path);  // a SIGBUS inside it is reported naming the file
  std::shared_ptr<void> mapping(map, [size](void* p) {
    unregister_mapping(p);
    munmap(p, size);
  });
  const char* bytes = static_cast<const char*>(map);
  if (std::memcmp(bytes, "GGUF", 4) == 0)
    throw usage_error(path + ": GGUF files are not supported; use the official bf16 safetensors folder");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | uint8_t(bytes[i]);
  if (header_len > kMaxHeader || header_len > size - 8)
    throw failure(path + ": safetensors header length " + std::to_string(header_len) + " runs beyond the file (" +
                  std::to_string(size) + " bytes)");
  auto f = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  f->path_ = path;
  f->mapping_ = mapping;
  f->data_ = bytes + 8 + header_len;
  f->data_size_ = size - 8 - header_len;
  parse_safetensors_header(path, bytes + 8, header_len, f->data_size_, f->tensors_, f->metadata_);
  return f;
}

// ---- component folders ------------------------------------------------------------------

WeightFiles WeightFiles::open_folder(const std::string& folder) {
  WeightFiles w;
  w.folder_ = folder;
  std::vector<std::string> entries = list_dir(folder);
  for (const std::string& e : entries)
    if (ends_with(e, ".gguf"))
      throw usage_error(folder + "/" + e + ": GGUF files are not supported; use the official bf16 safetensors folder");
  std::string index;
  for (const std::string& e : entries)
    if (ends_with(e, ".safetensors.index.json")) index = folder + "/" + e;
  if (!index.empty()) {
    const json j = read_json_file(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) throw failure(index + ": missing weight_map");
    std::map<std::string, size_t> shard_index;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) throw failure(index + ": weight_map entry '" + it.key() + "' is not a file name");
      std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos) throw failure(index + ": shard name '" + shard + "' is not a plain file name");
      if (!shard_index.count(shard)) {
        shard_index[shard] = w.files_.size();
        w.files_.push_back(SafetensorsFile::open(folder + "/" + shard));
      }
      size_t fi = shard_index[shard];
      if (!w.files_[fi]->has(it.key()))
        throw failure(folder + "/" + shard + ": missing tensor '" + it.key() + "' listed in " + index);
      w.where_[it.key()] = fi;
    }
  } else {
    for (const std::string& e : entries)
      if (ends_with(e, ".safetensors")) {
        size_t fi = w.files_.size();
        w.files_.push_back(SafetensorsFile::open(folder + "/" + e));
        for (auto& [name, info] : w.files_.back()->tensors()) w.where_[name] = fi;
      }
  }
  if (w.files_.empty()) throw failure(folder + ": no .safetensors weights found");
  return w;
}

WeightFiles WeightFiles::in_memory(const std::string& label, const std::map<std::string, Tensor>& tensors) {
  WeightFiles w;
  w.folder_ = label;
  return w.with_replaced(tensors);
}

WeightFiles WeightFiles::with_replaced(const std::map<std::string, Tensor>& tensors) const {
  WeightFiles w = *this;
  for (const auto& [name, t] : tensors) {
    if (!t.contiguous()) throw std::invalid_argument("WeightFiles::in_memory: tensor '" + name + "' is not contiguous");
    TensorInfo info;
    info.name = name;
    info.dtype = t.dtype;
    info.dtype_name = dtype_name(t.dtype);
    info.shape = t.dims();
    info.end = t.nbytes();
    w.memory_[name] = {info, t};
  }
  return w;
}

bool WeightFiles::has(const std::string& name) const { return where_.count(name) != 0 || memory_.count(name) != 0; }

const TensorInfo& WeightFiles::info(const std::string& name) const {
  if (auto m = memory_.find(name); m != memory_.end()) return m->second.first;
  auto it = where_.find(name);
  if (it == where_.end()) throw failure(folder_ + ": missing tensor '" + name + "'");
  return files_[it->second]->info(name);
}

Tensor WeightFiles::get(const std::string& name) const {
  if (auto m = memory_.find(name); m != memory_.end()) return m->second.second;
  auto it = where_.find(name);
  if (it == where_.end()) throw failure(folder_ + ": missing tensor '" + name + "'");
  return files_[it->second]->get(name);
}

std::string WeightFiles::file_of(const std::string& name) const {
  auto it = where_.find(name);
  return it == where_.end() ? folder_ : files_[it->second]->path();
}

std::vector<std::string> WeightFiles::names() const {
  std::vector<std::string> n;
  for (auto& [k, v] : where_) n.push_back(k);
  for (auto& [k, v] : memory_)
    if (!where_.count(k)) n.push_back(k);
  return n;
}

std::string safetensors_header(const std::vector<TensorInfo>& tensors, const std::map<std::string, std::string>& metadata) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const TensorInfo& t : tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const uint64_t bytes = uint64_t(numel) * dtype_size(t.dtype);
    h[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + header;
}

void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<TensorInfo> infos;
  for (auto& [name, t] : tensors) {
    TensorInfo i;
    i.name = name;
    i.dtype = t.dtype;
    i.shape = t.dims();
    infos.push_back(i);
  }
  std::string out = safetensors_header(infos, metadata);
  for (auto& [name, t] : tensors) {
    if (!t.contiguous()) throw std::invalid_argument("write_safetensors: tensor '" + name + "' is not contiguous");
    out.append(static_cast<const char*>(t.data), t.nbytes());
  }
  write_file_atomic(path, out);
}

}  // namespace moss
