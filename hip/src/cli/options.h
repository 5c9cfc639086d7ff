// The command line of docs/product.md section 3: parsing, defaults, checks and the refusals of
// unsupported features (which name the option instead of calling it unknown).
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/replay.h"
#include "runtime/devices.h"
#include "pipeline/model_files.h"
#include "pipeline/request.h"

namespace moss {

enum class Action { Run, Help, Version, ListDevices };

// The request the flags describe (its settings set through pipeline/request_fields.h), and the
// run's own options around it.
struct RunOptions : GenerationRequest {
  ModelPaths model;          // --model and the component flags (docs/model_files.md)
  std::optional<double> vram_budget_gib;
  DeviceList devices;        // --device N[,N...] | all
  bool quiet = false;
  // Several images per load (README "Many images per load", "Progress events").
  int64_t batch_count = 1;         // --batch-count N: seeds seed, seed+1, ...; -o as a pattern
  std::string prompt_file;         // --prompt-file FILE ("-": stdin); its text is the prompt
  std::string negative_file;       // --negative-file FILE ("-": stdin)
  std::string jobs_file;           // --jobs FILE.jsonl: one request per line, the model loaded once
  std::string lora_dir;            // --lora-dir DIR: the LoRAs <lora:NAME:WEIGHT> tags name (docs/loras.md)
  bool progress_json = false;      // --progress json: one JSON object per event on stderr
  // The request settings the command line (or a --from-png record) set; the others are the
  // defaults, and a refusal of a default names it as such, never as a flag the user gave.
  std::set<RequestField> given;
  ReplaySource replay;             // --from-png's record (its model files are compared once the model opens)
};

struct ParsedArgs {
  Action action = Action::Run;
  RunOptions run;
  ReplaySource replay;  // the settings a --from-png record supplied: later refusals of them name the record
};

// Run: a command line that makes images (a prompt and an output are required; --seed -1 is
// drawn; --from-png FILE fills the settings the command line does not give, cli/replay.h). Serve: `serve`'s flags, the defaults of its requests (no prompt or output; without
// --seed each request draws its own).
enum class ArgsFor { Run, Serve };

// Throws moss::Error with exit code 2 (usage) naming the offending option.
ParsedArgs parse_args(const std::vector<std::string>& args, ArgsFor purpose = ArgsFor::Run);

// Whether parse_args reads the argument after `option` as its value ("--negative", not "--quiet").
bool option_takes_value(const std::string& option);

// The parser's integer check for options outside parse_args (serve's --port): exit 2 naming opt.
// "all" or a comma list of distinct indexes 0..255; exit 2 naming opt otherwise.
DeviceList parse_device_list(const std::string& opt, const std::string& value);

int64_t parse_int_option(const std::string& opt, const std::string& value, int64_t lo, int64_t hi);

std::string usage_line();
std::string help_text();

}  // namespace moss
