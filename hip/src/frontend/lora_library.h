// The LoRAs a server (or a jobs file) knows by name: the .safetensors files of --lora-dir and its
// subfolders, each named by its file name less .safetensors (what a prompt's <lora:NAME:WEIGHT>
// tag and GET /sdapi/v1/loras use), rescanned by POST /sdapi/v1/refresh-loras. And the tags
// themselves: A1111's extra-network syntax, taken out of a prompt before it is encoded.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moss {

class LoraLibrary {
 public:
  // Scans `dir` (exit 2 when it is not a folder).
  explicit LoraLibrary(std::string dir);
  void rescan();
  std::string find(const std::string& name) const;  // the file's path; empty when unknown
  // A1111's list: name, alias, path (relative to --lora-dir: a client learns nothing of where it
  // lives) and metadata (the file's safetensors metadata, e.g. kohya's ss_* training notes).
  nlohmann::json a1111_list() const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> files_;  // name -> path relative to dir_
};

// One <lora:NAME[:WEIGHT[:...]]> (or <lyco:...>) tag: A1111's first number is the weight;
// a further one (A1111's separate UNet multiplier) is not supported here and refused.
struct LoraTag {
  std::string name;
  float weight = 1.0f;
  std::string text;  // the tag as written
};
// Removes every LoRA tag from `prompt` and returns them in order. Throws std::invalid_argument
// naming a tag whose weight is not a number between -100 and 100, or whose name is empty.
std::vector<LoraTag> take_lora_tags(std::string& prompt);

}  // namespace moss
