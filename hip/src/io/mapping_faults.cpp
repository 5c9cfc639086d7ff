#include "io/mapping_faults.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace moss {
namespace {

// A fixed table the handler can read without locks or allocation: a slot is claimed through
// `state`, filled, then published by storing `base` last. A model has a handful of weight
// files (tens with shards); a mapping beyond the table's size is still reported, unnamed.
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 claimed
  std::atomic<const char*> base{nullptr};
  size_t size = 0;
  char path[1024] = {};
};
constexpr int kSlots = 256;
Slot g_slots[kSlots];

void say(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= size_t(w);
  }
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  const char* addr = static_cast<const char*>(info->si_addr);
  for (Slot& s : g_slots) {
    const char* base = s.base.load(std::memory_order_acquire);
    if (base && addr >= base && addr < base + s.size) {
      say("moss-infer-hip: ");
      say(s.path);
      say(": changed or truncated while in use (SIGBUS reading its mapping)\n");
      _exit(1);
    }
  }
  // Not one of ours: the default action, as if no handler were installed.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void install_mapping_fault_handler() {
  struct sigaction sa = {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, nullptr);
}

void register_mapping(const void* base, size_t size, const std::string& path) {
  for (Slot& s : g_slots) {
    int expected = 0;
    if (!s.state.compare_exchange_strong(expected, 1)) continue;
    s.size = size;
    std::string shown = path.size() < sizeof s.path ? path : "..." + path.substr(path.size() - sizeof s.path + 4);
    std::memcpy(s.path, shown.c_str(), shown.size() + 1);
    s.base.store(static_cast<const char*>(base), std::memory_order_release);
    return;
  }
}

void unregister_mapping(const void* base) {
  for (Slot& s : g_slots) {
    if (s.base.load(std::memory_order_acquire) != base) continue;
    s.base.store(nullptr, std::memory_order_release);
    s.state.store(0, std::memory_order_release);
    return;
  }
}

}  // namespace moss
