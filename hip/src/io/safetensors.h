// safetensors reader: an 8-byte little-endian header length, a JSON header, then the raw
// tensor bytes. The file is mmap'd read-only; tensors are views into the mapping (the
// mapping stays alive while any view does). Every header field is validated before use:
// a malformed file is refused with a message naming the file and, where known, the tensor.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace moss {

struct TensorInfo {
  std::string name;
  DType dtype = DType::Unknown;
  std::string dtype_name;  // as written in the header (kept for messages about unknown types)
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};

// A tensor of a file under another name (io/weight_views.cpp): the stored tensor `stored`, or
// rows [row_begin, row_begin + shape[0]) of its first dimension (rows > 0 of a split, e.g. a
// fused qkv's q, k or v), seen with `shape` (the same bytes per row; a [C, C, 1, 1] conv as
// [C, C]). Rows of a row-major tensor are contiguous, so every such tensor is a view into the
// mapping: nothing is copied.
struct TensorSource {
  std::string stored;
  int64_t row_begin = 0;
  std::vector<int64_t> shape;  // empty: the stored shape
};

class SafetensorsFile {
 public:
  // Throws moss::Error (exit 1) for unreadable or malformed files.
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);
  ~SafetensorsFile();

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;  // throws when missing
  Tensor get(const std::string& name) const;               // host view into the mapping
  // The same mapping seen under other names (io/weight_views.cpp): holds exactly the tensors of
  // `names` (canonical name -> source), each a view; throws moss::Error naming the file when a
  // source is missing or a view does not fit it.
  std::shared_ptr<SafetensorsFile> renamed(const std::map<std::string, TensorSource>& names) const;

 private:
  SafetensorsFile() = default;
  std::string path_;
  std::shared_ptr<void> mapping_;  // unmapped when the last view goes
  const char* data_ = nullptr;     // start of the data section
  uint64_t data_size_ = 0;
  std::map<std::string, TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
  std::weak_ptr<SafetensorsFile> self_;
  friend std::shared_ptr<SafetensorsFile> open_impl(const std::string&);
};

// Parses and validates a header from memory (used by the reader and by the fuzz target).
// `file_size` is the size of the whole file; throws moss::Error on anything malformed.
void parse_safetensors_header(const std::string& path, const char* header, uint64_t header_len,
                              uint64_t data_size, std::map<std::string, TensorInfo>& tensors,
                              std::map<std::string, std::string>& metadata);

// One model component (a folder's weights): a single .safetensors file or a sharded set
// listed in `*.safetensors.index.json`. Tensors are found by name across the shards.
class WeightFiles {
 public:
  // `folder` holds the weights; `stem` is e.g. "model" or "diffusion_pytorch_model".
  static WeightFiles open_folder(const std::string& folder);
  // Host tensors held in memory under their names, served like a folder's (the benchmark's random
  // weights: every loader and streamer reads them as it reads mapped files, with no file written).
  // `label` stands for the folder in messages.
  static WeightFiles in_memory(const std::string& label, const std::map<std::string, Tensor>& tensors);
  // A component read from files of other layouts (io/weight_views.cpp): `files` already renamed
  // to the canonical names (SafetensorsFile::renamed); `label` stands for the component in
  // messages. A name held by two files is refused naming both.
  static WeightFiles of_files(const std::string& label, const std::vector<std::shared_ptr<SafetensorsFile>>& files);
  // Adds a host tensor under `name` (a value the file lacks and the program supplies, e.g. the
  // published FLUX.2 latent statistics).
  void add_in_memory(const std::string& name, const Tensor& t);
  // These files with some tensors served from host memory instead (a LoRA's merged weights,
  // model/lora.h): same names, dtypes and shapes; everything else still reads the mapping.
  WeightFiles with_replaced(const std::map<std::string, Tensor>& tensors) const;
  bool has(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  Tensor get(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& folder() const { return folder_; }
  std::string file_of(const std::string& name) const;

 private:
  std::string folder_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // tensor name -> index into files_
  std::map<std::string, std::pair<TensorInfo, Tensor>> memory_;  // in_memory(): name -> (info, host tensor)
};

// The start of a safetensors file holding `tensors` (name, dtype, shape) in this order: the
// 8-byte length and the JSON header (offsets assigned in list order, padded to 8 bytes). The
// tensors' bytes follow it, in the same order (write_safetensors; model/quantize_dit.h streams them).
std::string safetensors_header(const std::vector<TensorInfo>& tensors,
                               const std::map<std::string, std::string>& metadata = {});

// Writer (tests, tools): tensors given as host views, written contiguously in order.
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace moss
