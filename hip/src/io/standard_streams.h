// stdin, stdout and stderr as inputs and outputs that can fail (issue 35).
//
// A closed standard descriptor is a trap: the next file the program opens takes its number, so
// a PNG temporary opened as descriptor 2 would receive the progress lines. guard_standard_streams
// (first thing in main) opens /dev/null in the place of each closed one and remembers which
// were closed, so reading a closed stdin and printing to a closed stdout are still errors.
#pragma once
#include <cstddef>
#include <string>

namespace moss {

void guard_standard_streams();

// All of stdin, for `what` (e.g. "--prompt-file -"). Throws moss::Error naming `what`: exit 1
// when stdin is closed or a read fails (a directory, EIO, ...), exit 2 when it holds more than
// `limit` bytes (reading stops there: /dev/zero costs `limit`, not all memory). A signal
// that stops the run while it waits gives its status (util/interrupt.h).
std::string read_stdin(const std::string& what, size_t limit);

// Flushes stdout after a printing command (--version, --help, --list-devices): throws moss::Error
// (exit 1) when stdout was closed or the output could not be written (/dev/full, a full disk).
void finish_stdout();

}  // namespace moss
