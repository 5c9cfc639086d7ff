// A block's weights as a streamer moves them: the "image" of one text-encoder layer or one DiT
// block. Both models stream their blocks the same way (host memory -> device slot, on the copy
// stream, while the block before computes), so the layout, the pinned host copy, the copies and
// the optional lossless packing are written once here; model/te_streaming.cpp and
// model/dit_streaming.cpp only decide which block goes where and when.
//
// Layout of an image, in order:
//  - the raw region, laid out exactly as the device slot holds it: first the groups of tensors
//    that one GEMM reads as one stacked weight (the text encoder's fused projections), back to
//    back so the stack is a view; then every other raw tensor; each group or tensor starts at a
//    256-byte offset (kImageAlign: as aligned as a fresh device allocation, which is what the
//    kernels were written against);
//  - the packed region (DiT only): the packings of the large bf16 tensors (tensor/packed_bf16.h,
//    12 bits a value instead of 16), each at a 256-byte offset. They cross the bus into a device
//    staging buffer and are unpacked into their place in the slot, after the raw tensors, just
//    before the block runs: a streamed step is bound by the host-to-device bus.
// Offsets depend only on the tensors' order, shapes and packings, so the same weights give the
// same image every run, and slot_bytes() is what a device slot for the block must hold.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "tensor/packed_bf16.h"

namespace moss {

constexpr size_t kImageAlign = 256;
// Threads that copy one large image from the mapping, at most (page-cache reads scale with
// threads).
constexpr size_t kImageFillThreads = 8;
inline size_t image_aligned(size_t bytes) { return (bytes + kImageAlign - 1) / kImageAlign * kImageAlign; }

// Whether a tensor of `values` values of `dtype` may travel packed (bf16, at least min_values,
// a count the packing handles), and the packed size it must not exceed to be worth it (13 bits
// a value: exceptions under about 2%); otherwise it travels raw.
bool pack_candidate(DType dtype, int64_t values, int64_t min_values);
inline size_t packed_cap(int64_t values) { return size_t(values) * 13 / 8; }

class BlockImage {
 public:
  struct Part {
    std::string name;      // full checkpoint name
    Tensor host;           // the tensor in the mmap'd files
    size_t offset = 0;     // in the slot
    PackedBf16 packed;     // n == 0: travels raw, at `offset` in the image too
    size_t packed_at = 0;  // else: its packing's offset in the packed region (the staging buffer)
  };

  // Adds a tensor; parts keep this order (the order of the raw tensors after the groups, of the
  // packed ones, and of the unpackings).
  void add(const std::string& name, const Tensor& host);
  // Marks the candidates of at least min_values values (pack_candidate) whose packing fits
  // packed_cap as packed. Reads their values (the packing's exceptions depend on them).
  void choose_packing(int64_t min_values);
  // Assigns the offsets (above). A group is laid back to back only when all its members are
  // here, raw, 2-D, of one dtype and one column count; otherwise its members go singly.
  void lay_out(const std::vector<std::vector<std::string>>& groups = {});

  size_t slot_bytes() const { return slot_bytes_; }      // device slot for the block
  size_t raw_bytes() const { return raw_bytes_; }        // the raw region (a prefix of the slot)
  size_t packed_bytes() const { return packed_bytes_; }  // the packed region (staging buffer)
  size_t image_bytes() const { return raw_bytes_ + packed_bytes_; }
  const std::vector<Part>& parts() const { return parts_; }
  const Part* find(const std::string& name) const;

  // The part as a tensor inside `base`, a buffer laid out like the slot (device or host).
  static Tensor view(const Tensor& base, const Part& p);
  // The tensors `names` as one [Σrows, cols] view in `base` when the layout holds them back to
  // back (a fused group), else nullopt.
  std::optional<Tensor> fused_view(const Tensor& base, const std::vector<std::string>& names) const;

  // Writes the image (raw region, then packed region; padding left as it is) to `dst`, from the
  // mapping, split by bytes over up to max_threads threads (page-cache reads scale with threads).
  void fill(uint8_t* dst, size_t max_threads) const;
  // The image in fresh pinned host memory (image_bytes(), at least 1).
  Tensor pinned(Backend& be, size_t max_threads) const;

  // Queues the copies of an image held in pinned memory `src` on the copy stream: the raw region
  // into `slot` after the compute fence `slot_free` (the slot's last reader), the packed region
  // into `staging` after `staging_free` (the last unpacking). Returns the last copy's fence, or
  // `none` when the image is empty.
  Backend::Fence copy(Backend& be, const Tensor& src, Tensor& slot, Tensor* staging, Backend::Fence slot_free,
                      Backend::Fence staging_free, Backend::Fence none) const;
  // Unpacks the packed parts from `staging` into their places in `slot`, on the compute stream,
  // in the parts' order.
  void unpack(Backend& be, const Tensor& slot, const Tensor& staging) const;

 private:
  std::vector<Part> parts_;
  std::map<std::string, size_t> index_;
  size_t slot_bytes_ = 0, raw_bytes_ = 0, packed_bytes_ = 0;
};

// The device bytes of a set of block images: the largest slot (what each of a streamer's two
// slots holds) and all slots together (every block resident). What a streamer reports to the
// memory planner.
struct BlockBytes {
  size_t largest = 0, total = 0;
};
BlockBytes block_bytes(const std::vector<BlockImage>& images);

}  // namespace moss
