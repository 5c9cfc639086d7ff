// --from-png FILE (or --replay FILE): rerun the generation record a PNG carries. The record's
// fields (prompt, negative, seed, steps as requested, cfg, shift, skip layers, size, max-seq,
// tier) fill the request from their JSON values through the one table of request settings
// (pipeline/request_fields.h), as a jobs line or a server body does; a setting the command line
// gives wins over the record's. No value passes through text: a record's cfg or shift is the
// same float again, and the same request on the same model makes the same pixels (the files differ
// only in the record's timings).
//
// Only the record is read from the PNG, never its pixels (io/png_text.h): at most
// kRecordLimit bytes, whatever size the image claims. A setting counts as given when the command
// line names its option (parse_args knows which words are options and which are values:
// `--negative "--seed"` gives --negative only). A record value that the checks refuse is blamed
// on the record's field (ReplaySource::blame), not on a flag the user never typed.
#pragma once
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "pipeline/record.h"
#include "pipeline/request.h"
#include "pipeline/request_fields.h"
#include "util/error.h"

namespace moss {

// The largest record read: a prompt and a negative of a 1 MiB prompt file each, JSON-escaped.
constexpr size_t kRecordLimit = size_t(16) << 20;

bool is_replay_flag(const std::string& option);  // --from-png, --replay

// Which settings of a request came from a PNG's record.
struct ReplaySource {
  std::string flag, path;             // "--from-png", the PNG; empty without replay
  std::vector<RequestField> fields;  // the settings the record supplied
  std::vector<RecordedFile> model_files;  // the record's model files (docs/model_files.md), if it names them
  bool supplied(RequestField field) const;
  // `e` with its message rewritten when it starts with the flag of a setting the record
  // supplied: "--steps '0': ..." -> "--from-png FILE: the record's steps '0': ...". Otherwise
  // `e`. Also for what the engine refuses later (a skipped block the model does not have).
  Error blame(const Error& e) const;
};

// Sets every setting of `request` that `given` (the command line's) lacks from the record of the
// PNG `path` (named on the command line by `flag`), and checks each as the command line's value
// would be. Throws moss::Error (exit 2) naming the file when it is unreadable, not a PNG, or holds
// no intact generation record, and naming the record's field when a value is refused.
ReplaySource apply_replay_record(GenerationRequest& request, const std::string& flag, const std::string& path,
                                 const std::set<RequestField>& given);

// One line per component whose file differs from the record's (name or hash), naming both: the
// replay then runs other weights than the record's and may not give its image.
std::vector<std::string> replay_file_differences(const ReplaySource& replay, const std::vector<RecordedFile>& loaded);

}  // namespace moss
