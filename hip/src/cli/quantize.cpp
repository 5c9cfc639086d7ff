#include "cli/quantize.h"

#include <cstdio>
#include <set>

#include "io/mapping_faults.h"
#include "io/standard_streams.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/numbers.h"

namespace moss {

std::string quantize_help_text() {
  return "usage: moss-infer-hip quantize --model DIR --out FILE.safetensors [--format int8-convrot] [--group-size N]\n"
         "\n"
         "Writes the model folder's DiT as one INT8 ConvRot safetensors file in ComfyUI's layout\n"
         "(docs/int8_convrot.md): each main block's qkv, o, ffn_up_gate and ffn_down as I8 weights\n"
         "rotated by a block Hadamard over groups of N input features, per-row scales and comfy_quant\n"
         "records; every other tensor as it is.\n"
         "\n"
         "  --model DIR        the model folder (its transformer/ is read)\n"
         "  --out FILE         the file to write (appears only when complete)\n"
         "  --format F         int8-convrot (the only one)\n"
         "  --group-size N     the rotation group, a power of 4 dividing every quantized layer's\n"
         "                     input width (default 256; the tiny test models need 64)\n";
}

QuantizeArgs parse_quantize_args(const std::vector<std::string>& args) {
  QuantizeArgs a;
  std::set<std::string> seen;
  bool has_model = false, has_out = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool inline_value = false;
    const size_t eq = flag.find('=');
    if (flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      a.help = true;
      continue;
    }
    if (flag != "--model" && flag != "--out" && flag != "--format" && flag != "--group-size")
      throw usage_error("quantize: unknown argument '" + args[i] + "' (moss-infer-hip quantize --help)");
    if (!seen.insert(flag).second) throw usage_error("quantize: " + flag + " given twice");
    if (!inline_value) {
      if (i + 1 >= args.size()) throw usage_error("quantize: " + flag + " needs a value");
      value = args[++i];
    }
    if (flag == "--model") {
      a.options.model = value;
      has_model = true;
    } else if (flag == "--out") {
      a.options.out = value;
      has_out = true;
    } else if (flag == "--format") {
      a.options.format = value;
    } else {
      constexpr int64_t kMaxGroup = int64_t(1) << 30;
      const ParsedInt p = parse_strict_int(value, 1, kMaxGroup);
      if (p.error != NumberError::None) throw usage_error("--group-size '" + value + "': " + integer_problem(p, 1, kMaxGroup));
      a.options.group_size = p.value;
    }
  }
  if (a.help) return a;
  if (!has_model) throw usage_error("quantize: --model DIR is required");
  if (!has_out) throw usage_error("quantize: --out FILE is required");
  return a;
}

int quantize_command(const std::vector<std::string>& args) {
  const QuantizeArgs a = parse_quantize_args(args);
  if (a.help) {
    std::fputs(quantize_help_text().c_str(), stdout);
    finish_stdout();
    return 0;
  }
  install_interrupt_handlers();
  install_mapping_fault_handler();
  const QuantizeReport r = quantize_dit(a.options);
  std::printf("%s: %d layers quantized (int8-convrot, group %lld), %d tensors copied, %llu bytes\n",
              a.options.out.c_str(), r.quantized_layers, (long long)a.options.group_size, r.copied_tensors,
              (unsigned long long)r.bytes);
  finish_stdout();
  return 0;
}

}  // namespace moss
