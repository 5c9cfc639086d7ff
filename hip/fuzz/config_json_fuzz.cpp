// libFuzzer target: the JSON config loaders. Each input is read as a config file by every
// parser (transformer, VAE, text encoder) and, where one accepts it, turned into the tensor
// list the model folder is checked against, as the program does. A refusal must be a
// moss::Error naming the file; anything else escaping (a crash, a json exception, running
// out of memory on absurd sizes) is a finding.
#include <cstdint>
#include <string>

#include "fuzz_input_file.h"
#include "io/model_folder.h"
#include "model/dit.h"
#include "model/text_encoder.h"
#include "model/vae_config.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static moss::fuzz::InputFile input;
  const std::string& path = input.write(data, size);
  try {
    moss::read_json_file(path);
  } catch (const moss::Error&) {
    return 0;  // not JSON: every parser below refuses the same way
  }
  try {
    moss::dit_expected_tensors(moss::parse_dit_config(path));
  } catch (const moss::Error&) {
  }
  try {
    moss::vae_expected_tensors(moss::parse_vae_config(path));
  } catch (const moss::Error&) {
  }
  try {
    moss::text_encoder_expected_tensors(moss::parse_text_encoder_config(path), "model.language_model.");
  } catch (const moss::Error&) {
  }
  return 0;
}
