#include "ops/backend.h"
#include "ops/host/host_factories.h"

namespace moss {
namespace {

class HostBackend : public Backend {
 public:
  HostBackend(bool transposed_v, bool int8_unit_in_epilogue, bool int8_qk_attention) {
    ThreadPool& pool = ThreadPool::global();
    core_ = make_host_core_ops(pool, transposed_v, int8_unit_in_epilogue, int8_qk_attention);
    text_ = make_host_text_ops(pool);
    vae_ = make_host_vae_ops(pool);
    lora_ = make_host_lora_ops(pool);
  }
  std::string name() const override { return "host"; }
  Where where() const override { return Where::Host; }
  Tensor alloc(DType t, const std::vector<int64_t>& dims) override { return host_tensor(t, dims); }
  Tensor upload(const Tensor& host) override { return host; }
  Tensor download(const Tensor& t) override {
    if (t.contiguous()) return t;
    Tensor out = host_tensor(t.dtype, t.dims());
    size_t es = dtype_size(t.dtype);
    for (int64_t r = 0; r < t.rows(); ++r)
      std::memcpy(static_cast<char*>(out.data) + size_t(r * t.cols()) * es,
                  static_cast<const char*>(t.data) + size_t(r * t.row_stride()) * es, size_t(t.cols()) * es);
    return out;
  }
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(bool transposed_v, bool int8_unit_in_epilogue, bool int8_qk_attention) {
  return std::make_unique<HostBackend>(transposed_v, int8_unit_in_epilogue, int8_qk_attention);
}

}  // namespace moss
