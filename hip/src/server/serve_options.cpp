#include "server/serve_options.h"

#include <cctype>

#include "server/cors.h"
#include "util/ascii_case.h"
#include "util/error.h"

namespace moss {

std::string serve_help_text() {
  return "usage: moss-infer-hip serve --model DIR [--host 127.0.0.1] [--port 7860] [options]\n\n"
         "An HTTP server that loads the model once and speaks the AUTOMATIC1111 web API's\n"
         "txt2img subset (POST /sdapi/v1/txt2img, GET /sdapi/v1/progress, POST /sdapi/v1/interrupt,\n"
         "GET /sdapi/v1/sd-models, /samplers, /schedulers, GET/POST /sdapi/v1/options).\n"
         "Point a frontend at http://HOST:PORT (its A1111 API setting).\n"
         "The model: --model DIR or an all-in-one FILE, or single files (--diffusion-model, --text-encoder,\n"
         "--vae, --tokenizer, --model-config; docs/model_files.md), as on the command line.\n\n"
         "  --host ADDR   address to listen on (0.0.0.0: every interface)      default: 127.0.0.1\n"
         "  --port N      TCP port                                              default: 7860\n"
         "  --device N[,N...] | all   one engine per device, one queue          default: first supported\n"
         "  --queue N     requests that may wait for a busy engine; more: 503   default: 16\n"
         "  --drain-seconds S   after SIGTERM, how long running and queued requests\n"
         "                may take before they are stopped (then exit 143)      default: 60\n"
         "Routes for deployments: GET /health, GET /ready (503 while draining or full), GET /metrics\n"
         "(Prometheus). SIGTERM drains (no new requests; exit 0 when done and none has come for 2 s);\n"
         "a second SIGTERM, SIGINT or SIGHUP stops at once (exit 143 / 130 / 129).\n"
         "  --sampler-fallback euler   run requests for samplers and schedulers this engine\n"
         "                does not have (LMS, PLMS, kl_optimal, ...; docs/samplers.md lists those it\n"
         "                has) as Euler with the MOSS-Image schedule, saying so in their info;\n"
         "                default: refused (422)\n"
         "  --cors-origin ORIGIN   answer browser preflights from ORIGIN, scheme://host[:port]\n"
         "                (repeatable; * for any); default: no CORS headers, and a page of\n"
         "                another origin may not POST here\n"
         "  --allowed-host NAME    a host name clients may reach this server by, besides its\n"
         "                addresses, localhost and --host (repeatable; * for any); other\n"
         "                Host headers are refused 421 (DNS rebinding)\n"
         "  --api-auth USER:PASS[,USER:PASS...]   require HTTP Basic credentials (or\n"
         "                Authorization: Bearer PASS) on every route but /health and /metrics\n"
         "  --api-auth-file FILE   the same, one USER:PASS a line (# comments)\n"
         "  --metrics-auth  /metrics needs the credentials too\n"
         "  --steps, --cfg, --shift, --seed, --size, --skip-layers, --max-seq, --negative, ...:\n"
         "                the defaults of requests that do not set them (see moss-infer-hip --help);\n"
         "                without --seed a request without a seed draws a random one\n"
         "  --vram-budget, --quiet, --progress json, --no-metadata: as for one run\n"
         "  --help, -h    this text\n";
}

namespace {

// An --allowed-host value is a host name as a Host header carries it, without a port.
std::string allowed_host_refusal(const std::string& value) {
  if (value == "*") return "";
  if (value.empty()) return "empty (give a host name, such as moss.example.org)";
  for (char c : value)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'))
      return "a host name has only letters, digits, '.', '-' and '_' (no scheme, port or path)";
  return "";
}

}  // namespace

ServeOptions parse_serve_args(const std::vector<std::string>& args) {
  ServeOptions s;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    const size_t eq = name.rfind("--", 0) == 0 ? name.find('=') : std::string::npos;
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "--help" || name == "-h") {
      s.help = true;
      return s;
    }
    if (name == "--metrics-auth") {
      if (inline_value) throw usage_error("--metrics-auth takes no value");
      s.guard.metrics_auth = true;
      continue;
    }
    if (name == "--host" || name == "--port" || name == "--queue" || name == "--drain-seconds" ||
        name == "--sampler-fallback" || name == "--cors-origin" || name == "--allowed-host" || name == "--api-auth" ||
        name == "--api-auth-file") {
      if (!inline_value) {
        if (i + 1 >= args.size()) throw usage_error(name + " needs a value");
        value = args[++i];
      }
      if (name == "--host") {
        if (value.empty()) throw usage_error("--host: empty address");
        s.host = value;
      } else if (name == "--port") {
        s.port = int(parse_int_option("--port", value, 1, 65535));
      } else if (name == "--queue") {
        s.queue = int(parse_int_option("--queue", value, 0, 1024));
      } else if (name == "--drain-seconds") {
        s.drain_seconds = int(parse_int_option("--drain-seconds", value, 0, 86400));
      } else if (name == "--sampler-fallback") {
        if (value != "euler") throw usage_error("--sampler-fallback '" + value + "': the one fallback is euler");
        s.sampler_fallback = true;
      } else if (name == "--cors-origin") {
        if (value.empty()) throw usage_error("--cors-origin: empty origin (give http://HOST:PORT, or *)");
        const std::string why = cors_origin_refusal(value);
        if (!why.empty()) throw usage_error("--cors-origin '" + value + "': " + why);
        s.cors_origins.push_back(value);
      } else if (name == "--allowed-host") {
        const std::string why = allowed_host_refusal(value);
        if (!why.empty()) throw usage_error("--allowed-host '" + value + "': " + why);
        s.guard.allowed_hosts.push_back(ascii_lowercase(value));
      } else if (name == "--api-auth") {
        s.guard.credentials.add_list(value, "--api-auth");
      } else {
        if (value.empty()) throw usage_error("--api-auth-file: empty path");
        s.guard.credentials.add_file(value);
      }
      continue;
    }
    for (const char* refused : {"-o", "--latent-out", "--batch-count", "--jobs", "--from-png", "--replay",
                                "--prompt-file", "--negative-file", "--list-devices", "--version"})
      if (name == refused)
        throw usage_error("serve: " + name + " does not apply to the server (requests say what to make)");
    rest.push_back(args[i]);
  }
  // parse_args checks everything else, as the defaults of requests (which bring their prompts).
  s.run = parse_args(rest, ArgsFor::Serve).run;
  s.guard.listen_host = s.host;
  s.guard.cors_origins = s.cors_origins;
  return s;
}

}  // namespace moss
