// GET / of `serve`: the web page (web/index.html), a self-contained HTML file compiled into the
// binary (hip/cmake/embed_file.cmake), which makes images through the A1111 routes.
#pragma once
#include "server/guarded_server.h"

namespace moss {

void install_web_page(GuardedServer& server);

}  // namespace moss
