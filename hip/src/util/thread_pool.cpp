#include "util/thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "util/cancel.h"
#include "util/error.h"
#include "util/numbers.h"

namespace moss {

// Far above any machine's hardware threads; only bounds what the parser accepts.
static constexpr int64_t kMaxThreadsSetting = 1 << 20;

HostThreads host_threads_from_env() {
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  HostThreads t;
  t.count = cores;
  const char* env = std::getenv("MOSSINFER_THREADS");
  if (!env || !*env) return t;  // unset or empty: the default
  const ParsedInt p = parse_strict_int(env, 1, kMaxThreadsSetting);
  if (p.error != NumberError::None)
    throw usage_error(std::string("MOSSINFER_THREADS='") + env + "': " + integer_problem(p, 1, kMaxThreadsSetting));
  t.count = int(p.value);
  if (t.count > cores) {
    t.note = "MOSSINFER_THREADS=" + std::to_string(t.count) + ": capped to " + std::to_string(cores) +
             " (the hardware threads of this machine)";
    t.count = cores;
  }
  return t;
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = host_threads_from_env().count;
  try {
    for (int i = 1; i < threads; ++i) workers_.emplace_back(&ThreadPool::worker, this, i);
  } catch (const std::system_error& e) {
    // The destructor does not run for a half-built pool: stop and join what started here,
    // or the joinable threads left in workers_ would end the process in std::terminate.
    const size_t started = workers_.size() + 1;
    stop_workers();
    throw failure("cannot start host thread " + std::to_string(started + 1) + " of " + std::to_string(threads) +
                  " (" + e.code().message() + "); set MOSSINFER_THREADS lower");
  }
}

void ThreadPool::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() { stop_workers(); }

static void chunk(int64_t n, int parts, int index, int64_t& b, int64_t& e) {
  b = n * index / parts;
  e = n * (index + 1) / parts;
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    const CancelFlag* cancel;
    int64_t n;
    int parts;
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      cancel = job_cancel_;
      n = job_n_;
      parts = job_parts_;
    }
    if (index < parts) {
      int64_t b, e;
      chunk(n, parts, index, b, e);
      CancelScope scope(cancel);  // the caller's job: its loops see its cancellation
      if (b < e) (*job)(b, e);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  int parts = int(std::min<int64_t>(size(), std::max<int64_t>(1, n / std::max<int64_t>(1, grain))));
  if (parts <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> turn(caller_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_cancel_ = current_cancel_flag();
    job_n_ = n;
    job_parts_ = parts;
    pending_ = int(workers_.size());
    ++generation_;
  }
  start_cv_.notify_all();
  int64_t b, e;
  chunk(n, parts, 0, b, e);
  if (b < e) fn(b, e);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool;
  return pool;
}

}  // namespace moss
