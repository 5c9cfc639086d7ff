// A build without the server (MOSSINFER_SERVER=OFF: no cpp-httplib, or MOSSINFER_STATIC_DEPS, the
// release build): serve says so.
#include "server/serve.h"
#include "util/error.h"

namespace moss {

int serve_command(const std::vector<std::string>&) {
  throw usage_error(
      "serve: this build has no server (built with MOSSINFER_SERVER=OFF: without cpp-httplib, as the "
      "statically linked release build is); build from source with libcpp-httplib-dev installed to get it");
}

}  // namespace moss
