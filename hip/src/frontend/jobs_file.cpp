#include "frontend/jobs_file.h"

#include <optional>

#include <sstream>

#include "cli/batch.h"
#include "frontend/a1111_request.h"
#include "frontend/lora_library.h"
#include "io/input_text.h"
#include "io/json_text.h"
#include "io/output_paths.h"
#include "pipeline/moss_model.h"
#include "util/error.h"

namespace moss {
namespace {

// The title the server would give the model (pipeline/moss_model.h), so that a line's
// override_settings.sd_model_checkpoint answers to the same names as a server's. Empty when the
// folder's config cannot be read: the folder is then refused, by its own message and status, when
// the model opens after every line is checked.
std::string title_before_load(const std::string& folder) {
  try {
    return moss_model_title(folder);
  } catch (const Error& e) {
    if (e.code() != ExitCode::Failure && e.code() != ExitCode::Usage) throw;  // a signal stops the run
    return "";
  }
}

}  // namespace

std::vector<GenerationRequest> read_jobs_file(const RunOptions& o, std::vector<std::string>* origins) {
  const std::string text = read_input_text("--jobs", o.jobs_file, kJobsFileLimit);
  RequestContext context;
  context.defaults = o;  // the command line's settings, less the run's own options
  context.defaults.prompt.clear();  // each line gives its own
  context.defaults.output_png.clear();  // a line names its own, or takes -o numbered below
  context.defaults.latent_out.clear();
  // The names a server on these files answers to: the folder's (or all-in-one file's), else the DiT file's.
  const std::string& model_path = o.model.path.empty() ? o.model.diffusion_model : o.model.path;
  context.settings = a1111_settings(title_before_load(o.model.path), model_folder_name(model_path), !o.no_metadata);
  context.allow_output = true;
  std::optional<LoraLibrary> loras;
  if (!o.lora_dir.empty()) context.loras = &loras.emplace(o.lora_dir);
  std::vector<GenerationRequest> images;
  std::vector<size_t> unnamed;  // images of lines without "output": they take -o
  std::vector<OutputPath> line_outputs;  // checked here, where their lines are known
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string where = o.jobs_file + ":" + std::to_string(number) + ": ";
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    refuse_nul_bytes(line, o.jobs_file, number, ExitCode::Usage);
    try {
      const nlohmann::json body = parse_request_json(line);
      if (body.is_object() && !body.contains("prompt")) throw usage_error(where + "prompt: required");
      A1111Request req = parse_a1111_request(body, context);
      for (GenerationRequest& r : req.images) {
        r.no_metadata = o.no_metadata;
        if (r.output_png.empty()) unnamed.push_back(images.size());
        else line_outputs.push_back({r.output_png, where + "output"});
        images.push_back(std::move(r));
        if (origins) origins->push_back(o.jobs_file + ":" + std::to_string(number));
      }
    } catch (const RequestError& e) {
      std::string message = e.what();
      if (message.rfind("bad JSON", 0) == 0) message = "not valid JSON" + message.substr(8);
      throw usage_error(where + message);
    }
    if (!unnamed.empty() && o.output_png.empty())
      throw usage_error(where + "no \"output\" field, and no -o PATTERN.png to number");
  }
  if (images.empty()) throw usage_error("--jobs " + o.jobs_file + ": no requests in the file");
  check_output_paths(line_outputs);
  for (size_t k = 0; k < unnamed.size(); ++k)
    images[unnamed[k]].output_png = numbered_output("-o", o.output_png, int64_t(k + 1), int64_t(unnamed.size()));
  if (!o.latent_out.empty())
    for (size_t k = 0; k < images.size(); ++k)
      images[k].latent_out = numbered_output("--latent-out", o.latent_out, int64_t(k + 1), int64_t(images.size()));
  return images;
}

}  // namespace moss
