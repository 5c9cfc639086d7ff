// What a GGUF file is, for the message that refuses it (docs/model_files.md): its architecture
// and its tensors' types ("architecture 'moss_image', 463 tensors: 252 Q4_K, 210 BF16, 1 F32"),
// read from the header alone. GGUF files are not run; users are told what they hold.
#pragma once
#include <string>

namespace moss {

// Whether the file starts with the GGUF magic (false for an unreadable or short file).
bool is_gguf_file(const std::string& path);
// The summary, or "an unreadable GGUF header" when the header is cut short or malformed.
std::string gguf_summary(const std::string& path);

}  // namespace moss
