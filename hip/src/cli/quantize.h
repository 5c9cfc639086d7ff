// `moss-infer-hip quantize`: its flags (docs/int8_convrot.md section 6); the work is
// model/quantize_dit.h's.
#pragma once
#include <string>
#include <vector>

#include "model/quantize_dit.h"

namespace moss {

struct QuantizeArgs {
  QuantizeOptions options;
  bool help = false;
};

// --model DIR --out FILE [--format int8-convrot] [--group-size N] [--help]; a usage error (exit 2)
// names the flag: unknown, repeated, missing its value, a group size that is not an integer.
QuantizeArgs parse_quantize_args(const std::vector<std::string>& args);
std::string quantize_help_text();

// Parses, quantizes, prints one line of what it wrote; returns the exit status.
int quantize_command(const std::vector<std::string>& args);

}  // namespace moss
