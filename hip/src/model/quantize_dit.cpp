#include "model/quantize_dit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "io/files.h"
#include "io/model_folder.h"
#include "io/output_files.h"
#include "io/output_paths.h"
#include "io/safetensors.h"
#include "model/dit.h"
#include "model/int8_convrot_layers.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/thread_pool.h"

namespace moss {
namespace {

// Row r of a bf16 or f32 weight as f32.
void row_f32(const Tensor& w, int64_t r, float* dst) {
  const int64_t K = w.cols();
  if (w.dtype == DType::BF16) {
    const uint16_t* src = w.ptr<const uint16_t>() + r * K;
    for (int64_t k = 0; k < K; ++k) dst[k] = bf16_to_f32(src[k]);
  } else {
    std::copy_n(w.ptr<const float>() + r * K, K, dst);
  }
}

// One entry of the output: a tensor copied as it is, or one of a quantized layer's three.
struct OutputTensor {
  TensorInfo info;
  const QuantizedDitLayer* layer = nullptr;  // null: copied from the source tensor info.name
  enum class Part { Copy, Weight, Scale, Record } part = Part::Copy;
};

// The quantized layer's int8 rows and scales, [rows, K] and [rows], the rows threaded over the
// host pool (each row on its own: the same bytes for any split); throws naming the source tensor
// and the first row holding a non-finite value.
void quantize_layer(const WeightFiles& weights, const QuantizedDitLayer& layer, int64_t group, std::vector<int8_t>& q,
                    std::vector<float>& scales) {
  q.clear();
  scales.clear();
  for (const std::string& src : layer.sources) {
    const Tensor w = weights.get(src);
    if (w.dtype != DType::BF16 && w.dtype != DType::F32)
      throw usage_error(weights.file_of(src) + ": " + src + ": dtype " + dtype_name(w.dtype) + " is not bf16 or f32");
    const int64_t rows = w.rows(), K = w.cols();
    const size_t first_row = scales.size();
    q.resize(q.size() + size_t(rows * K));
    scales.resize(first_row + size_t(rows));
    int8_t* qs = q.data() + first_row * size_t(K);
    float* ss = scales.data() + first_row;
    ThreadPool::global().parallel_for(rows, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(K));
      for (int64_t r = r0; r < r1; ++r) {
        if (pending_signal()) return;  // checked below, on this thread
        row_f32(w, r, row.data());
        convrot::rotate_groups(row.data(), K, group);
        ss[r] = convrot::quantize_row(row.data(), K, qs + r * K);
      }
    }, 16);
    check_interrupted();
    for (int64_t r = 0; r < rows; ++r)
      if (std::isnan(ss[r]))
        throw failure(weights.file_of(src) + ": " + src + ": row " + std::to_string(r) +
                      " holds a NaN or an infinity; refusing to quantize it");
  }
}

}  // namespace

QuantizeReport quantize_dit(const QuantizeOptions& o) {
  if (o.format != "int8-convrot")
    throw usage_error("--format '" + o.format + "': unknown quantization format (supported: int8-convrot)");
  if (!convrot::valid_group_size(o.group_size))
    throw usage_error("--group-size " + std::to_string(o.group_size) +
                      ": the rotation group must be a power of 4 (4, 16, 64, 256, ...)");
  check_output_path(o.out, "--out");
  if (!dir_exists(o.model)) throw usage_error("--model " + o.model + ": not a folder");
  const std::string folder = o.model + "/transformer";
  if (!dir_exists(folder)) throw failure(o.model + ": missing component folder 'transformer'");
  const DitConfig cfg = parse_dit_config(folder + "/config.json");
  const std::vector<QuantizedDitLayer> layers = int8_convrot_dit_layers(cfg);
  const std::vector<ExpectedTensor> expected = dit_expected_tensors(cfg);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const ExpectedTensor& e : expected) shapes[e.name] = e.shape;
  // Every layer's input width, from the config, before a byte of weights is read.
  for (const QuantizedDitLayer& l : layers) {
    const int64_t width = shapes.at(l.sources[0]).at(1);
    if (width % o.group_size != 0)
      throw usage_error("--group-size " + std::to_string(o.group_size) + " does not divide the input width " +
                        std::to_string(width) + " of " + l.name + " (the group must divide every quantized layer's width)");
  }
  const WeightFiles weights = WeightFiles::open_folder(folder);
  for (const std::string& name : weights.names())
    if (ends_with(name, ".comfy_quant"))
      throw usage_error(weights.file_of(name) + ": " + name + ": this DiT is already quantized; quantize reads the bf16 weights");
  check_tensors(weights, expected);  // any other non-float weight is refused here (exit 2)

  // The output's tensors in order: the input's names sorted, each quantized layer's three in the
  // place of its first source.
  std::map<std::string, const QuantizedDitLayer*> first_source;
  std::set<std::string> consumed;
  for (const QuantizedDitLayer& l : layers) {
    first_source[l.sources[0]] = &l;
    consumed.insert(l.sources.begin(), l.sources.end());
  }
  const std::string record = convrot::comfy_quant_json(o.group_size);
  std::vector<OutputTensor> outputs;
  for (const std::string& name : weights.names()) {
    auto it = first_source.find(name);
    if (it != first_source.end()) {
      const QuantizedDitLayer* l = it->second;
      int64_t rows = 0;
      for (const std::string& s : l->sources) rows += weights.info(s).shape.at(0);
      const int64_t width = weights.info(name).shape.at(1);
      outputs.push_back({{l->name + ".weight", DType::I8, "I8", {rows, width}}, l, OutputTensor::Part::Weight});
      outputs.push_back({{l->name + ".weight_scale", DType::F32, "F32", {rows, 1}}, l, OutputTensor::Part::Scale});
      outputs.push_back(
          {{l->name + ".comfy_quant", DType::U8, "U8", {int64_t(record.size())}}, l, OutputTensor::Part::Record});
    } else if (!consumed.count(name)) {
      outputs.push_back({weights.info(name), nullptr, OutputTensor::Part::Copy});
    }
  }
  std::vector<TensorInfo> infos;
  for (const OutputTensor& t : outputs) infos.push_back(t.info);

  StreamedOutputFile file(o.out);
  const std::string header = safetensors_header(infos);
  file.append(header.data(), header.size());
  QuantizeReport report;
  const QuantizedDitLayer* current = nullptr;  // the layer whose rows and scales are held
  std::vector<int8_t> q;
  std::vector<float> scales;
  for (const OutputTensor& t : outputs) {
    check_interrupted();
    switch (t.part) {
      case OutputTensor::Part::Copy: {
        const Tensor src = weights.get(t.info.name);
        file.append(src.data, src.nbytes());
        ++report.copied_tensors;
        break;
      }
      case OutputTensor::Part::Weight:
        if (current != t.layer) {
          quantize_layer(weights, *t.layer, o.group_size, q, scales);
          current = t.layer;
          ++report.quantized_layers;
        }
        file.append(q.data(), q.size());
        break;
      case OutputTensor::Part::Scale: file.append(scales.data(), scales.size() * sizeof(float)); break;
      case OutputTensor::Part::Record: file.append(record.data(), record.size()); break;
    }
  }
  file.commit();
  report.bytes = file.written();
  return report;
}

}  // namespace moss
