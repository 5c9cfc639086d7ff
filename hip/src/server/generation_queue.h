// One generation at a time: requests wait their turn in arrival order, a bounded number of them;
// a waiting request whose client went away leaves the queue; the running one can be interrupted
// (POST /sdapi/v1/interrupt) and sees that at its next step.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace moss {

struct QueuedJob {
  std::atomic<bool> interrupted{false};
  std::function<bool()> client_gone;  // polled while the job waits
};

class GenerationQueue {
 public:
  explicit GenerationQueue(size_t max_waiting) : max_waiting_(max_waiting) {}

  enum class Outcome { Ran, Full, ClientGone };
  // Runs work() when it is job's turn (exceptions pass through, the turn ends either way).
  Outcome run_in_turn(QueuedJob& job, const std::function<void()>& work);
  // Marks the running job interrupted; false when none runs.
  bool interrupt_running();
  size_t waiting() const;
  bool busy() const;

 private:
  const size_t max_waiting_;
  mutable std::mutex m_;
  std::condition_variable turn_;
  std::deque<QueuedJob*> waiting_;
  QueuedJob* running_ = nullptr;
};

}  // namespace moss
