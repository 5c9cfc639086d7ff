// Where the DiT's weights live during a run (docs/product.md section 5): the fixed part
// (embedders, modulations, the text embedder, the head) and the first `resident_blocks` main
// blocks are copied to the device once; every other block lives in pinned host memory and is
// copied, each pass, into one of two device slots on the copy stream while the block before it
// computes. Streaming changes where the weights are, never what is computed: the result equals
// the resident run bit for bit.
//
// A streamed step is bound by the host-to-device bus (on the H200, 40 blocks of 0.21 GiB at
// 55 GB/s take longer than the step computes), so the large matrices travel packed
// (tensor/packed_bf16.h: 12 bits a value instead of 16): their packed bytes go to one device
// staging buffer and are unpacked into the slot on the compute stream just before the block runs.
// The images, their packing, the two slots and the copies are the weight-streaming module's
// (streaming/), shared with the text encoder (model/te_streaming.cpp); this adapter decides which
// blocks stream and in what order their copies are queued.
//
// Order of work, for the streamed blocks of a pass in turn (slots alternate, across passes too):
// a block's copies wait for the compute that last read its slot (raw part) and for the last
// unpacking (packed part, the staging buffer); its unpacking and compute wait for its copies.
// The last block of a pass starts the copy of the next pass's first one (a sampler's steps run
// the same blocks), so the copy engine does not idle between steps.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "model/dit.h"
#include "model/dit_weights.h"

namespace moss {

// Streamed bf16 tensors of at least this many values travel packed: the FFN's matrices (two
// thirds of a block's bytes), not the attention projections, whose unpacking would cost more
// compute than their bytes cost bus time.
constexpr int64_t kPackMinValues = int64_t(16) << 20;

// Called with each tensor the source keeps resident, right after its upload and before any block
// runs: the LoRA merge of a resident weight in place on the device (model/lora.h). Empty: none.
using ResidentHook = std::function<void(const std::string& name, Tensor& device_tensor)>;

std::unique_ptr<DitWeightSource> make_resident_streaming_source(Backend& be, const WeightFiles& weights,
                                                                 const DitConfig& cfg, int resident_blocks,
                                                                 int64_t pack_min_values = kPackMinValues,
                                                                 const ResidentHook& after_upload = nullptr);

// The same for an APU (pipeline/planner.h, MemoryPlan::dit_from_files): the streamed blocks are
// never copied into pinned host memory, whose pages would be a second copy of the RAM the device
// reads; each pass reads them from the mapped model files through two staging buffers
// (streaming/staging.h, as the text encoder streams), unpacked.
std::unique_ptr<DitWeightSource> make_mapped_streaming_source(Backend& be, const WeightFiles& weights,
                                                               const DitConfig& cfg, int resident_blocks,
                                                               const ResidentHook& after_upload = nullptr);

// What the source allocates on the device, as the memory planner counts it. Sizes that depend
// on which tensors pack (that depends on their values) are bounds the source never exceeds.
struct DitStreamSizes {
  size_t fixed_bytes = 0;    // everything outside the blocks, uploaded tensor by tensor
  size_t block_bytes = 0;    // the largest block resident (its tensors uploaded one by one)
  size_t slot_bytes = 0;     // the largest block's image in a slot (tensors at 256-byte offsets)
  size_t staging_bytes = 0;  // the packed tensors of the largest block, each at its packed_cap
  int blocks = 0;
};
DitStreamSizes dit_stream_sizes(const WeightFiles& weights, int64_t pack_min_values = kPackMinValues);

}  // namespace moss
