// moss-infer-hip serve: the AUTOMATIC1111-compatible local HTTP server (README "The server").
#pragma once
#include <string>
#include <vector>

namespace moss {

// args: what follows "serve" on the command line. Returns the exit status (0 after a clean
// stop; 130 / 143 after SIGINT / SIGTERM); user-facing problems arrive as moss::Error.
int serve_command(const std::vector<std::string>& args);

}  // namespace moss
