#include "util/cancel.h"

#include "util/interrupt.h"

namespace moss {

static thread_local const CancelFlag* t_flag = nullptr;

const CancelFlag* current_cancel_flag() { return t_flag; }

CancelScope::CancelScope(const CancelFlag* flag) : previous_(t_flag) { t_flag = flag; }
CancelScope::~CancelScope() { t_flag = previous_; }

bool cancel_requested() { return pending_signal() != 0 || (t_flag && t_flag->requested()); }

void throw_if_cancelled() {
  if (t_flag && t_flag->requested()) throw Cancelled();
}

CancelPoller::CancelPoller(CancelFlag& flag, std::function<bool()> should_cancel, std::chrono::milliseconds period) {
  thread_ = std::thread([this, &flag, should_cancel = std::move(should_cancel), period] {
    std::unique_lock<std::mutex> lock(m_);
    while (!done_ && !flag.requested()) {
      if (cv_.wait_for(lock, period, [&] { return done_; })) break;
      if (should_cancel()) flag.request();
    }
  });
}

CancelPoller::~CancelPoller() {
  {
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace moss
