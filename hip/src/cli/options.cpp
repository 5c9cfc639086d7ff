#include "cli/options.h"

#include <algorithm>
#include <map>
#include <set>

#include "pipeline/request_fields.h"
#include "io/files.h"
#include "io/input_text.h"
#include "tokenizer/utf8.h"
#include "util/error.h"
#include "util/numbers.h"

namespace moss {
namespace {

// Spellings of features this engine does not have, with what to say about them. Prefix entries
// end in '*'. Keeping them here makes the refusal name the feature instead of "unknown option".
struct Refusal {
  const char* spelling;
  const char* what;
};
const Refusal kRefused[] = {
    {"--sampling-method", "other samplers under this name (use --sampler NAME)"},
    {"--sample-method", "other samplers under this name (use --sampler NAME)"},
    {"--schedule", "schedules under this name (use --scheduler NAME)"},
    {"--sigmas", "custom sigma schedules"},
    {"--eta", "stochastic samplers"},
    {"--lora-model-dir", "this LoRA option (give --lora FILE[:WEIGHT] once per LoRA)"},
    {"--loras", "this LoRA option (give --lora FILE[:WEIGHT] once per LoRA)"},
    {"--init-image", "img2img"},
    {"--init-img", "img2img"},
    {"--image", "img2img"},
    {"-i", "img2img"},
    {"--mask*", "inpainting"},
    {"--strength", "img2img strength"},
    {"--denoise", "img2img strength"},
    {"--denoising-strength", "img2img strength"},
    {"--hires*", "hires fix"},
    {"--hr-*", "hires fix"},
    {"--upscale*", "hires fix"},
    {"--control*", "control adapters"},
    {"--ref-image*", "reference images"},
    {"--reference*", "reference images"},
    {"-r", "reference images"},
    {"--max-vram", "this memory option (use --vram-budget)"},
    {"--stream-layers", "this memory option (use --vram-budget)"},
    {"--auto-fit", "this memory option (use --vram-budget)"},
    {"--offload*", "this memory option (use --vram-budget)"},
    {"--cpu-offload", "this memory option (use --vram-budget)"},
    {"--backend", "this memory option (use --vram-budget)"},
    {"--params-backend", "this memory option (use --vram-budget)"},
    {"--split-mode", "this memory option (use --vram-budget)"},
    {"--vae-tiling", "this memory option (use --vram-budget)"},
    {"--vae-tile-size", "this memory option (use --vram-budget)"},
    {"--low-vram", "this memory option (use --vram-budget)"},
    {"--lowvram", "this memory option (use --vram-budget)"},
    {"--medvram", "this memory option (use --vram-budget)"},
    {"--resident-blocks", "this memory option (use --vram-budget)"},
    {"--block-swap", "this memory option (use --vram-budget)"},
    {"--mmap", "this memory option (use --vram-budget)"},
    {"--type", "quantized weights (only bf16 weights run: folders, single files, all-in-one checkpoints)"},
    {"--quant*", "quantized weights (only bf16 weights run: folders, single files, all-in-one checkpoints)"},
    {"--int8*", "quantized weights (only bf16 weights run: folders, single files, all-in-one checkpoints)"},
    {"--int4*", "quantized weights (only bf16 weights run: folders, single files, all-in-one checkpoints)"},
    {"--fp8*", "quantized weights (only bf16 weights run: folders, single files, all-in-one checkpoints)"},
    {"--gguf", "GGUF model files (only bf16 safetensors weights run)"},
    {"--teacache*", "lossy accelerators (tier reference only)"},
    {"--cache*", "lossy accelerators (tier reference only)"},
    {"--turbo", "lossy accelerators (tier reference only)"},
    {"--distill*", "lossy accelerators (tier reference only)"},
    {"--sage-attention", "lossy accelerators (tier reference only)"},
    {"--slg-scale", "other skip-layer guidance settings (use --skip-layers)"},
    {"--skip-layer-start", "other skip-layer guidance settings (use --skip-layers)"},
    {"--skip-layer-end", "other skip-layer guidance settings (use --skip-layers)"},
    {"--batch*", "batches in one pass (images are made one at a time: use --batch-count N)"},
};

const Refusal* find_refusal(const std::string& opt) {
  for (const Refusal& r : kRefused) {
    std::string s = r.spelling;
    if (s.back() == '*') {
      s.pop_back();
      if (opt.compare(0, s.size(), s) == 0) return &r;
    } else if (opt == s) {
      return &r;
    }
  }
  return nullptr;
}

Error bad_value(const std::string& opt, const std::string& value, const std::string& why) {
  return usage_error(opt + " '" + value + "': " + why);
}

int64_t parse_int(const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
  const ParsedInt p = parse_strict_int(v, lo, hi);
  if (p.error != NumberError::None) throw bad_value(opt, v, integer_problem(p, lo, hi));
  return p.value;
}

// `range` words the accepted interval for the message ("must be between 0 and 100").
double parse_decimal(const std::string& opt, const std::string& v, double lo, double hi, const std::string& range) {
  const ParsedDecimal p = parse_strict_decimal(v, lo, hi);
  if (p.error == NumberError::NotANumber) throw bad_value(opt, v, "not a decimal number (digits with an optional fraction)");
  if (p.error != NumberError::None) throw bad_value(opt, v, range);
  return p.value;
}

// A request setting from its flag's text (pipeline/request_fields.h); `shown_as` names the flag
// in the message (--size sets --width and --height).
void set_request_field(RunOptions& o, const FieldNames& f, const std::string& value, const std::string& shown_as) {
  try {
    set_field(o, f.field, value);
  } catch (const FieldError& e) {
    throw usage_error(shown_as + e.cli.substr(std::string(f.flag).size()));
  }
}

// A prompt from a file or stdin ("-"): its whole text, less the line ends it closes with.
std::string read_prompt_source(const std::string& opt, const std::string& path) {
  std::string text = read_input_text(opt, path, kPromptFileLimit);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

// --prompt-file and --negative-file stand for --prompt and --negative (their text is read here,
// so every later check sees it); a jobs file's lines bring their own prompts.
void check_prompt_sources(const std::map<std::string, std::string>& seen, RunOptions& o) {
  if (seen.count("--prompt") && !o.prompt_file.empty()) throw usage_error("--prompt and --prompt-file given together");
  if (seen.count("--negative") && !o.negative_file.empty())
    throw usage_error("--negative and --negative-file given together");
  if (!o.jobs_file.empty())
    for (const char* flag : {"--prompt", "--prompt-file", "--batch-count", "--from-png", "--replay"})
      if (seen.count(flag))
        throw usage_error(std::string("--jobs and ") + flag + " given together (each line is a request)");
  int from_stdin = 0;
  for (const std::string* path : {&o.prompt_file, &o.negative_file, &o.jobs_file}) from_stdin += *path == "-";
  if (from_stdin > 1) throw usage_error("stdin (-) can be read by one of --prompt-file, --negative-file, --jobs only");
  if (!o.prompt_file.empty()) o.prompt = read_prompt_source("--prompt-file", o.prompt_file);
  if (!o.negative_file.empty()) o.negative = read_prompt_source("--negative-file", o.negative_file);
}

// The request settings the command line names (by their option, whatever its value): a
// --from-png record supplies the others.
std::set<RequestField> given_settings(const std::map<std::string, std::string>& seen) {
  std::set<RequestField> given;
  for (const FieldNames& f : request_fields())
    if (seen.count(f.flag)) given.insert(f.field);
  if (seen.count("--size")) given.insert({RequestField::Width, RequestField::Height});
  if (seen.count("--prompt-file")) given.insert(RequestField::Prompt);
  if (seen.count("--negative-file")) given.insert(RequestField::Negative);
  return given;
}

// The ModelPaths field a model flag sets, or nullptr for another flag.
std::string* model_path_of(ModelPaths& m, const std::string& flag) {
  if (flag == "--model") return &m.path;
  if (flag == "--diffusion-model") return &m.diffusion_model;
  if (flag == "--text-encoder") return &m.text_encoder;
  if (flag == "--vae") return &m.vae;
  if (flag == "--tokenizer") return &m.tokenizer;
  if (flag == "--model-config") return &m.model_config;
  return nullptr;
}

bool has_suffix(const std::string& s, const std::string& suf) {
  return s.size() > suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

}  // namespace

bool option_takes_value(const std::string& option) {
  // The run's own valued options; the request's settings are pipeline/request_fields.h's flags.
  static const std::set<std::string> kValued = {"--model", "--diffusion-model", "--text-encoder", "--llm", "--vae",
                                                "--tokenizer", "--model-config", "-o", "--latent-out", "--size", "--vram-budget",
                                                "--device", "--batch-count", "--prompt-file", "--negative-file",
                                                "--jobs", "--progress", "--from-png", "--replay", "--lora-dir"};
  return kValued.count(option) > 0 || find_field_by_flag(option) != nullptr;
}

DeviceList parse_device_list(const std::string& opt, const std::string& value) {
  DeviceList list;
  if (value == "all") {
    list.all = true;
    return list;
  }
  size_t start = 0;
  for (;;) {
    const size_t comma = value.find(',', start);
    const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw bad_value(opt, value, "an empty entry: give device indexes separated by commas, or all");
    const int index = int(parse_int(opt, item, 0, 255));
    if (std::find(list.indexes.begin(), list.indexes.end(), index) != list.indexes.end())
      throw bad_value(opt, value, "device " + std::to_string(index) + " is listed twice");
    list.indexes.push_back(index);
    if (comma == std::string::npos) return list;
    start = comma + 1;
  }
}

int64_t parse_int_option(const std::string& opt, const std::string& value, int64_t lo, int64_t hi) {
  return parse_int(opt, value, lo, hi);
}

std::string usage_line() {
  return "usage: moss-infer-hip --model DIR --prompt TEXT (-o FILE.png | --latent-out FILE.npy) [options]\n"
         "       moss-infer-hip --model DIR --jobs FILE.jsonl [-o PATTERN.png] [options]\n"
         "       moss-infer-hip --model DIR --from-png IMAGE.png -o FILE.png [options that override the record]\n"
         "       moss-infer-hip serve --model DIR [--host 127.0.0.1] [--port 7860] [options as request defaults]\n"
         "       moss-infer-hip inspect FILE... (what model files hold; docs/model_files.md)\n"
         "       moss-infer-hip self-test [--device N] [--full]\n"
         "       moss-infer-hip bench [--device N] [--size WxH] [--steps N] [--vram-budget GiB] [--stages-only] [--int8]\n"
         "       moss-infer-hip quantize --model DIR --out FILE.safetensors [--format int8-convrot] [--group-size N]\n"
         "       moss-infer-hip --list-devices | --version | --help";
}

std::string help_text() {
  return usage_line() +
         "\n\n"
         "Text to image with MOSS-Image (Base or SFT, the official bf16 diffusers folders).\n\n"
         "  --model PATH           MOSS-Image model folder (diffusers tree), or an      required\n"
         "                         all-in-one .safetensors checkpoint (docs/model_files.md)\n"
         "  --diffusion-model FILE the DiT from its own file (Comfy-Org's                overrides --model's\n"
         "                         diffusion_models/moss_image_*_bf16.safetensors)\n"
         "  --text-encoder FILE    the Qwen3.5 text encoder's file (also --llm)         overrides --model's\n"
         "  --vae FILE             the FLUX.2 VAE's file (e.g. vae/flux2-vae.safetensors) overrides --model's\n"
         "  --tokenizer FILE       tokenizer.json; needed without a model folder\n"
         "  --model-config DIR     transformer/, text_encoder/, vae/ config.json files   default: the folder's,\n"
         "                         for single files                                     else built in\n"
         "  --prompt TEXT          prompt                                               required\n"
         "  --negative TEXT        negative prompt                                      default: empty\n"
         "  -o FILE.png            write the image (with its generation record)\n"
         "  --latent-out FILE.npy  write the final latents (float32 [128, H/16, W/16]);\n"
         "                         without -o the VAE decode is skipped\n"
         "  --size WxH             image size; also --width N, --height N              default: 1024x1024\n"
         "                         multiples of 16, at most 4096 a side and 4.2 megapixels\n"
         "  --steps N              sampling steps (snapping to the training grid can   default: 50\n"
         "                         merge steps; the count that runs is printed)\n"
         "  --cfg X                classifier-free guidance; 1 runs no uncond pass    default: 3\n"
         "  --shift X              schedule shift                                       default: 5\n"
         "  --seed N               noise seed; -1 draws a random one (printed)          default: 42\n"
         "  --skip-layers LIST     DiT blocks the unconditional row skips (comma list,  default: \"22\"\n"
         "                         may be empty)\n"
         "  --max-seq N            templated tokens per prompt; longer prompts are cut  default: 4096\n"
         "  --tier reference       the only tier                                        default: reference\n"
         "  --sampler NAME         euler, euler_ancestral, heun, dpm_2, dpmpp_2m,        default: euler\n"
         "                         dpmpp_2m_sde, dpmpp_3m_sde, dpmpp_sde, lcm, ddim, res_multistep,\n"
         "                         uni_pc, uni_pc_bh2 (or A1111's names: \"Euler a\", \"DPM++ 2M\",\n"
         "                         \"UniPC\"); docs/samplers.md\n"
         "  --scheduler NAME       moss (the MOSS-Image schedule), simple, normal,       default: moss\n"
         "                         karras, exponential, sgm_uniform, beta\n"
         "  --lora FILE[:WEIGHT]   merge a LoRA into the weights (repeatable, at most 16, default weight 1,\n"
         "                         negative allowed; docs/loras.md)\n"
         "  --lora-dir DIR         where <lora:NAME:WEIGHT> prompt tags find NAME.safetensors\n"
         "                         (jobs lines; serve lists it at /sdapi/v1/loras)\n"
         "  --vram-budget GiB      cap on device memory for the VAE and the DiT         default: free memory\n"
         "  --device N[,N...]|all  HIP device index(es): one engine each, images spread  default: first supported\n"
         "  --no-metadata          no generation record in the PNG\n"
         "  --crop-to-size         accept sides that are multiples of 8: generated at the next\n"
         "                         multiple of 16 and centre-cropped (a server always does)\n"
         "  --quiet                no progress output\n"
         "  --progress json        one JSON object per event on stderr                  default: text\n"
         "  --from-png FILE.png    rerun the generation record of FILE.png (also --replay); flags\n"
         "                         given on the command line override its fields\n"
         "  --batch-count N        N images for one model load, seeds seed, seed+1, ... default: 1\n"
         "                         -o takes a %d / %03d pattern, else gets -0001 style suffixes\n"
         "  --prompt-file FILE     the prompt is FILE's text (- reads stdin)\n"
         "  --negative-file FILE   the negative prompt is FILE's text (- reads stdin)\n"
         "  --jobs FILE.jsonl      one request per line (the server's JSON fields, plus \"output\"),\n"
         "                         the model loaded once; other flags are the lines' defaults\n"
         "  --list-devices         list HIP devices, supported or not, and why\n"
         "  --version              version and the GPU architectures built in\n"
         "  --help, -h             this text; also serve --help, self-test --help, bench --help\n\n"
         "Environment: MOSSINFER_BACKEND=host runs on the CPU's host reference backend (no GPU needed;\n"
         "slow), MOSSINFER_THREADS=N its threads, MOSSINFER_KERNELS=native|portable (NVIDIA builds),\n"
         "MOSSINFER_INT8_QK=0|1 an INT8 DiT's int8 QK^T attention (unset: where the backend has it).\n\n"
         "Exit status: 0 success, 2 usage error or unsupported request, 1 any other failure,\n"
         "128 + the signal when stopped by one (SIGINT 130, SIGTERM 143, SIGHUP 129, SIGPIPE 141).\n"
         "A failed or stopped run leaves no output.\n";
}

ParsedArgs parse_args(const std::vector<std::string>& argv, ArgsFor purpose) {
  ParsedArgs out;
  RunOptions& o = out.run;
  o.seed_drawn = purpose == ArgsFor::Serve;  // a server draws a seed per request, unless --seed
  o.crop_to_size = purpose == ArgsFor::Serve;  // a client's 520 is cropped; the command line's, if asked
  static const std::set<std::string> kSwitches = {"--no-metadata", "--crop-to-size", "--quiet", "--list-devices", "--version", "--help",
                                                  "-h"};
  std::map<std::string, std::string> seen;
  bool size_given = false;
  std::vector<std::string> actions;
  std::string replay_flag, replay_path;  // --from-png FILE (or --replay FILE)

  for (size_t i = 0; i < argv.size(); ++i) {
    std::string arg = argv[i], value;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        inline_value = true;
      }
    }
    if (kSwitches.count(arg)) {
      if (inline_value) throw usage_error(arg + " takes no value");
      if (arg == "--no-metadata") o.no_metadata = true;
      else if (arg == "--crop-to-size") o.crop_to_size = true;
      else if (arg == "--quiet") o.quiet = true;
      else actions.push_back(arg);
      continue;
    }
    if (!option_takes_value(arg)) {
      if (const Refusal* r = find_refusal(arg))
        throw usage_error(arg + ": not supported: " + r->what);
      if (arg.size() > 1 && arg[0] == '-') throw usage_error("unknown option '" + arg + "'\n" + usage_line());
      throw usage_error("unexpected argument '" + arg + "'\n" + usage_line());
    }
    if (!inline_value) {
      if (i + 1 >= argv.size()) throw usage_error(arg + " needs a value");
      value = argv[++i];
    }
    if (arg == "--llm") arg = "--text-encoder";  // stable-diffusion.cpp's name for it
    if (seen.count(arg) && arg != "--lora") throw usage_error(arg + " given twice");  // --lora adds one each
    seen[arg] = value;

    if (const FieldNames* field = find_field_by_flag(arg)) {
      set_request_field(o, *field, value, arg);
    } else if (std::string* path = model_path_of(o.model, arg)) {
      if (value.empty()) throw bad_value(arg, value, "empty path");
      *path = value;
    } else if (arg == "-o") {
      if (!has_suffix(value, ".png") && !has_suffix(value, ".PNG"))
        throw bad_value(arg, value, "the image is written as PNG: give a .png file name");
      o.output_png = value;
    } else if (arg == "--latent-out") {
      if (!has_suffix(value, ".npy")) throw bad_value(arg, value, "latents are written as .npy: give a .npy file name");
      o.latent_out = value;
    } else if (arg == "--size") {
      size_t x = value.find_first_of("xX");
      if (x == std::string::npos) throw bad_value(arg, value, "expected WxH, e.g. 1024x1024");
      set_request_field(o, field_names(RequestField::Width), value.substr(0, x), arg);
      set_request_field(o, field_names(RequestField::Height), value.substr(x + 1), arg);
      size_given = true;
    } else if (arg == "--vram-budget") {
      const double g = parse_decimal(arg, value, 0, 4096, "must be a positive number of GiB, at most 4096");
      if (g <= 0) throw bad_value(arg, value, "must be a positive number of GiB, at most 4096");
      o.vram_budget_gib = g;
    } else if (arg == "--device") {
      o.devices = parse_device_list(arg, value);
    } else if (arg == "--batch-count") {
      o.batch_count = parse_int(arg, value, 1, 10000);
    } else if (arg == "--prompt-file" || arg == "--negative-file" || arg == "--jobs") {
      if (value.empty()) throw bad_value(arg, value, "empty path (give a file, or - for stdin)");
      (arg == "--prompt-file" ? o.prompt_file : arg == "--negative-file" ? o.negative_file : o.jobs_file) = value;
    } else if (is_replay_flag(arg)) {
      if (!replay_flag.empty()) throw usage_error(arg + " given twice");  // --from-png A --replay B
      if (value.empty()) throw usage_error(arg + ": empty path");
      replay_flag = arg;
      replay_path = value;
    } else if (arg == "--lora-dir") {
      if (!dir_exists(value)) throw bad_value(arg, value, "not a folder");
      o.lora_dir = value;
    } else if (arg == "--progress") {
      if (value != "json" && value != "text") throw bad_value(arg, value, "expected json or text");
      o.progress_json = value == "json";
    }
  }

