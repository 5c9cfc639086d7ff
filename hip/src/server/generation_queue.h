// The server's one queue in front of its engines (one per device): requests wait in arrival
// order, at most `capacity` of them; each engine's thread takes the oldest when it is free
// (README "Several devices"). A waiting request whose client went away leaves the queue; a
// running one is cancelled. A drain closes the queue to new requests and lets it empty.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace moss {

// Where a running request is, as GET /sdapi/v1/progress reports it (server/a1111_progress.cpp).
struct JobProgress {
  int images = 0;          // of the request: A1111's job_count
  int image = 0;           // the one being made, 0-based: A1111's job_no
  int step = 0, steps = 0; // denoise steps of that image done, and its steps (steps == step once it decodes)
  std::string stage;       // "text_encoder", "dit_load", "denoise", "vae"
  double started = 0;      // steady-clock seconds when the request started running
  std::string timestamp;   // A1111's job_timestamp
  double estimated_total_s = 0;  // the request's time, estimated when its share done last moved
};

// What a job's work throws when it sees `cancelled` (its client went away).
struct JobCancelled {};

struct Job {
  std::function<void(size_t engine)> work;  // runs on the engine's own thread
  std::function<bool()> client_gone;        // polled while the request is in the queue or runs
  std::atomic<bool> interrupted{false};     // POST /interrupt: end the current image early, skip the rest
  std::atomic<bool> cancelled{false};       // the client went away: stop at the next step
  // What the running request's progress hook writes and /progress reads.
  mutable std::mutex progress_mutex;
  JobProgress progress;
  int engine = -1;  // set when it starts running
};

class GenerationQueue {
 public:
  // capacity: requests that may wait for a busy engine (serve --queue); a request that finds an
  // engine free never counts as waiting.
  GenerationQueue(size_t capacity, size_t engines) : capacity_(capacity), running_(engines) {}

  enum class Outcome { Ran, Full, Closed, ClientGone };
  // Queues job and waits for its end (the calling thread is the request's): Full or Closed
  // without running it (Closed also for a waiting one that abort() dropped); ClientGone when
  // its client left while it waited. An exception of job.work passes through.
  Outcome run(const std::shared_ptr<Job>& job);

  // The loop of engine `engine`'s thread: runs jobs until abort() (or stop_engines()).
  void serve(size_t engine);

  void close();         // a drain: new requests get Closed; the queued ones still run
  void abort();         // a stop: close, and the waiting requests end with an error
  void stop_engines();  // serve() returns once its running job is done
  bool closed() const;
  // When the queue last turned someone away while closed: the later of close() and the latest
  // request refused as Closed since (the drain stays until the balancer has stopped sending).
  std::chrono::steady_clock::time_point last_closed_refusal() const;
  bool idle() const;    // nothing waits, nothing runs
  bool has_room() const;  // open, and a request now would not be refused as Full

  size_t capacity() const { return capacity_; }
  size_t waiting() const;
  std::vector<int> running_per_engine() const;  // 0 or 1 for each engine
  // Marks every running request interrupted; returns how many.
  int interrupt_running();
  // The request that has run longest, or null (what /progress reports).
  std::shared_ptr<const Job> oldest_running() const;

 private:
  struct Entry {
    std::shared_ptr<Job> job;
    bool finished = false, dropped = false;
    std::exception_ptr error;
  };
  bool has_room_locked() const;
  const size_t capacity_;
  mutable std::mutex m_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<Entry>> waiting_;
  std::vector<std::shared_ptr<Entry>> running_;
  bool closed_ = false, engines_stopped_ = false;
  std::chrono::steady_clock::time_point last_closed_refusal_{};
};

}  // namespace moss
