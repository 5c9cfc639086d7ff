#include "util/interrupt.h"

#include <csignal>
#include <string>

#include "util/error.h"

namespace moss {

static volatile std::sig_atomic_t g_signal = 0;

// The first signal decides the exit status; a second one while the run unwinds changes nothing.
static void on_signal(int sig) {
  if (!g_signal) g_signal = sig;
}

void install_interrupt_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int pending_signal() { return int(g_signal); }

void check_interrupted() {
  int sig = pending_signal();
  if (sig) throw Error(ExitCode(128 + sig), std::string("interrupted by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM"));
}

}  // namespace moss
