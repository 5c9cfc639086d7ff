// --from-png FILE (or --replay FILE): rerun the generation record a PNG carries. The record's
// fields become the flags they were made from (prompt, negative, seed, steps as requested, cfg,
// shift, skip layers, size, max-seq, tier); a flag given on the command line wins over the
// record's. The same request on the same model makes the same image, byte for byte.
#pragma once
#include <string>
#include <vector>

namespace moss {

// The command line with --from-png FILE replaced by the record's flags (those the command line
// does not give); unchanged without --from-png. Throws moss::Error (exit 2) naming the file when
// it is unreadable or holds no generation record.
std::vector<std::string> expand_replay(const std::vector<std::string>& args);

}  // namespace moss
