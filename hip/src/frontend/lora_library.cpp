#include "frontend/lora_library.h"

#include <stdexcept>

#include "io/files.h"
#include "io/safetensors.h"
#include "util/error.h"
#include "util/numbers.h"

namespace moss {
namespace {

constexpr const char* kExt = ".safetensors";

// Every .safetensors file under `dir` (relative paths, sorted, subfolders after their parent's files).
void scan(const std::string& dir, const std::string& rel, std::map<std::string, std::string>& out, int depth) {
  if (depth > 8) return;  // a link loop or a deep tree: what is below is not read
  for (const std::string& e : list_dir(dir + (rel.empty() ? "" : "/" + rel))) {
    const std::string r = rel.empty() ? e : rel + "/" + e;
    const std::string full = dir + "/" + r;
    if (dir_exists(full)) {
      scan(dir, r, out, depth + 1);
    } else if (ends_with(e, kExt) && e.size() > 12) {
      const std::string name = e.substr(0, e.size() - 12);
      out.emplace(name, r);  // the first of two files of one name wins (sorted order)
    }
  }
}

}  // namespace

LoraLibrary::LoraLibrary(std::string dir) : dir_(std::move(dir)) {
  if (!dir_exists(dir_)) throw usage_error("--lora-dir " + dir_ + ": not a folder");
  rescan();
}

void LoraLibrary::rescan() {
  std::map<std::string, std::string> files;
  scan(dir_, "", files, 0);
  std::lock_guard<std::mutex> lock(mutex_);
  files_ = std::move(files);
}

std::string LoraLibrary::find(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = files_.find(name);
  return it == files_.end() ? "" : dir_ + "/" + it->second;
}

nlohmann::json LoraLibrary::a1111_list() const {
  std::map<std::string, std::string> files;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    files = files_;
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, rel] : files) {
    nlohmann::json metadata = nlohmann::json::object();
    try {
      const std::shared_ptr<SafetensorsFile> file = SafetensorsFile::open(dir_ + "/" + rel);
      for (const auto& [k, v] : file->metadata()) metadata[k] = v;
    } catch (const Error&) {
      // A malformed file is still listed; its refusal comes when a request uses it.
    }
    list.push_back({{"name", name}, {"alias", name}, {"path", rel}, {"metadata", metadata}});
  }
  return list;
}

std::vector<LoraTag> take_lora_tags(std::string& prompt) {
  std::vector<LoraTag> tags;
  std::string out;
  size_t pos = 0;
  while (pos < prompt.size()) {
    size_t open = std::string::npos;
    for (const char* kind : {"<lora:", "<lyco:"}) open = std::min(open, prompt.find(kind, pos));
    const size_t close = open == std::string::npos ? open : prompt.find('>', open);
    if (close == std::string::npos) {
      out += prompt.substr(pos);
      break;
    }
    out += prompt.substr(pos, open - pos);
    LoraTag tag;
    tag.text = prompt.substr(open, close + 1 - open);
    std::vector<std::string> items;
    std::string item;
    for (char c : prompt.substr(open + 6, close - open - 6)) {
      if (c == ':') items.push_back(item), item.clear();
      else item += c;
    }
    items.push_back(item);
    tag.name = items[0];
    if (tag.name.empty()) throw std::invalid_argument(tag.text + ": no LoRA name");
    if (items.size() > 2)
      throw std::invalid_argument(tag.text + ": a second multiplier (A1111's UNet weight) is not supported; give one weight");
    if (items.size() == 2) {
      const ParsedDecimal w = parse_strict_decimal(items[1], -100, 100);
      if (w.error != NumberError::None)
        throw std::invalid_argument(tag.text + ": the weight '" + items[1] + "' must be a number between -100 and 100");
      tag.weight = float(w.value);
    }
    tags.push_back(std::move(tag));
    pos = close + 1;
  }
  prompt = out;
  return tags;
}

}  // namespace moss
