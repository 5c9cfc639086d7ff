// A job's cancellation (util/cancel.h): the checkpoint throws Cancelled only for the job whose
// flag is set, and the host thread pool's workers see the flag of the thread that called
// parallel_for (their loops stop early; the caller's checkpoint throws).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>

#include "util/cancel.h"
#include "util/interrupt.h"
#include "util/thread_pool.h"

using namespace moss;

TEST(Cancel, CheckpointThrowsOnlyForTheFlaggedJob) {
  CancelFlag flag;
  EXPECT_NO_THROW(check_interrupted());  // no scope: nothing to cancel
  CancelScope scope(&flag);
  EXPECT_NO_THROW(check_interrupted());
  EXPECT_FALSE(cancel_requested());
  flag.request();
  EXPECT_TRUE(cancel_requested());
  EXPECT_THROW(check_interrupted(), Cancelled);
  {
    CancelFlag other;
    CancelScope inner(&other);  // another job on this thread: not cancelled
    EXPECT_NO_THROW(check_interrupted());
  }
  EXPECT_THROW(check_interrupted(), Cancelled);  // the outer scope's flag again
}

TEST(Cancel, PoolWorkersSeeTheCallersFlag) {
  ThreadPool pool(4);
  CancelFlag flag;
  CancelScope scope(&flag);
  auto seen = [&] {
    std::mutex m;
    std::set<bool> values;
    pool.parallel_for(4, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(m);
      values.insert(cancel_requested());
    });
    return values;
  };
  EXPECT_EQ(seen(), std::set<bool>{false});
  flag.request();
  EXPECT_EQ(seen(), std::set<bool>{true});
}

TEST(Cancel, PollerRequestsTheFlagWhenAsked) {
  CancelFlag flag;
  std::atomic<bool> gone{false};
  {
    CancelPoller poller(flag, [&] { return gone.load(); }, std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_FALSE(flag.requested());
    gone = true;
    for (int i = 0; i < 200 && !flag.requested(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(flag.requested());
  }
}
