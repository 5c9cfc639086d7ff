// The outputs of one run, committed together (README: outputs appear complete or not at
// all, whichever output was finished first). Each file is written to a temporary beside its
// target; only when every temporary is complete and synced are they renamed into place, in
// one go at the end. A failure or a signal before that point (every signal util/interrupt.h
// handles is checked between chunks of every write) removes every temporary and leaves no output.
// A file-size limit shows as a write error (SIGXFSZ is ignored, util/interrupt.h). The
// temporaries carry the writer's pid; those a SIGKILL leaves are removed by a later run
// (io/stale_temporaries.h).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace moss {

class OutputFiles {
 public:
  void add(const std::string& path, std::string bytes);
  // Throws moss::Error: exit 1 for a write error, 128 + signal for an interrupt.
  void commit();

 private:
  std::vector<std::pair<std::string, std::string>> files_;  // target path, contents
};

}  // namespace moss
