#include "io/standard_streams.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/input_text.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {
namespace {

bool g_closed[3] = {false, false, false};

}  // namespace

void guard_standard_streams() {
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    g_closed[fd] = true;
    const int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    // open() returns the lowest free number, which is fd itself when the lower ones are open.
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
}

std::string read_stdin(const std::string& what, size_t limit) {
  if (g_closed[0]) throw failure(what + ": stdin is closed");
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(0, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      check_interrupted();  // one of our signals: its status; any other: read on
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdin: wait for data
      pollfd p = {0, POLLIN, 0};
      ::poll(&p, 1, -1);
      check_interrupted();
      continue;
    }
    if (n < 0) throw failure(what + ": cannot read stdin (" + std::strerror(errno) + ")");
    if (n == 0) break;
    if (text.size() + size_t(n) > limit)
      throw usage_error(what + ": stdin holds more than " + size_text(limit) + ", the limit");
    text.append(buf, size_t(n));
  }
  return text;
}

void finish_stdout() {
  if (g_closed[1]) throw failure("cannot write the output: stdout is closed");
  // A text longer than stdout's buffer (--help) was partly written before this flush: the write
  // that failed then left its errno (the callers clear errno before printing), the flush none.
  const int earlier = errno;
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno ? errno : earlier;
  if (!flushed || std::ferror(stdout))
    throw failure(std::string("cannot write the output to stdout (") + std::strerror(err ? err : EIO) + ")");
}

}  // namespace moss
