// Where the DiT's weights live during a run (product.md section 5): the fixed part
// (embedders, modulations, the text embedder, the head) and the first `resident_blocks` main
// blocks are copied to the device once; every other block lives in pinned host memory and is
// copied, each pass, into one of two device slots on the copy stream while the block before it
// computes. Streamed blocks take the slots in turn, across passes too; a block's copy waits for
// the compute that last read its slot, and its compute waits for its copy. The last block of a
// pass starts the copy of the next pass's first one (a sampler's steps run the same blocks), so
// the copy engine does not idle between steps. Streaming changes where the weights are, never
// what is computed: the result equals the resident run bit for bit.
#pragma once
#include <memory>

#include "model/dit.h"
#include "model/dit_weights.h"

namespace moss {

std::unique_ptr<DitWeightSource> make_resident_streaming_source(Backend& be, const WeightFiles& weights,
                                                                 const DitConfig& cfg, int resident_blocks);

}  // namespace moss
