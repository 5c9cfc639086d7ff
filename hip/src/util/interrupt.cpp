#include "util/interrupt.h"

#include <csignal>
#include <string>

#include "util/cancel.h"
#include "util/error.h"

namespace moss {
namespace {

volatile std::sig_atomic_t g_signal = 0;

volatile std::sig_atomic_t g_drain_on_sigterm = 0, g_drain = 0;

// The first signal decides the exit status; a second one while the run unwinds changes nothing.
// A server's first SIGTERM is a drain request instead (a deployment's "stop taking work").
void on_signal(int sig) {
  if (sig == SIGTERM && g_drain_on_sigterm && !g_drain && !g_signal) {
    g_drain = 1;
    return;
  }
  if (!g_signal) g_signal = sig;
}

struct Stopping {
  int sig;
  const char* name;
};
// Every signal whose default action ends the process, less the ones raised by a fault of the
// program itself (SEGV, BUS, FPE, ILL, ABRT, SYS, TRAP: the process cannot go on after them)
// and SIGXFSZ (ignored, below). SIGQUIT's default would also dump core; here it stops the run
// like the others. SIGALRM, SIGVTALRM and SIGPROF are sent by timers this program never sets,
// so one arriving comes from outside and means "stop".
const Stopping kStopping[] = {
    {SIGINT, "SIGINT"},   {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"},       {SIGPIPE, "SIGPIPE"},
    {SIGQUIT, "SIGQUIT"}, {SIGALRM, "SIGALRM"}, {SIGUSR1, "SIGUSR1"},     {SIGUSR2, "SIGUSR2"},
    {SIGXCPU, "SIGXCPU"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"},
};

}  // namespace

void install_server_signal_handlers() {
  g_drain_on_sigterm = 1;
  install_interrupt_handlers();
}

bool drain_requested() { return g_drain != 0; }

void install_interrupt_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (const Stopping& s : kStopping) sigaction(s.sig, &sa, nullptr);
  struct sigaction ignore = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGXFSZ, &ignore, nullptr);
}

int pending_signal() { return int(g_signal); }

const char* signal_name(int sig) {
  for (const Stopping& s : kStopping)
    if (s.sig == sig) return s.name;
  return "a signal";
}

void check_interrupted() {
  int sig = pending_signal();
  if (sig) throw Error(ExitCode(128 + sig), std::string("interrupted by ") + signal_name(sig));
  throw_if_cancelled();  // the job's own cancellation (util/cancel.h)
}

}  // namespace moss