  // Before anything else is checked, as the record's values are then the command line's.
  o.given = given_settings(seen);
  if (!replay_flag.empty()) {
    out.replay = o.replay = apply_replay_record(o, replay_flag, replay_path, o.given);
    o.given.insert(out.replay.fields.begin(), out.replay.fields.end());
  }
  if (size_given && (seen.count("--width") || seen.count("--height"))) throw usage_error("--size and --width/--height given together");
  if (actions.size() > 1) throw usage_error(actions[0] + " and " + actions[1] + " given together");
  if (!actions.empty()) {
    const std::string& a = actions[0];
    out.action = (a == "--help" || a == "-h") ? Action::Help : a == "--version" ? Action::Version : Action::ListDevices;
    return out;
  }
  if (o.model.empty())
    throw usage_error("--model is required (or --diffusion-model, --text-encoder and --vae)\n" + usage_line());
  check_prompt_sources(seen, o);
  if (purpose == ArgsFor::Run) {
    if (!seen.count("--prompt") && !out.replay.supplied(RequestField::Prompt) && o.prompt_file.empty() &&
        o.jobs_file.empty())
      throw usage_error("--prompt is required\n" + usage_line());
    if (o.output_png.empty() && o.latent_out.empty() && o.jobs_file.empty())
      throw usage_error("give -o FILE.png or --latent-out FILE.npy (or both)\n" + usage_line());
    if (!o.output_png.empty() && o.output_png == o.latent_out)
      throw usage_error("-o and --latent-out name the same file");
  }
  try {
    check_request(o);
  } catch (const FieldError& e) {
    throw out.replay.blame(usage_error(e.cli));
  }
  if (purpose == ArgsFor::Run) draw_seed_if_asked(o);
  return out;
}

}  // namespace moss
