// How the AMD attention rounds a softmax probability to bf16 (attention_device.h probability_bf16),
// as bits, with no device header, so that host tests replay the very formula. gfx11 and gfx12 have
// no f32 -> bf16 convert instruction, and the general rounding (to_bf16: to nearest even, with a NaN
// path) takes five VALU instructions a value; a probability is finite and >= 0 (or 0 for a masked
// key), so adding half a bf16 ulp (0x8000) and keeping the high half rounds it to nearest, ties away
// from zero: one add a value, the same bits as to nearest even except on an exact tie (the low 16
// bits 0x8000 below an even bf16), where it rounds up. Infinity stays infinite; a quiet NaN whose
// payload's low 16 bits are not all ones (v_exp_f32's 0x7fc00000) stays a NaN.
#pragma once

#include <cstdint>

namespace moss {
namespace probability_rounding {

constexpr uint16_t bf16_bits_half_up(uint32_t f32_bits) { return uint16_t((f32_bits + 0x8000u) >> 16); }

}  // namespace probability_rounding
}  // namespace moss
