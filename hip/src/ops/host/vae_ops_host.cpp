// Host reference of the VAE op family (placeholder until the family is filled in).
#include "ops/host/host_factories.h"

namespace moss {
namespace {
class HostVaeOps : public VaeOps {
 public:
  explicit HostVaeOps(ThreadPool& pool) : pool_(pool) {}

 private:
  ThreadPool& pool_;
};
}  // namespace

std::unique_ptr<VaeOps> make_host_vae_ops(ThreadPool& pool) { return std::make_unique<HostVaeOps>(pool); }

}  // namespace moss
