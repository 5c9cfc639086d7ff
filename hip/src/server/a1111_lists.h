// The A1111 routes clients probe when they connect, answered as an A1111 server without these
// features answers them: empty lists (upscalers but "None", VAEs, modules, LoRAs, styles, face
// restorers, latent upscale modes), embeddings {"loaded": {}, "skipped": {}}, memory, cmd-flags,
// /samplers and /schedulers (every sampler and schedule the engine runs, with A1111's names and
// aliases), the refresh routes (nothing to rescan: one model per server), POST /skip (accepted; there is
// no next image of a batch to skip to early, /interrupt stops a request) and GET /internal/ping.
// Without them a client stops at its first 404 (SillyTavern's upscaler and VAE lists).
#pragma once
#include "server/guarded_server.h"

namespace moss {

class LoraLibrary;

// `loras`: serve --lora-dir's LoRAs (GET /sdapi/v1/loras lists them, POST /refresh-loras rescans);
// null: an empty list.
void install_a1111_lists(GuardedServer& server, LoraLibrary* loras = nullptr);

}  // namespace moss
