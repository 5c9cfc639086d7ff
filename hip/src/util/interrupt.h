// Signal handling of a run. Every signal whose default action ends the process from outside
// (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGVTALRM,
// SIGPROF; interrupt.cpp says why the others are left alone) only records the signal; the run
// checks it between stages, steps and chunks of its writes, and unwinds normally (freeing
// device memory, removing its temporaries, writing nothing), then exits 128 + the signal: 130
// (SIGINT), 143 (SIGTERM), 129 (SIGHUP), 141 (SIGPIPE), 131 (SIGQUIT), 142 (SIGALRM), 138
// (SIGUSR1), 140 (SIGUSR2), 152 (SIGXCPU), 154 (SIGVTALRM), 155 (SIGPROF) on Linux x86-64 and
// arm64. The handlers are installed without SA_RESTART, so a blocking call returns EINTR and
// its caller reports the signal, not the EINTR. SIGXFSZ (a file-size limit) is ignored: the
// write then fails with EFBIG and is reported as a write error (exit 1) instead of killing the
// process mid-write. SIGKILL cannot be caught: its temporaries are removed by the next run
// writing to the folder (io/stale_temporaries.h).
#pragma once

namespace moss {

void install_interrupt_handlers();
// serve: as install_interrupt_handlers, except that the first SIGTERM asks for a graceful drain
// (drain_requested()) instead of an interrupt; a second SIGTERM, or SIGINT / SIGHUP at any time,
// is an interrupt as in a run (README "Stopping the server").
void install_server_signal_handlers();
bool drain_requested();
int pending_signal();      // 0 when none
void check_interrupted();  // throws moss::Error with exit status 128 + signal when one arrived
const char* signal_name(int sig);  // "SIGINT", ...

}  // namespace moss
