// Host reference of the text-encoder op family (placeholder until the family is filled in).
#include "ops/host/host_factories.h"

namespace moss {
namespace {
class HostTextOps : public TextOps {
 public:
  explicit HostTextOps(ThreadPool& pool) : pool_(pool) {}

 private:
  ThreadPool& pool_;
};
}  // namespace

std::unique_ptr<TextOps> make_host_text_ops(ThreadPool& pool) { return std::make_unique<HostTextOps>(pool); }

}  // namespace moss
