// The HIP backend's op profiler: with MOSSINFER_PROFILE=1 in the environment every op of the
// core, text and vae families is bracketed by two events on the compute stream, and when the
// backend goes away a table of op name, calls, total and mean device milliseconds (sorted by
// total) is printed to stderr. Off (the default) the backend holds the plain op families, so
// profiling costs nothing.
//
// Times are device time between the op's first and last launch; an op that waits on the host
// (uploads through staging) or on the copy stream counts that wait. Ops are not nested (no op
// calls another family's op through the wrappers), so the totals add up to the step's op time.
// The device time between one op's end and the next op's start is tallied too, in two rows:
// gaps under 0.1 ms (kernel boundaries, launch latency) and longer ones (the host's own work,
// downloads, waits between stages).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/core_ops.h"
#include "ops/text_ops.h"
#include "ops/vae_ops.h"
#include "runtime/portability.h"

namespace moss {

class OpProfiler {
 public:
  // A profiler on `stream` when MOSSINFER_PROFILE is set to something other than "" or "0";
  // null otherwise.
  static std::shared_ptr<OpProfiler> from_env(hipStream_t stream);

  explicit OpProfiler(hipStream_t stream) : stream_(stream) {}
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Brackets one op; scopes do not nest.
  class Scope {
   public:
    Scope(OpProfiler& p, std::string name) : p_(p) { p_.begin(std::move(name)); }
    ~Scope() { p_.end(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    OpProfiler& p_;
  };

  // Waits for the stream, then prints the table (title names the backend) and clears the totals.
  void report(const std::string& title);

 private:
  struct Pending {
    std::string name;
    hipEvent_t start, stop;
  };
  struct Total {
    int64_t calls = 0;
    double ms = 0;
  };
  void begin(std::string name);
  void end();
  // Folds finished brackets into the totals: those whose stop event has completed, or all of
  // them (waiting) when `wait`.
  void drain(bool wait);
  hipEvent_t take_event();

  hipStream_t stream_;
  std::vector<Pending> pending_;  // in launch order
  size_t pending_head_ = 0;       // first not yet folded
  Pending open_{};
  std::vector<hipEvent_t> free_events_;
  std::map<std::string, Total> totals_;
  hipEvent_t last_stop_ = nullptr;  // the previous folded op's stop, for the gap to the next
};

// The op families wrapped so that each op runs inside an OpProfiler::Scope named
// "<family>.<op>" (GEMMs also carry their weight shape: "core.linear 3072x3072").
std::unique_ptr<CoreOps> profile_core_ops(std::unique_ptr<CoreOps> inner, std::shared_ptr<OpProfiler> p);
std::unique_ptr<TextOps> profile_text_ops(std::unique_ptr<TextOps> inner, std::shared_ptr<OpProfiler> p);
std::unique_ptr<VaeOps> profile_vae_ops(std::unique_ptr<VaeOps> inner, std::shared_ptr<OpProfiler> p);

}  // namespace moss
