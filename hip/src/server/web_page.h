// GET / of `serve`: the web page (web/index.html), a self-contained HTML file compiled into the
// binary (hip/cmake/embed_file.cmake), which makes images through the A1111 routes; its fields'
// placeholders show the server's defaults (`defaults`: serve's request settings).
#pragma once
#include "pipeline/request.h"
#include "server/guarded_server.h"

namespace moss {

void install_web_page(GuardedServer& server, const GenerationRequest& defaults);

}  // namespace moss
