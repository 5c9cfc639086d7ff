// A small fixed thread pool for the host backend: parallel_for splits [0, n) into contiguous
// chunks, one per worker, and returns when all are done. Work is deterministic: the split
// depends only on n and the worker count, never on timing, and no op reduces across chunks.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moss {

class CancelFlag;  // util/cancel.h

// The worker count of the host backend: MOSSINFER_THREADS when set (through the strict number
// parser; a bad value is a usage error, exit 2), else the hardware threads. A count above the
// hardware threads is capped to them (more threads only add memory and switching), and
// `note` says so for the run to print.
struct HostThreads {
  int count = 1;
  std::string note;  // non-empty when MOSSINFER_THREADS was capped
};
HostThreads host_threads_from_env();

class ThreadPool {
 public:
  // 0: host_threads_from_env(). A thread that cannot be started is a moss::Error (exit 1)
  // naming the count, after the ones already started are stopped and joined.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_.size()) + 1; }
  // fn(begin, end) over contiguous chunks of [0, n); chunks are at least `grain` long.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

  static ThreadPool& global();

 private:
  void worker(int index);
  void stop_workers();
  std::vector<std::thread> workers_;
  // Callers from several threads (host engines side by side) take turns: the pool runs one
  // parallel_for at a time, each split as if it were alone.
  std::mutex caller_mu_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  const CancelFlag* job_cancel_ = nullptr;  // the caller's (util/cancel.h), for the workers
  int64_t job_n_ = 0;
  int job_parts_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace moss
