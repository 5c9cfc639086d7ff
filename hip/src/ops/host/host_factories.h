// Factories of the host reference op families (one file each under ops/host).
#pragma once
#include <memory>

#include "ops/core_ops.h"
#include "ops/text_ops.h"
#include "ops/vae_ops.h"
#include "util/thread_pool.h"

namespace moss {

// transposed_v, int8_unit_in_epilogue, int8_qk_attention: see make_host_backend (ops/backend.h).
std::unique_ptr<CoreOps> make_host_core_ops(ThreadPool& pool, bool transposed_v = false,
                                           bool int8_unit_in_epilogue = true, bool int8_qk_attention = false);
std::unique_ptr<TextOps> make_host_text_ops(ThreadPool& pool);
std::unique_ptr<VaeOps> make_host_vae_ops(ThreadPool& pool);

}  // namespace moss
