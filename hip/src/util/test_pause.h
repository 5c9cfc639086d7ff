// A hook for the signal tests: MOSSINFER_TEST_PAUSE=POINT[:SECONDS] makes a run stop at the
// stage boundary named POINT, print "pause at POINT" on stderr and wait SECONDS (default 30)
// or until a signal arrives, then go on. A test waits for the line and sends its signal
// exactly there, instead of guessing from timings. Unset (always, outside tests), a pause
// point costs one getenv.
//
// Points, in run order: start, model, text-encoder, dit, denoise, vae, write (after each
// output's temporary is written), rename (before the outputs are renamed into place).
#pragma once

namespace moss {

void test_pause(const char* point);

}  // namespace moss
