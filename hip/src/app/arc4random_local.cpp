// arc4random for the statically linked libstdc++ (MOSSINFER_STATIC_LIBSTDCXX, the release):
// std::runtime_error's copy-on-write strings pull libstdc++ 12's cow-string-inst.o, which pulls
// random.o, whose std::random_device calls glibc 2.36's arc4random. The program never uses
// std::random_device (seeds: util/random_seed.cpp), but the import alone would make the binary
// refuse to start on glibc 2.35 (Ubuntu 22.04; docs/amd_release.md). Linked into the executable
// itself, this definition binds that reference here, through getrandom(2) (glibc 2.25).
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" uint32_t arc4random(void) noexcept {
  uint32_t v = 0;
  unsigned char* p = reinterpret_cast<unsigned char*>(&v);
  size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = getrandom(p + got, sizeof v - got, 0);
    if (n > 0) got += size_t(n);
    else if (n < 0 && errno != EINTR) std::abort();  // no entropy source: nothing sensible to return
  }
  return v;
}
