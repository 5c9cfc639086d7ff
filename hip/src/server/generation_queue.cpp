#include "server/generation_queue.h"

#include <algorithm>
#include <chrono>

namespace moss {

GenerationQueue::Outcome GenerationQueue::run_in_turn(QueuedJob& job, const std::function<void()>& work) {
  {
    std::unique_lock<std::mutex> lock(m_);
    if (waiting_.size() >= max_waiting_) return Outcome::Full;
    waiting_.push_back(&job);
    while (running_ || waiting_.front() != &job) {
      turn_.wait_for(lock, std::chrono::milliseconds(100));
      if ((running_ || waiting_.front() != &job) && job.client_gone && job.client_gone()) {
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &job));
        turn_.notify_all();
        return Outcome::ClientGone;
      }
    }
    waiting_.pop_front();
    running_ = &job;
  }
  auto finish = [&] {
    std::lock_guard<std::mutex> lock(m_);
    running_ = nullptr;
    turn_.notify_all();
  };
  try {
    work();
  } catch (...) {
    finish();
    throw;
  }
  finish();
  return Outcome::Ran;
}

bool GenerationQueue::interrupt_running() {
  std::lock_guard<std::mutex> lock(m_);
  if (!running_) return false;
  running_->interrupted = true;
  return true;
}

size_t GenerationQueue::waiting() const {
  std::lock_guard<std::mutex> lock(m_);
  return waiting_.size();
}

bool GenerationQueue::busy() const {
  std::lock_guard<std::mutex> lock(m_);
  return running_ != nullptr;
}

}  // namespace moss
