// --from-png FILE (or --replay FILE): rerun the generation record a PNG carries. The record's
// fields become the flags they were made from (prompt, negative, seed, steps as requested, cfg,
// shift, skip layers, size, max-seq, tier); a flag given on the command line wins over the
// record's. The same request on the same model makes the same image, byte for byte.
//
// Only the record is read from the PNG, never its pixels (io/png_text.h): at most
// kRecordLimit bytes, whatever size the image claims. A flag counts as given when the command
// line names it as an option, not when some option's value looks like one
// (`--negative "--seed"` gives --negative only). A record value that the checks refuse is
// blamed on the record's field (ReplaySource::blame), not on a flag the user never typed.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "util/error.h"

namespace moss {

// The largest record read: a prompt and a negative of a 1 MiB prompt file each, JSON-escaped.
constexpr size_t kRecordLimit = size_t(16) << 20;

// Where the flags of an expanded command line came from.
struct ReplaySource {
  std::string flag, path;                            // "--from-png", the PNG; empty without replay
  std::map<std::string, std::string> record_fields;  // option the record supplied -> its field
  // `e` with its message rewritten when it starts with an option the record supplied:
  // "--steps '0': ..." -> "--from-png FILE: the record's steps '0': ...". Otherwise `e`.
  Error blame(const Error& e) const;
};

// The command line with --from-png FILE replaced by the record's flags (those the command line
// does not give); unchanged without --from-png. Throws moss::Error (exit 2) naming the file when
// it is unreadable, not a PNG, or holds no intact generation record. `source` (optional) gets
// which options came from the record.
std::vector<std::string> expand_replay(const std::vector<std::string>& args, ReplaySource* source = nullptr);

}  // namespace moss
