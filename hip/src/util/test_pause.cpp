#include "util/test_pause.h"

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/error.h"
#include "util/interrupt.h"
#include "util/numbers.h"

namespace moss {

void test_pause(const char* point) {
  const char* env = std::getenv("MOSSINFER_TEST_PAUSE");
  if (!env || !*env) return;
  const std::string setting = env;
  const size_t colon = setting.find(':');
  if (setting.substr(0, colon) != point) return;
  int64_t seconds = 30;
  if (colon != std::string::npos) {
    const ParsedInt p = parse_strict_int(setting.substr(colon + 1), 0, 3600);
    if (p.error != NumberError::None)
      throw usage_error("MOSSINFER_TEST_PAUSE='" + setting + "': seconds " + integer_problem(p, 0, 3600));
    seconds = p.value;
  }
  std::fprintf(stderr, "pause at %s\n", point);
  std::fflush(stderr);
  const timespec tick = {0, 10 * 1000 * 1000};
  for (int64_t waited = 0; waited < seconds * 100 && !pending_signal(); ++waited) nanosleep(&tick, nullptr);
}

}  // namespace moss
