#include "ops/hip/op_profiler.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "ops/op_profile_table.h"

namespace moss {

namespace {
// Brackets still in flight before begin() waits for the oldest: bounds the events held while
// the host runs far ahead of the device (a whole DiT step is ~1300 ops).
constexpr size_t kMaxPending = 16384;
}  // namespace

std::shared_ptr<OpProfiler> OpProfiler::from_env(hipStream_t stream) {
  const char* v = std::getenv("MOSSINFER_PROFILE");
  if (!v || !*v || std::string(v) == "0") return nullptr;
  return std::make_shared<OpProfiler>(stream);
}

OpProfiler::~OpProfiler() {
  for (size_t i = pending_head_; i < pending_.size(); ++i) {
    (void)hipEventDestroy(pending_[i].start);
    (void)hipEventDestroy(pending_[i].stop);
  }
  for (hipEvent_t e : free_events_) (void)hipEventDestroy(e);
  if (last_stop_) (void)hipEventDestroy(last_stop_);
}

hipEvent_t OpProfiler::take_event() {
  if (free_events_.empty()) {
    hipEvent_t e;
    MOSS_HIP_CHECK(hipEventCreate(&e));
    return e;
  }
  hipEvent_t e = free_events_.back();
  free_events_.pop_back();
  return e;
}

void OpProfiler::open(std::string name) {
  drain(pending_.size() - pending_head_ >= kMaxPending);
  open_.name = std::move(name);
  open_.start = take_event();
  open_.stop = take_event();
  MOSS_HIP_CHECK(hipEventRecord(open_.start, stream_));
}

void OpProfiler::end() {
  // Recorded even when the op threw: the bracket stays balanced (its time is then meaningless
  // but the process is failing anyway).
  (void)hipEventRecord(open_.stop, stream_);
  pending_.push_back(std::move(open_));
  open_ = Pending{};
}

void OpProfiler::drain(bool wait) {
  while (pending_head_ < pending_.size()) {
    Pending& p = pending_[pending_head_];
    if (wait) {
      MOSS_HIP_CHECK(hipEventSynchronize(p.stop));
    } else {
      const hipError_t q = hipEventQuery(p.stop);
      if (q == hipErrorNotReady) break;
      MOSS_HIP_CHECK(q);
    }
    float ms = 0;
    MOSS_HIP_CHECK(hipEventElapsedTime(&ms, p.start, p.stop));
    Total& t = totals_[p.name];
    ++t.calls;
    t.ms += double(ms);
    if (last_stop_) {
      float gap = 0;
      MOSS_HIP_CHECK(hipEventElapsedTime(&gap, last_stop_, p.start));
      Total& g = totals_[gap < 0.1f ? "(between ops, < 0.1 ms)" : "(between ops, >= 0.1 ms)"];
      ++g.calls;
      g.ms += double(gap);
      free_events_.push_back(last_stop_);
    }
    last_stop_ = p.stop;
    free_events_.push_back(p.start);
    ++pending_head_;
    wait = false;  // one blocking wait at most: the rest are then likely done
  }
  if (pending_head_ == pending_.size() || pending_head_ > 4096) {
    pending_.erase(pending_.begin(), pending_.begin() + std::ptrdiff_t(pending_head_));
    pending_head_ = 0;
  }
}

void OpProfiler::report(const std::string& title) {
  MOSS_HIP_CHECK(hipStreamSynchronize(stream_));
  while (pending_head_ < pending_.size()) drain(true);
  if (totals_.empty()) return;
  std::vector<OpProfileRow> rows;
  for (const auto& [name, t] : totals_) rows.push_back({name, t.calls, t.ms});
  std::fputs(format_op_profile(title, rows).c_str(), stderr);
  std::fflush(stderr);
  totals_.clear();
}

}  // namespace moss
