#include "server/a1111_lists.h"

#include <sys/sysinfo.h>

#include <nlohmann/json.hpp>

#include "frontend/lora_library.h"
#include "pipeline/sampler.h"
#include "pipeline/schedule.h"

namespace moss {
namespace {

using json = nlohmann::json;

httplib::Server::Handler answer(json body) {
  const std::string text = body.dump();
  return [text](const httplib::Request&, httplib::Response& res) { res.set_content(text, "application/json"); };
}

// A1111's /memory: host memory in bytes; the device's are not reported here (no CUDA in the
// A1111 sense), which A1111 itself says with an "error" entry.
void memory(const httplib::Request&, httplib::Response& res) {
  json ram = {{"error", "not available"}};
  struct sysinfo si = {};
  if (sysinfo(&si) == 0) {
    const double unit = double(si.mem_unit);
    const double total = double(si.totalram) * unit, free = double(si.freeram) * unit;
    ram = {{"free", free}, {"used", total - free}, {"total", total}};
  }
  res.set_content(json{{"ram", ram}, {"cuda", {{"error", "device memory is not reported by this server"}}}}.dump(),
                  "application/json");
}

// The samplers as A1111 lists them: its label as the name, its k-diffusion alias and ComfyUI's
// name as aliases (each is accepted as sampler_name).
json sampler_list() {
  json list = json::array();
  for (const SamplerName& n : sampler_names()) {
    json aliases = json::array();
    if (*n.alias) aliases.push_back(n.alias);
    aliases.push_back(n.name);
    list.push_back({{"name", n.label}, {"aliases", aliases}, {"options", json::object()}});
  }
  return list;
}

// The schedules as A1111 lists them: "automatic" is the MOSS-Image schedule.
json schedule_list() {
  json list = json::array();
  for (const ScheduleName& n : schedule_names()) {
    const bool moss = n.schedule == Schedule::Moss;
    list.push_back({{"name", moss ? "automatic" : n.name}, {"label", n.label},
                    {"aliases", moss ? json::array({"moss"}) : json(nullptr)},
                    {"default_rho", n.schedule == Schedule::Karras ? 7 : -1}, {"need_inner_model", false}});
  }
  return list;
}

}  // namespace

void install_a1111_lists(GuardedServer& s, LoraLibrary* loras) {
  // A1111 lists "None" first (no upscaling), which SillyTavern's list keeps at index 0.
  s.Get("/sdapi/v1/upscalers", answer(json::array({{{"name", "None"}, {"model_name", nullptr},
                                                    {"model_path", nullptr}, {"model_url", nullptr},
                                                    {"scale", 4}}})));
  if (loras) {
    s.Get("/sdapi/v1/loras", [loras](const httplib::Request&, httplib::Response& res) {
      res.set_content(loras->a1111_list().dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    });
    s.Post("/sdapi/v1/refresh-loras", [loras](const httplib::Request&, httplib::Response& res) {
      loras->rescan();
      res.set_content("null", "application/json");
    });
  } else {
    s.Get("/sdapi/v1/loras", answer(json::array()));
    s.Post("/sdapi/v1/refresh-loras", answer(nullptr));
  }
  for (const char* list : {"latent-upscale-modes", "sd-vae", "sd-modules", "prompt-styles",
                           "face-restorers", "hypernetworks", "realesrgan-models"})
    s.Get(std::string("/sdapi/v1/") + list, answer(json::array()));
  s.Get("/sdapi/v1/embeddings", answer({{"loaded", json::object()}, {"skipped", json::object()}}));
  s.Get("/sdapi/v1/memory", memory);
  // The flags clients read: the API is on, there is no Gradio UI, no Gradio login; the folders a
  // client might browse are not given (nothing of the server's disk is shown).
  s.Get("/sdapi/v1/samplers", answer(sampler_list()));
  s.Get("/sdapi/v1/schedulers", answer(schedule_list()));
  s.Get("/sdapi/v1/cmd-flags", answer({{"api", true}, {"nowebui", true}, {"gradio_auth", nullptr},
                                       {"data_dir", ""}, {"models_dir", ""}, {"ckpt_dir", nullptr},
                                       {"lora_dir", ""}, {"embeddings_dir", ""}, {"hypernetwork_dir", ""},
                                       {"lowvram", false}, {"medvram", false}, {"no_half", false}}));
  for (const char* refresh : {"refresh-checkpoints", "refresh-vae"})
    s.Post(std::string("/sdapi/v1/") + refresh, answer(nullptr));
  // A client's "free the GPU" and "load it again" (the Photoshop plugin's, AIYA's): the model
  // stays loaded (one model per server), which the next request finds as the client expects.
  for (const char* checkpoint : {"unload-checkpoint", "reload-checkpoint"})
    s.Post(std::string("/sdapi/v1/") + checkpoint, answer(json::object()));
  s.Post("/sdapi/v1/skip", answer(json::object()));
  s.Get("/internal/ping", answer(json::object()));
}

}  // namespace moss
