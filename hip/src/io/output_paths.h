// The one check of the files a run will write (issue 35): every source of an output path (-o,
// --latent-out, a batch's numbered pattern, a jobs line's "output") goes through it before any
// compute, so a run that cannot write its outputs fails in milliseconds, not after the denoise.
//
// A path is refused (usage error, exit 2, the message starting with `source`, e.g. "-o" or
// "jobs.jsonl:3: output") when it:
//   - holds a NUL byte (a JSON string can: "victim.txt\u0000.png" would pass the .png check
//     and the system calls would write victim.txt);
//   - is empty, longer than PATH_MAX, or its file name longer than the file system's NAME_MAX;
//   - names an existing directory;
//   - lies in a folder that does not exist, is not a directory, or cannot hold a new file: the
//     check makes (and at once removes) a temporary there, exactly as the commit will, so a
//     read-only or pseudo file system (/proc as root), a deleted working directory or missing
//     permission are all found up front;
//   - names an existing entry that the final rename could not replace: in a sticky folder
//     (/tmp) an entry of another user, when the folder is not ours either (the kernel refuses
//     the rename with EPERM after the whole compute otherwise).
// And the outputs of each file system together must fit its free space (OutputPath::bytes, an
// upper bound of the file's size); the write itself still handles ENOSPC (io/output_files.h).
// Two outputs of one run are the same file when they name the same entry of the same folder:
// the folder compared by device and inode (so D/x.png, D/./x.png, D//x.png, E/../D/x.png and
// a link to D all meet), the name as it is. Outputs are renamed into place (io/output_files.h),
// which replaces the folder entry; two hard links to one file are two entries and each keeps
// its own image, so the file's own inode does not decide.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moss {

struct OutputPath {
  std::string path;
  std::string source;  // for messages: "-o", "--latent-out", "jobs.jsonl:3: output"
  uint64_t bytes = 0;  // at most this many bytes will be written (0: not known, not counted)
};

// The checks above for one path; throws moss::Error (exit 2).
void check_output_path(const std::string& path, const std::string& source);

// Every path checked, then no two naming the same file (exit 2 naming both), then stale
// temporaries of earlier runs removed from each folder (io/stale_temporaries.h).
void check_output_paths(const std::vector<OutputPath>& outputs);

}  // namespace moss
