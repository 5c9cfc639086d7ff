// moss-infer-hip serve: the AUTOMATIC1111-compatible local HTTP server (README "The server").
#pragma once
#include <string>
#include <vector>

namespace moss {

// args: what follows "serve" on the command line. Returns the exit status (0 after SIGTERM's
// drain finished; 143 / 130 / 129 after a second SIGTERM or a drain past --drain-seconds, SIGINT,
// SIGHUP); user-facing problems arrive as moss::Error.
int serve_command(const std::vector<std::string>& args);

}  // namespace moss
