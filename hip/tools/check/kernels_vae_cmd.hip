// moss-check kernels-vae: the VAE's GPU path against the host replays, on a real GPU (the H200 for the
// NVIDIA build). Prints one table row per case (kernel, shape, relative L2, max error, ms,
// TFLOP/s or GB/s) and "N passed, M failed"; exit status 0 only if all passed.
//
//   moss-check kernels-vae [--device N] [--data DIR] [--filter WORD]
//     DIR: hip/tests/data (the default, from the repo root); --filter runs only the sections whose
//     name contains WORD (e.g. "decode": the tiny decoder and the timed 1024/2048 decodes).
//
// Sections:
//   1. group_norm_stats, conv2d (f16 on NVIDIA, the decode's choice there, within 2e-3; bf16x3, AMD's
//      choice, within 1e-4; plain bf16 within 1e-2),
//      batch-norm unpatchify, map <-> tokens: the small decoder's real shapes (convolutions at a
//      256x256 output), odd sizes, and three full 1024x1024 convolutions (timed; the host replays
//      bands of output rows);
//   2. the mid-block attention (tools/check/cases/attention_cases.h, model "vae") and its projections
//      through CoreOps::linear with f32 weights;
//   3. the tiny model's whole decode on the HIP backend against golden_vae.safetensors;
//   4. 1024x1024 and 2048x2048 decodes with random weights of the small decoder's shapes: time,
//      and device memory above the weights (limit 1.6 GiB per 1024² of image).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "cases/attention_cases.h"
#include "cases/vae_decoder_cases.h"
#include "cases/vae_kernel_cases.h"
#include "kernel_check.h"
#include "ops/hip/hip_backend.h"
#include "ops/hip/vae_ops_hip.h"
#include "subcommand.h"

namespace {

std::string g_filter;  // --filter: run only the sections whose name contains it

// Runs one section; an exception fails it (one row) and the next section still runs.
void section(kcheck::Table& table, const char* name, const std::function<void()>& body) {
  if (std::string(name).find(g_filter) == std::string::npos) return;
  std::printf("-- %s\n", name);
  std::fflush(stdout);
  try {
    body();
  } catch (const std::exception& e) {
    std::printf("%-28s FAIL: %s\n", name, e.what());
    table.failed++;
  }
}

int run(int argc, char** argv) {
  int device = 0;
  std::string data = "hip/tests/data";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) device = std::atoi(argv[++i]);
    else if (a == "--data" && i + 1 < argc) data = argv[++i];
    else if (a == "--filter" && i + 1 < argc) g_filter = argv[++i];
    else {
      std::fprintf(stderr, "usage: moss-check kernels-vae [--device N] [--data DIR] [--filter WORD]\n");
      return 2;
    }
  }
  auto host = moss::make_host_backend();
  kcheck::Table table;
  {
    auto be = moss::make_hip_backend(device);
    moss::HipContext& ctx = *moss::hip_context_of(*be);
    std::printf("device %d: %s (%d multiprocessors)\n", device, be->name().c_str(), ctx.multiprocessors());
    auto x3 = moss::make_hip_vae_ops(ctx, moss::ConvPrecision::Bf16x3);
    auto bf16 = moss::make_hip_vae_ops(ctx, moss::ConvPrecision::Bf16);
    std::unique_ptr<moss::VaeOps> f16;
    if (moss::conv_precision_supported(moss::ConvPrecision::F16))
      f16 = moss::make_hip_vae_ops(ctx, moss::ConvPrecision::F16);
    vae_check::Env env{table, *be, ctx, host->vae(), *x3, *bf16, f16.get()};
    section(table, "group_norm_stats", [&] { vae_check::check_group_norm_stats_cases(env); });
    section(table, "conv2d", [&] { vae_check::check_conv_cases(env); });
    section(table, "unpatchify, tokens", [&] { vae_check::check_layout_cases(env); });
    section(table, "attention (G2)", [&] { check_attention_cases(table, ctx, *host, "vae"); });
    section(table, "projections (G1)", [&] { vae_check::check_projection_cases(table, *be, ctx, *host); });
    section(table, "tiny decoder", [&] { vae_check::check_tiny_decoder(table, *be, data); });
  }
  section(table, "1024x1024 decode", [&] { vae_check::check_decode_memory(table, device, 1024); });
  section(table, "2048x2048 decode", [&] { vae_check::check_decode_memory(table, device, 2048); });
  return table.finish();
}

}  // namespace

static int kernels_vae_main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moss-check kernels-vae: %s\n", e.what());
    return 1;
  }
}

CHECK_SUBCOMMAND_MAIN("kernels-vae", "[--device N] [--data DIR] [--filter WORD]", kernels_vae_main);
