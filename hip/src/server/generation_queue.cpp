#include "server/generation_queue.h"

#include <algorithm>
#include <chrono>

namespace moss {

GenerationQueue::Outcome GenerationQueue::run(const std::shared_ptr<Job>& job) {
  auto entry = std::make_shared<Entry>();
  entry->job = job;
  std::unique_lock<std::mutex> lock(m_);
  if (closed_) {
    last_closed_refusal_ = std::chrono::steady_clock::now();
    return Outcome::Closed;
  }
  if (!has_room_locked()) return Outcome::Full;
  waiting_.push_back(entry);
  changed_.notify_all();
  // The client is polled (its socket peeked at) while the request waits and while it runs: a
  // waiting one leaves the queue, a running one is cancelled and ends at its next step.
  while (!entry->finished) {
    changed_.wait_for(lock, std::chrono::milliseconds(100));
    if (entry->finished || !job->client_gone || job->cancelled) continue;
    lock.unlock();
    const bool gone = job->client_gone();
    lock.lock();
    if (!gone || entry->finished) continue;
    const auto it = std::find(waiting_.begin(), waiting_.end(), entry);
    if (it != waiting_.end()) {
      waiting_.erase(it);
      changed_.notify_all();
      return Outcome::ClientGone;
    }
    job->cancelled = true;
  }
  if (entry->dropped) return Outcome::Closed;
  if (entry->error) std::rethrow_exception(entry->error);
  return Outcome::Ran;
}

void GenerationQueue::serve(size_t engine) {
  for (;;) {
    std::shared_ptr<Entry> entry;
    {
      std::unique_lock<std::mutex> lock(m_);
      changed_.wait(lock, [&] { return engines_stopped_ || !waiting_.empty(); });
      if (engines_stopped_) return;
      entry = waiting_.front();
      waiting_.pop_front();
      entry->job->engine = int(engine);
      running_[engine] = entry;
    }
    std::exception_ptr error;
    try {
      entry->job->work(engine);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(m_);
    running_[engine] = nullptr;
    entry->error = error;
    entry->finished = true;
    changed_.notify_all();
  }
}

void GenerationQueue::close() {
  std::lock_guard<std::mutex> lock(m_);
  closed_ = true;
  last_closed_refusal_ = std::chrono::steady_clock::now();
}

void GenerationQueue::abort() {
  std::lock_guard<std::mutex> lock(m_);
  closed_ = true;
  for (const std::shared_ptr<Entry>& e : waiting_) e->finished = e->dropped = true;
  waiting_.clear();
  changed_.notify_all();
}

void GenerationQueue::stop_engines() {
  std::lock_guard<std::mutex> lock(m_);
  engines_stopped_ = true;
  changed_.notify_all();
}

std::chrono::steady_clock::time_point GenerationQueue::last_closed_refusal() const {
  std::lock_guard<std::mutex> lock(m_);
  return last_closed_refusal_;
}

bool GenerationQueue::closed() const {
  std::lock_guard<std::mutex> lock(m_);
  return closed_;
}

bool GenerationQueue::has_room_locked() const {
  const size_t free_engines = size_t(std::count(running_.begin(), running_.end(), nullptr));
  return !closed_ && waiting_.size() < capacity_ + free_engines;
}

bool GenerationQueue::has_room() const {
  std::lock_guard<std::mutex> lock(m_);
  return has_room_locked();
}

bool GenerationQueue::idle() const {
  std::lock_guard<std::mutex> lock(m_);
  return waiting_.empty() && std::all_of(running_.begin(), running_.end(), [](const auto& e) { return !e; });
}

size_t GenerationQueue::waiting() const {
  std::lock_guard<std::mutex> lock(m_);
  return waiting_.size();
}

std::vector<int> GenerationQueue::running_per_engine() const {
  std::lock_guard<std::mutex> lock(m_);
  std::vector<int> n;
  for (const auto& e : running_) n.push_back(e ? 1 : 0);
  return n;
}

int GenerationQueue::interrupt_running() {
  std::lock_guard<std::mutex> lock(m_);
  int n = 0;
  for (const auto& e : running_)
    if (e) {
      e->job->interrupted = true;
      ++n;
    }
  return n;
}

std::shared_ptr<const Job> GenerationQueue::oldest_running() const {
  std::lock_guard<std::mutex> lock(m_);
  std::shared_ptr<const Job> oldest;
  double oldest_start = 0;
  for (const auto& e : running_) {
    if (!e) continue;
    std::lock_guard<std::mutex> p(e->job->progress_mutex);
    if (!oldest || e->job->progress.started < oldest_start) {
      oldest = e->job;
      oldest_start = e->job->progress.started;
    }
  }
  return oldest;
}

}  // namespace moss
