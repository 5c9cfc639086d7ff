// The build found no cpp-httplib (Debian's libcpp-httplib-dev): serve says so.
#include "server/serve.h"
#include "util/error.h"

namespace moss {

int serve_command(const std::vector<std::string>&) {
  throw usage_error("serve: not available: this moss-infer-hip was built without cpp-httplib (libcpp-httplib-dev)");
}

}  // namespace moss
