#include "util/random_seed.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.h"

namespace moss {

uint64_t draw_random_seed() {
  uint32_t seed = 0;
  unsigned char* p = reinterpret_cast<unsigned char*>(&seed);
  size_t got = 0;
  while (got < sizeof seed) {
    const ssize_t n = getrandom(p + got, sizeof seed - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;  // a signal before the pool is ready: the run checks it later
      throw failure(std::string("cannot draw a random seed (getrandom: ") + std::strerror(errno) + ")");
    }
    got += size_t(n);
  }
  return seed;
}

}  // namespace moss
