// Cancellation of a running job from outside it, within a second whatever the step's size: a
// signal (util/interrupt.h), a server's POST /interrupt, its client going away, the end of a
// drain deadline. The job's thread holds a CancelScope naming its CancelFlag; the host thread
// pool hands the flag to its workers with each parallel_for. Long loops (the host backend's op
// loops) call cancel_requested(), two relaxed atomic loads, and return early when it is true;
// the next checkpoint (check_interrupted(): every DiT block, text-encoder layer, VAE chunk and
// denoise step) then throws, so the partial results are never used.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace moss {

class CancelFlag {
 public:
  void request() { flag_.store(true, std::memory_order_relaxed); }
  bool requested() const { return flag_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> flag_{false};
};

// What check_interrupted() throws when the job's flag (not a signal) stopped it.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

// The flag of the job this thread works for (nullptr: none).
const CancelFlag* current_cancel_flag();

class CancelScope {
 public:
  explicit CancelScope(const CancelFlag* flag);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const CancelFlag* previous_;
};

// A signal arrived, or this thread's job was cancelled. Cheap enough for an inner loop.
bool cancel_requested();
// Throws Cancelled when this thread's job was cancelled (check_interrupted() calls it).
void throw_if_cancelled();

// Polls `should_cancel` every `period` on a thread of its own while it lives, and requests the
// flag once it says yes: for conditions that are a system call to test (a client's socket).
class CancelPoller {
 public:
  CancelPoller(CancelFlag& flag, std::function<bool()> should_cancel,
               std::chrono::milliseconds period = std::chrono::milliseconds(100));
  ~CancelPoller();
  CancelPoller(const CancelPoller&) = delete;
  CancelPoller& operator=(const CancelPoller&) = delete;

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace moss
