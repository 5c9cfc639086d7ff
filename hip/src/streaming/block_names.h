// The one parser of block names. Both streamed models name a block's tensors
// "<prefix>layers.N.<rest>": the text encoder under its checkpoint prefix ("language_model." or
// "model.language_model."), the DiT with none. The streamers, their size reports and the
// planner all split tensors into blocks through this function, so they agree on what a block is.
#pragma once
#include <string>

namespace moss {

// "<prefix>layers.N.<rest>" -> N; any other name (outside the blocks, or N not a decimal number
// followed by a dot) -> -1.
int block_index(const std::string& name, const std::string& prefix = "");

// "<prefix>layers.N.", the head of block N's tensor names.
std::string block_head(const std::string& prefix, int block);

}  // namespace moss
