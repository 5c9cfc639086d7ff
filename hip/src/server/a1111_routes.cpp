#include "server/a1111_routes.h"

#include <new>

#include "frontend/a1111_request.h"
#include "server/a1111_lists.h"
#include "server/base64.h"
#include "server/connection_watch.h"
#include "util/cancel.h"
#include "server/cors.h"
#include "server/error_body.h"
#include "server/png_info_route.h"

namespace moss {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void reply_error(httplib::Response& res, int status, const std::string& message, const std::string& field = "") {
  json body = {{"error", message}, {"detail", message}};
  if (!field.empty()) body["field"] = field;
  reply(res, status, body);
}

const char* status_text(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    default: return "Error";
  }
}

// What a 503 tells a client (and a balancer) to wait before sending the request again.
constexpr int kRetryAfterSeconds = 1;

}  // namespace

A1111Routes::A1111Routes(EnginePool& pool, GenerationQueue& queue, Metrics& metrics, const ServeOptions& options,
                         const Reporter& rep)
    : pool_(pool), engine_(pool.engine(0)), queue_(queue), metrics_(metrics), options_(options), rep_(rep),
      loras_(options.run.lora_dir.empty() ? nullptr : std::make_unique<LoraLibrary>(options.run.lora_dir)) {}

void A1111Routes::install(GuardedServer& s) {
  s.Post("/sdapi/v1/txt2img", [this](const httplib::Request& req, httplib::Response& res) { txt2img(req, res); });
  s.Get("/sdapi/v1/progress", [this](const httplib::Request&, httplib::Response& res) { progress(res); });
  s.Post("/sdapi/v1/interrupt", [this](const httplib::Request&, httplib::Response& res) { interrupt(res); });
  s.Get("/sdapi/v1/sd-models", [this](const httplib::Request&, httplib::Response& res) {
    // The folder's own name: a client learns nothing of where the model lives ("DIR/" too).
    const std::string name = model_folder_name(engine_.model_folder());
    reply(res, 200, json::array({{{"title", engine_.model_identity()}, {"model_name", name}, {"hash", nullptr},
                                  {"sha256", nullptr}, {"filename", name}, {"config", nullptr}}}));
  });
  s.Get("/sdapi/v1/scripts", [](const httplib::Request&, httplib::Response& res) {
    reply(res, 200, {{"txt2img", json::array()}, {"img2img", json::array()}});
  });
  s.Get("/sdapi/v1/options",
        [this](const httplib::Request&, httplib::Response& res) { reply(res, 200, options_json()); });
  s.Post("/sdapi/v1/options", [this](const httplib::Request& req, httplib::Response& res) { set_options(req, res); });
  install_a1111_lists(s, loras_.get());
  install_png_info(s);
  install_cors(s, options_.cors_origins);
  // Anything else, and the library's own refusals (405, 413 for a body above the limit), as JSON
  // in the dialect of the path's clients (server/error_body.h).
  // (No status number in the message: the clients print the status before it.)
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = status_text(res.status);
    if (res.status == 404) message += ": " + req.method + " " + req.path + " is no route of this server (docs/server.md)";
    reply(res, res.status, error_body(req.path, res.status, message));
  });
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    reply(res, 500, error_body(req.path, 500, what));
  });
}

A1111Settings A1111Routes::settings() const {
  return a1111_settings(engine_.model_identity(), model_folder_name(engine_.model_folder()),
                        !options_.run.no_metadata);
}

json A1111Routes::options_json() const { return settings().values; }

void A1111Routes::set_options(const httplib::Request& req, httplib::Response& res) const {
  json body;
  try {
    body = parse_request_json(req.body);
  } catch (const RequestError& e) {
    return reply_error(res, e.status, e.what());
  }
  if (!body.is_object()) return reply_error(res, 400, "the body must be a JSON object");
  const A1111Settings current = settings();
  for (const auto& [key, value] : body.items()) {
    const std::string why = setting_refusal(current, key, value);
    if (!why.empty()) return reply_error(res, 422, why, key);
  }
  reply(res, 200, nullptr);
}

