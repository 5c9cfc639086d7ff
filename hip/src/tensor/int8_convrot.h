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

// The group size of a layer's comfy_quant record (its bytes as text), as ComfyUI reads it: the
// keys at the top level or inside a "params" object, convrot_groupsize 256 when absent. `where`
// names the record in messages. Refused (moss::Error): exit 2 for what this engine does not run,
// named (a format other than int8_tensorwise, such as convrot_w4a4 or float8_e4m3fn; an
// int8_tensorwise layer without convrot); exit 1 for a malformed record (not a JSON object, no
// format, a group size that is not a power of 4).
int64_t comfy_quant_group(const std::string& record, const std::string& where);

}  // namespace moss::convrot
