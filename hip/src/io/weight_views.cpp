// Files of other layouts seen under the canonical (official diffusers) names: a renamed mapping
// whose tensors are views (a fused qkv's rows, a 1x1 conv seen as a matrix), and a component put
// together from such files. The loaders, the streamers and the memory planner read them as they
// read a model folder's files.
#include <numeric>

#include "io/safetensors.h"
#include "util/error.h"

namespace moss {

static int64_t element_count(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<int64_t>());
}

std::shared_ptr<SafetensorsFile> SafetensorsFile::renamed(const std::map<std::string, TensorSource>& names) const {
  auto f = std::shared_ptr<SafetensorsFile>(new SafetensorsFile());
  f->path_ = path_;
  f->mapping_ = mapping_;
  f->data_ = data_;
  f->data_size_ = data_size_;
  f->metadata_ = metadata_;
  for (const auto& [name, src] : names) {
    const TensorInfo& stored = info(src.stored);  // "missing tensor" naming the file
    TensorInfo view = stored;
    view.name = name;
    if (src.shape.empty()) {
      f->tensors_[name] = view;
      continue;
    }
    const int64_t stored_rows = stored.shape.empty() ? 1 : stored.shape[0];
    const int64_t row_values = stored_rows ? element_count(stored.shape) / stored_rows : 0;
    const int64_t rows = src.shape[0], values = element_count(src.shape);
    if (stored.dtype == DType::Unknown || src.row_begin < 0 || rows <= 0 || src.row_begin + rows > stored_rows ||
        values != rows * row_values)
      throw failure(path_ + ": tensor '" + src.stored + "' cannot be read as '" + name + "' (its shape does not fit)");
    view.shape = src.shape;
    view.begin = stored.begin + uint64_t(src.row_begin * row_values) * dtype_size(stored.dtype);
    view.end = view.begin + uint64_t(values) * dtype_size(stored.dtype);
    f->tensors_[name] = view;
  }
  return f;
}

WeightFiles WeightFiles::of_files(const std::string& label,
                                  const std::vector<std::shared_ptr<SafetensorsFile>>& files) {
  WeightFiles w;
  w.folder_ = label;
  for (const auto& file : files) {
    const size_t fi = w.files_.size();
    w.files_.push_back(file);
    for (const auto& [name, info] : file->tensors()) {
      auto [it, fresh] = w.where_.emplace(name, fi);
      if (!fresh)
        throw failure(label + ": tensor '" + name + "' is in both " + w.files_[it->second]->path() + " and " +
                      file->path());
    }
  }
  return w;
}

void WeightFiles::add_in_memory(const std::string& name, const Tensor& t) {
  TensorInfo info;
  info.name = name;
  info.dtype = t.dtype;
  info.dtype_name = dtype_name(t.dtype);
  info.shape = t.dims();
  info.end = t.nbytes();
  memory_[name] = {info, t};
}

}  // namespace moss
