// P.V in fp8's values in `moss-check kernels --family dit`, group fp8: CoreOps::quantize_values_fp8
// on the GPU (kernels/attention_fp8_values.hip) against the host body on the same Vᵀ, tolerance 0
// ("differ": the count of differing codes and scales, NaN equal to NaN). The same comparison
// proves the device's e4m3 conversion (kernels/fp8_e4m3_device.h: gfx12's v_cvt_pk_fp8_f32 after
// its clamp, sm_89+'s cvt.rn.satfinite.e4m3x2.f32, the integer definition elsewhere) equal to the
// host's on every code the values reach, subnormals and 448 included (docs/matrix_layouts.md 9).
// Vᵀ's padding columns hold random values, which both must ignore. Shapes: the DiT at 1024x1024
// (3072 channels, 4160 keys, timed), key counts off the padding, few keys, NaN / infinity / zero
// rows, both dtypes.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "../kernel_check.h"
#include "int8_quantized_cases.h"  // random_rows, exact_row
#include "ops/backend.h"
#include "tensor/tensor.h"

namespace fp8_check {

using namespace moss;

struct ValuesSpec {
  int64_t rows, keys;
  DType vt = DType::BF16;
  bool specials = false;
  bool timed = false;
};

inline void values_case(kcheck::Env& e, const ValuesSpec& s) {
  const int64_t pad = CoreOps::transposed_v_keys(s.keys);
  const int8_check::HostDevice vt = int8_check::random_rows(e, s.vt, s.rows, pad, 3.0f, s.specials);
  kcheck::admit(e, {s.rows, pad});
  CoreOps::Fp8Values gpu{e.gpu.alloc(DType::U8, {s.rows, pad}), kcheck::poisoned(e, {s.rows, 1}), s.keys};
  MOSS_HIP_CHECK(hipMemsetAsync(gpu.codes.data, 0x55, size_t(s.rows * pad), e.stream()));  // a skipped code shows
  auto run = [&] { e.gpu.core().quantize_values_fp8(vt.d, s.keys, gpu); };
  run();
  CoreOps::Fp8Values host{host_tensor(DType::U8, {s.rows, pad}), host_tensor(DType::F32, {s.rows, 1}), s.keys};
  e.host.core().quantize_values_fp8(vt.h, s.keys, host);
  const Tensor codes = e.gpu.download(gpu.codes), scale = e.gpu.download(gpu.scale);
  int64_t differ = 0;
  for (int64_t r = 0; r < s.rows; ++r) {
    const float a = scale.ptr<const float>()[r], b = host.scale.ptr<const float>()[r];
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    if (!(std::isnan(a) && std::isnan(b)) && ua != ub) {
      if (!differ) std::printf("  quantize_values_fp8: scale of row %lld: got %.9g, want %.9g\n", (long long)r, a, b);
      ++differ;
    }
  }
  for (int64_t i = 0; i < s.rows * pad; ++i) {
    const uint8_t a = codes.ptr<const uint8_t>()[i], b = host.codes.ptr<const uint8_t>()[i];
    if (a != b) {
      if (!differ)
        std::printf("  quantize_values_fp8: first difference at [%lld, %lld]: got 0x%02x, want 0x%02x\n",
                    (long long)(i / pad), (long long)(i % pad), a, b);
      ++differ;
    }
  }
  const std::string shape = kcheck::shape_of({s.rows, s.keys}) + " vt:" + dtype_name(s.vt) +
                            (s.specials ? " nan/inf/0 rows" : "");
  const double ms = s.timed ? kcheck::time_it(e, run) : 0;
  const double bytes = double(s.rows * pad) * double(dtype_size(s.vt) + 1);
  int8_check::exact_row(e, "quantize_values_fp8", shape, differ, ms, bytes);
  if (s.timed) kcheck::record(e, "quantize_values_fp8", shape, ms, 0, bytes);
}

inline void check_fp8_values(kcheck::Env& e) {
  const kcheck::Op<ValuesSpec> qv{"quantize_values_fp8", values_case};
  constexpr DType F32 = DType::F32, BF16 = DType::BF16;
  kcheck::run_cases(e, {
      qv({3072, 4160, BF16, false, true}),  // the DiT at 1024x1024: 24 heads x 128 channels, 4160 keys, timed
      qv({40, 4160, F32}),                  // f32 Vᵀ
      qv({33, 1, BF16}),                    // one key
      qv({17, 65, F32, true}),              // one past the padding; NaN, inf, 0 rows
      qv({9, 130, BF16, true}),             // bf16 with specials
      qv({64, 4096, BF16}),                 // keys exactly a multiple of the padding
  });
}

}  // namespace fp8_check
