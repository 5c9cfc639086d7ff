#include "server/serve_options.h"

#include "util/error.h"

namespace moss {

std::string serve_help_text() {
  return "usage: moss-infer-hip serve --model DIR [--host 127.0.0.1] [--port 7860] [options]\n\n"
         "An HTTP server that loads the model once and speaks the AUTOMATIC1111 web API's\n"
         "txt2img subset (POST /sdapi/v1/txt2img, GET /sdapi/v1/progress, POST /sdapi/v1/interrupt,\n"
         "GET /sdapi/v1/sd-models, /samplers, /schedulers, GET/POST /sdapi/v1/options).\n"
         "Point a frontend at http://HOST:PORT (its A1111 API setting).\n\n"
         "  --host ADDR   address to listen on (0.0.0.0: every interface)      default: 127.0.0.1\n"
         "  --port N      TCP port                                              default: 7860\n"
         "  --device N[,N...] | all   one engine per device, one queue          default: first supported\n"
         "  --queue N     requests that may wait for a busy engine; more: 503   default: 16\n"
         "  --drain-seconds S   after SIGTERM, how long running and queued requests\n"
         "                may take before they are stopped (then exit 143)      default: 60\n"
         "Routes for deployments: GET /health, GET /ready (503 while draining or full), GET /metrics\n"
         "(Prometheus). SIGTERM drains (no new requests; exit 0 when done); a second SIGTERM, SIGINT\n"
         "or SIGHUP stops at once (exit 143 / 130 / 129).\n"
         "  --steps, --cfg, --shift, --seed, --size, --skip-layers, --max-seq, --negative, ...:\n"
         "                the defaults of requests that do not set them (see moss-infer-hip --help)\n"
         "  --vram-budget, --quiet, --progress json, --no-metadata: as for one run\n";
}

ServeOptions parse_serve_args(const std::vector<std::string>& args) {
  ServeOptions s;
  std::vector<std::string> rest;
  bool prompt_given = false;
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
    if (name == "--host" || name == "--port" || name == "--queue" || name == "--drain-seconds") {
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
      } else {
        s.drain_seconds = int(parse_int_option("--drain-seconds", value, 0, 86400));
      }
      continue;
    }
    for (const char* refused : {"-o", "--latent-out", "--batch-count", "--jobs", "--from-png", "--replay",
                                "--prompt-file", "--negative-file", "--list-devices", "--version"})
      if (name == refused)
        throw usage_error("serve: " + name + " does not apply to the server (requests say what to make)");
    prompt_given = prompt_given || name == "--prompt";
    rest.push_back(args[i]);
  }
  // parse_args checks everything else; a default prompt and a placeholder output satisfy its
  // rules for a run (a request brings its prompt; the server writes no file).
  if (!prompt_given) rest.insert(rest.end(), {"--prompt", ""});
  rest.insert(rest.end(), {"-o", "placeholder.png"});
  s.run = parse_args(rest).run;
  s.run.output_png.clear();
  s.request_defaults = generation_flags(s.run);
  return s;
}

}  // namespace moss
