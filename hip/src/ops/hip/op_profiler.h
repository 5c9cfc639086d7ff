// The HIP backend's op profiler: with MOSSINFER_PROFILE=1 in the environment every op of the
// core, text and vae families is bracketed by two events on the compute stream, and when the
// backend goes away a table of op name, calls, total and mean device milliseconds (sorted by
// total) is printed to stderr. The profiler is the op families' hook (ops/op_hook.h), which
// names each op "<family>.<op>" (GEMMs also carry their weight shape: "core.linear 3072x3072").
// Off (the default) the families have no hook, so profiling costs one branch per op.
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

#include "ops/op_hook.h"
#include "runtime/portability.h"

namespace moss {

class OpProfiler final : public OpHook {
 public:
  // A profiler on `stream` when MOSSINFER_PROFILE is set to something other than "" or "0";
  // null otherwise.
  static std::shared_ptr<OpProfiler> from_env(hipStream_t stream);

  explicit OpProfiler(hipStream_t stream) : stream_(stream) {}
  ~OpProfiler() override;
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Brackets one op (OpHook); brackets do not nest.
  bool begin(const OpCall& call) override {
    open(call.name);
    return true;
  }
  void end() override;

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
  void open(std::string name);
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

}  // namespace moss
