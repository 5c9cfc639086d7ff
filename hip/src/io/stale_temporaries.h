// The temporaries outputs are written to before the rename (io/output_files.h) are named
// `.moss-infer-<pid>-XXXXXX`, after the process writing them. A run stopped by a catchable
// signal removes its own; one killed by SIGKILL (or a power cut) cannot. The next run that
// writes to that folder removes such leftovers, but only its own kind (the name pattern, a
// regular file) and only stale ones, so a run writing the same folder at the same time keeps
// its temporary:
//   - the writer's pid names no live process here (kill(pid, 0) fails with ESRCH) and the file
//     was last changed more than kStaleAfterSeconds ago (a writer in another pid namespace, on
//     another host sharing the folder, is not visible by pid; a commit takes milliseconds to
//     seconds, so a minute-old temporary is no commit in flight);
//   - or it is older than kAbandonedAfterSeconds whatever its pid says (the pid was reused), or
//     it has the name of versions before the pid was in it (`.moss-infer-XXXXXX`) and is that old.
#pragma once
#include <string>

namespace moss {

constexpr long kStaleAfterSeconds = 60;
constexpr long kAbandonedAfterSeconds = 24 * 3600;

// The mkstemp template of a temporary in `dir` for this process.
std::string temporary_template(const std::string& dir);

// Removes the stale temporaries of `dir` (best effort: a folder that cannot be listed, or a file
// that cannot be removed, is left as it is). Returns how many it removed.
int remove_stale_temporaries(const std::string& dir);

}  // namespace moss
