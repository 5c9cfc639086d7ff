// moss-check: the one check program. Each check is a subcommand in a file of its own that
// registers itself with CHECK_SUBCOMMAND (the arguments after the subcommand's name; a GPU
// check constructs its check::Registrar with needs_device true). Every
// subcommand prints its cases and a final line "N passed, M failed" and returns 0 only when every
// case passed (2: bad option, 1: unreadable input).
// The subcommands that need a GPU are built only into device builds (CMake adds the .hip files).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "golden_compare.h"  // rel_l2, cosine, max_abs_diff, Tally, report, flag

namespace check {

using Command = std::function<int(const std::vector<std::string>& args)>;
struct Subcommand {
  std::string usage;
  Command run;
  bool needs_device = false;
};
std::map<std::string, Subcommand>& registry();

struct Registrar {
  Registrar(const char* name, const char* usage, Command run, bool needs_device = false) {
    registry()[name] = {usage, std::move(run), needs_device};
  }
};

}  // namespace check

#define CHECK_SUBCOMMAND(name, usage, fn) static ::check::Registrar check_registrar_##fn(name, usage, fn)
