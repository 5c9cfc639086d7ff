// `moss-check kernels --family vae`: the VAE's GPU path against the host replays, on a real GPU (the
// H200 for the NVIDIA build). One table row per case (kernel, shape, relative L2, max error, ms,
// TFLOP/s or GB/s).
//
// Groups (--filter; e.g. "decode": the tiny decoder and the timed 1024/2048 decodes):
//   group_norm_stats, conv2d (f16, the decode's choice on both kernel paths, within 2e-3; bf16x3
//      within 1e-4; plain bf16 within 1e-2), "unpatchify, tokens" (batch-norm unpatchify,
//      map <-> tokens): the small decoder's real shapes (convolutions at a 256x256 output), odd
//      sizes, and three full 1024x1024 convolutions (timed; the host replays bands of output rows);
//   "attention (G2)": the mid-block attention (cases/attention_cases.h, model "vae"), and
//   "projections (G1)": its projections through CoreOps::linear with f32 weights;
//   "tiny decoder": the tiny model's whole decode on the HIP backend against golden_vae.safetensors
//      (--data DIR: hip/tests/data by default, from the repo root);
//   "1024x1024 decode", "2048x2048 decode": decodes with random weights of the small decoder's
//      shapes: time, and device memory above the weights (limit 1.6 GiB per 1024² of image).
#include <cstdio>
#include <memory>
#include <string>

#include "cases/attention_cases.h"
#include "cases/vae_decoder_cases.h"
#include "cases/vae_kernel_cases.h"
#include "kernel_check.h"
#include "ops/hip/hip_backend.h"
#include "ops/hip/vae_ops_hip.h"

void kcheck::vae_family(Table& table, const Options& o) {
  if (!o.selects_any({"group_norm_stats", "conv2d", "unpatchify, tokens", "attention (G2)", "projections (G1)",
                      "tiny decoder", "1024x1024 decode", "2048x2048 decode"}))
    return;
  const int device = o.gpu();
  auto host = moss::make_host_backend();
  {
    auto be = moss::make_hip_backend(device);
    moss::HipContext& ctx = *moss::hip_context_of(*be);
    std::printf("moss-check kernels --family vae on device %d: %s (%d multiprocessors)\n", device, be->name().c_str(),
                ctx.multiprocessors());
    auto x3 = moss::make_hip_vae_ops(ctx, moss::ConvPrecision::Bf16x3);
    auto bf16 = moss::make_hip_vae_ops(ctx, moss::ConvPrecision::Bf16);
    auto f16 = moss::make_hip_vae_ops(ctx, moss::ConvPrecision::F16);
    vae_check::Env env{table, *be, ctx, host->vae(), *x3, *bf16, *f16, o.max_elements};
    group(table, o, "vae", "group_norm_stats", [&] { vae_check::check_group_norm_stats_cases(env); });
    group(table, o, "vae", "conv2d", [&] { vae_check::check_conv_cases(env); });
    group(table, o, "vae", "unpatchify, tokens", [&] { vae_check::check_layout_cases(env); });
    group(table, o, "vae", "attention (G2)", [&] { check_attention_cases(table, ctx, *host, "vae", 0, o.max_elements); });
    group(table, o, "vae", "projections (G1)",
          [&] { vae_check::check_projection_cases(table, *be, ctx, *host, o.max_elements); });
    // The goldens live in the source tree: the shipped binary's self-test has none (data empty).
    if (!o.data.empty())
      group(table, o, "vae", "tiny decoder", [&] { vae_check::check_tiny_decoder(table, *be, o.data); });
  }
  // The decodes on a backend of their own (the one above is gone, with its pool): real shapes
  // only, not under a size cap.
  if (o.max_elements > 0) return;
  group(table, o, "vae", "1024x1024 decode", [&] { vae_check::check_decode_memory(table, device, 1024); });
  group(table, o, "vae", "2048x2048 decode", [&] { vae_check::check_decode_memory(table, device, 2048); });
}