A1111Request A1111Routes::read_request(const json& body, const char* route) const {
  A1111Request request;
  try {
    RequestContext context;
    context.defaults = options_.run;
    context.settings = settings();
    context.sampler_fallback = options_.sampler_fallback;
    context.loras = loras_.get();
    request = parse_a1111_request(body, context);
    for (const GenerationRequest& r : request.images) {
      try {
        engine_.check(r);
      } catch (const Error& e) {
        throw request_error(e);
      }
    }
  } catch (const RequestError& e) {
    // The operator sees every refusal (a client may show none of it: Open WebUI does not); the
    // client's text in it is escaped by the Reporter, as on every log line.
    const bool sampler = e.field == "sampler_name" || e.field == "sampler_index" || e.field == "scheduler";
    rep_.line("%s: refused (%d): %s%s%s", route, e.status, e.what(), sampler ? "; " : "",
              sampler ? kSamplerFallbackHint : "");
    throw;
  }
  if (!request.sampler_note.empty()) rep_.line("%s: %s", route, request.sampler_note.c_str());
  if (!request.lora_note.empty()) rep_.line("%s: %s", route, request.lora_note.c_str());
  return request;
}

A1111Routes::Generated A1111Routes::generate(const httplib::Request& req, const A1111Request& request,
                                             const char* route) {
  Generated out;
  ConnectionWatch watch(req.remote_addr, req.remote_port, req.local_addr, req.local_port);
  auto job = std::make_shared<Job>();
  job->client_gone = [&] { return watch.client_gone(); };
  job->work = [&](size_t engine) { make_images(*job, engine, request.images, out.made); };
  std::string failure_message;
  GenerationQueue::Outcome outcome = GenerationQueue::Outcome::Ran;
  bool client_gone = false;
  try {
    outcome = queue_.run(job);
  } catch (const JobCancelled&) {
    client_gone = true;
  } catch (const Cancelled&) {
    // Stopped inside a step (util/cancel.h): an interrupt before any step ended (nothing to
    // decode: the answer has the images already made), or the client went away.
    client_gone = !job->interrupted;
  } catch (const Error& e) {
    // A signal stops the server; a usage error is this request's (a size the memory cannot hold).
    out.status = int(e.code()) >= 128 ? 503 : e.code() == ExitCode::Usage ? 422 : 500;
    failure_message = int(e.code()) >= 128 ? std::string("the server is stopping: ") + e.what() : e.what();
  } catch (const std::bad_alloc&) {
    out.status = 500;
    failure_message = "out of host memory";
  } catch (const std::exception& e) {
    out.status = 500;
    failure_message = e.what();
  }
  // Refused before it ran: the client (or a balancer) may send it again, here later or elsewhere.
  if (outcome == GenerationQueue::Outcome::Full || outcome == GenerationQueue::Outcome::Closed) {
    out.status = 503;
    out.retry_after = true;
    out.message = outcome == GenerationQueue::Outcome::Full
                      ? "busy: " + std::to_string(queue_.capacity()) + " requests are already waiting"
                      : std::string("the server is draining or stopping: send it elsewhere");
    return out;
  }
  if (outcome == GenerationQueue::Outcome::ClientGone || client_gone) {
    rep_.line("%s: the client went away; its request stopped", route);
    out.status = 499;
    out.message = "the client closed the connection";
    return out;
  }
  if (out.status == 503) out.retry_after = true;
  if (out.status != 200) {
    rep_.line("%s: %d %s", route, out.status, failure_message.c_str());
    out.message = failure_message;
    if (out.status == 422) {
      const RequestError e = request_error(usage_error(failure_message));
      out.message = e.what();
      out.field = e.field;
    }
    return out;
  }
  out.interrupted = job->interrupted;
  out.timestamp = job->progress.timestamp;
  rep_.line("%s: %zu of %zu images%s", route, out.made.size(), request.images.size(),
            out.interrupted ? " (interrupted)" : "");
  return out;
}

