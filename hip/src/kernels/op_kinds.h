// Kinds of an op's variant that the op interface names and the kernels implement: defined here,
// on the kernels' floor, so that kernels need not include the op interface above them
// (docs/architecture.md, the layer order).
#pragma once

namespace moss {

enum class NormWeight { None, Mul, OnePlus };        // y·w, y·(1+w) (Qwen's zero-centred norms)
enum class GatedUnit { Situ, SwiGlu, SigmoidGate };  // see CoreOps::gated_unit

}  // namespace moss
