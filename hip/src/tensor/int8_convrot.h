// INT8 ConvRot, the arithmetic of the format (docs/int8_convrot.md sections 2-4): the block
// Hadamard rotation over groups of G input features, the per-row int8 quantization that both the
// offline weights and the run-time activations go through, and the comfy_quant record. Plain
// C++, fp32, in the operation order the document fixes, so the host op (ops/host), the quantize
// command (model/quantize_dit.h) and the PyTorch reference (bench/int8_convrot_ref.py) agree to
// the bit, and the GPU kernels to come have one definition to replay.
#pragma once
#include <cstdint>
#include <string>

namespace moss::convrot {

constexpr int64_t kDefaultGroupSize = 256;  // the published files' group
constexpr float kScaleFloor = 1e-30f;       // an all-zero row's scale (ComfyUI's)

// G is a power of 4 and at least 4 (4, 16, 64, 256, ...).
bool valid_group_size(int64_t g);

// In place: every contiguous run of g values of x[0, n) multiplied by H_g, the normalised
// Kronecker power of H4 = [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]] / 2 (symmetric and
// orthogonal). Radix-4 stages over the index's base-4 digits, lowest first; each output is
// 0.5 * (the H4 row's signed sum, added left to right). Requires valid_group_size(g), n % g == 0.
void rotate_groups(float* x, int64_t n, int64_t g);

// One row: s = max(absmax(v) * fl(1/127), kScaleFloor); q[i] = nearbyint(v[i] / s) (half to even)
// clamped to [-128, 127]. Returns s. A row holding a NaN or an infinity returns NaN and writes
// zeros, so that whatever the row feeds is NaN rather than a silently clamped value.
float quantize_row(const float* v, int64_t n, int8_t* q);

// The comfy_quant record of a layer of this format with group g, spelled as Python's json.dumps
// writes it: {"format": "int8_tensorwise", "convrot": true, "convrot_groupsize": 256}
std::string comfy_quant_json(int64_t g);

}  // namespace moss::convrot