void A1111Routes::txt2img(const httplib::Request& req, httplib::Response& res) {
  A1111Request request;
  try {
    request = read_request(parse_request_json(req.body), "txt2img");
  } catch (const RequestError& e) {
    return reply_error(res, e.status, e.what(), e.field);
  }
  const Generated g = generate(req, request, "txt2img");
  if (g.retry_after) res.set_header("Retry-After", std::to_string(kRetryAfterSeconds));
  if (g.status != 200) return reply_error(res, g.status, g.message, g.field);
  const std::vector<GeneratedImage>& made = g.made;
  const bool interrupted = g.interrupted;

  // The answer A1111 gives: base64 PNGs, the request's parameters, and info as JSON text.
  json images = json::array(), infotexts = json::array(), seeds = json::array(), records = json::array();
  for (const GeneratedImage& g : made) {
    if (request.send_images) images.push_back(base64_encode(g.png));
    infotexts.push_back(a1111_parameters(g.record));
    seeds.push_back(g.record.request.seed);
    records.push_back(json::parse(record_json(g.record)));
  }
  const GenerationRequest& first = request.images.front();
  json& params = request.parameters;
  const json prompts(made.size(), first.prompt), negatives(made.size(), first.negative);
  json info = {{"prompt", first.prompt}, {"all_prompts", prompts}, {"negative_prompt", first.negative},
               {"all_negative_prompts", negatives}, {"seed", first.seed}, {"all_seeds", seeds},
               {"subseed", -1}, {"all_subseeds", json(made.size(), -1)}, {"subseed_strength", 0},
               {"width", first.output_width()}, {"height", first.output_height()}, {"sampler_name", first.sampler_label},
               {"scheduler", first.scheduler == "moss" ? "automatic" : first.scheduler}, {"cfg_scale", first.cfg}, {"steps", first.steps},
               {"batch_size", request.batch_size}, {"restore_faces", false},
               {"sd_model_name", engine_.model_identity()},
               {"sd_model_hash", made.empty() || made.front().record.model_files.empty()
                                    ? json(nullptr)
                                    : json(made.front().record.model_files[0].hash)},  // the DiT file's
               {"seed_resize_from_w", -1}, {"seed_resize_from_h", -1}, {"denoising_strength", 0},
               {"extra_generation_params",
                {{"Shift", first.shift}, {"Skip layers", first.skip_layers_text}, {"Max seq", first.max_seq}}},
               {"index_of_first_image", 0}, {"infotexts", infotexts}, {"styles", json::array()},
               {"job_timestamp", g.timestamp}, {"clip_skip", 1}, {"is_using_inpainting_conditioning", false},
               {"version", engine_version()}, {"interrupted", interrupted}, {"generation", records}};
  if (!request.lora_note.empty()) info["lora_note"] = request.lora_note;
  if (!made.empty() && !made.front().record.request.loras.empty()) {
    std::string hashes;  // A1111's "Lora hashes" entry
    for (const LoraChoice& c : made.front().record.request.loras)
      hashes += (hashes.empty() ? "" : ", ") + c.name + ": " + c.hash;
    info["extra_generation_params"]["Lora hashes"] = hashes;
  }
  // What the body asked that changes nothing here (README, "Leniency"): accepted, and said.
  info["not_used"] = request.not_used;
  if (first.output_width() != first.width || first.output_height() != first.height)
    info["size_note"] = "generated at " + std::to_string(first.width) + "x" + std::to_string(first.height) +
                        " (sides are multiples of 16) and centre-cropped to " + std::to_string(first.output_width()) +
                        "x" + std::to_string(first.output_height());
  if (!request.sampler_note.empty()) {
    info["sampler_fallback"] = request.sampler_note;
    info["extra_generation_params"]["Sampler fallback"] = request.sampler_note;
  }
  reply(res, 200, {{"images", images}, {"parameters", params}, {"info", dump(info)}});
}

}  // namespace moss
