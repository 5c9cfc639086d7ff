// The outputs of one run, committed together (README: outputs appear complete or not at
// all, whichever output was finished first). Each file is written to a temporary beside its
// target; only when every temporary is complete and synced are they renamed into place, in
// one go at the end. A failure or a signal before that point (every signal util/interrupt.h
// handles is checked between chunks of every write) removes every temporary and leaves no output.
// A file-size limit shows as a write error (SIGXFSZ is ignored, util/interrupt.h). The
// temporaries carry the writer's pid; those a SIGKILL leaves are removed by a later run
// (io/stale_temporaries.h).
#pragma once
#include <cstddef>
#include <cstdint>
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

// One output too large to hold in memory (a quantized model), written as it is produced, with
// the same guarantee: append() writes to a temporary beside `path` (checking for signals between
// chunks), commit() syncs it and renames it into place. Destroyed without a commit (an error, an
// interrupt), it removes the temporary and leaves no output.
class StreamedOutputFile {
 public:
  explicit StreamedOutputFile(const std::string& path);  // creates the temporary (exit 1 if it cannot)
  ~StreamedOutputFile();
  StreamedOutputFile(const StreamedOutputFile&) = delete;
  StreamedOutputFile& operator=(const StreamedOutputFile&) = delete;

  void append(const void* data, size_t bytes);  // moss::Error: exit 1 write error, 128 + signal
  void commit();
  uint64_t written() const { return written_; }

 private:
  std::string path_, temporary_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

}  // namespace moss
