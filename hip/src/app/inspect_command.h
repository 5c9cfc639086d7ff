// `moss-infer-hip inspect PATH...` (docs/model_files.md): for each weights file or model folder,
// the layout its tensor names were recognised as, each component's dtypes and parameter count,
// every tensor it could not place; then whether a generation could run from these paths
// together (a folder, an all-in-one file, component files, a tokenizer.json), with the
// configuration it would use. Exit 0 when it could, 2 otherwise.
#pragma once
#include <string>
#include <vector>

namespace moss {

int inspect_command(const std::vector<std::string>& args);

}  // namespace moss
