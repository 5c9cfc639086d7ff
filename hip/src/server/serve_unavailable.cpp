// A build without the server (hip/cmake/server.cmake): serve says why, and how to get one.
#include "server/serve.h"
#include "util/error.h"

namespace moss {

int serve_command(const std::vector<std::string>&) {
#if MOSSINFER_SERVER_ASKED_OFF
  throw usage_error(
      "serve: this build has no server: it was configured with -DMOSSINFER_SERVER=OFF; configure it "
      "again without that option (cpp-httplib: apt-get install libcpp-httplib-dev) to get one");
#else
  throw usage_error(
      "serve: this build has no server: it was built without cpp-httplib; install it "
      "(apt-get install libcpp-httplib-dev), then run cmake again and rebuild");
#endif
}

}  // namespace moss
