// SIGINT / SIGTERM handling: the handler only records the signal; the run checks it between
// stages and steps and unwinds normally (freeing device memory, writing nothing), then exits
// 130 (SIGINT) or 143 (SIGTERM).
#pragma once

namespace moss {

void install_interrupt_handlers();
int pending_signal();      // 0 when none
void check_interrupted();  // throws moss::Error with exit status 128 + signal when one arrived

}  // namespace moss
