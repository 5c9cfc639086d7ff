#include "util/interrupt.h"

#include <csignal>
#include <string>

#include "util/cancel.h"
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
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaction(sig, &sa, nullptr);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, nullptr);
}

int pending_signal() { return int(g_signal); }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
  }
}

void check_interrupted() {
  int sig = pending_signal();
  if (sig) throw Error(ExitCode(128 + sig), std::string("interrupted by ") + signal_name(sig));
  throw_if_cancelled();  // the job's own cancellation (util/cancel.h)
}

}  // namespace moss
