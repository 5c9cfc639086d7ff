#include <gtest/gtest.h>

#include "model/dit.h"
#include "model/dit_streaming.h"
#include "dit_rows_fixture.h"
#include "pipeline/noise.h"

using namespace moss;

namespace {

const std::string kTransformer = std::string(MOSSINFER_TEST_DATA) + "/tiny-moss/transformer";

// cond + uncond (skipping block 2) through one pass, for a given weight source.
std::vector<std::vector<float>> run(Backend& be, std::unique_ptr<DitWeightSource> src, const DitConfig& cfg) {
  Dit dit(be, std::move(src), cfg);
  const test::CondUncond in(dit, cfg, 7);
  // A second pass reuses the slots (and its prefetched first block).
  std::vector<std::vector<float>> out = test::two_passes(dit, in);
  // A pass that starts at another block than the one the last pass prefetched, then the usual one.
  test::append_rows(out, dit.forward_rows(in.latent, {Dit::Row{&in.cond, {0}}, Dit::Row{&in.uncond, {0, 2}}}, 650.0f));
  test::append_rows(out, dit.forward_rows(in.latent, {Dit::Row{&in.cond, {}}, Dit::Row{&in.uncond, {2}}}, 640.0f));
  return out;
}

}  // namespace

TEST(DitResidency, StreamedRunsEqualTheResidentRunBitForBit) {
  auto be = make_host_backend();
  const DitConfig cfg = parse_dit_config(kTransformer + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kTransformer);
  const auto reference = run(*be, make_upload_on_use_source(*be, w), cfg);
  // Packing thresholds: none of the tiny tensors packed; the FFN matrices (16384 values of 128 x
  // 128 projections are not); every tensor of at least 8 values.
  for (int64_t pack_min : {kPackMinValues, int64_t(32768), int64_t(8)})
    for (int resident : {0, 1, 3, 4}) {
      const auto got = run(*be, make_resident_streaming_source(*be, w, cfg, resident, pack_min), cfg);
      ASSERT_EQ(got.size(), reference.size());
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_EQ(got[i], reference[i]) << resident << " resident, packing from " << pack_min << ", output " << i;
    }
  // An APU's source: the streamed blocks read from the mapped files each pass (no pinned images).
  for (int resident : {0, 1, 3, 4}) {
    const auto got = run(*be, make_mapped_streaming_source(*be, w, cfg, resident), cfg);
    ASSERT_EQ(got.size(), reference.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i], reference[i]) << resident << " resident, from the files, output " << i;
  }
}

TEST(DitResidency, StreamedWeightsComeFromTheSlots) {
  // With nothing resident, a block's weights are views into a slot, not into the file mapping:
  // a wrong slot would hand a block another block's weights.
  auto be = make_host_backend();
  const DitConfig cfg = parse_dit_config(kTransformer + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kTransformer);
  auto src = make_resident_streaming_source(*be, w, cfg, 0);
  src->begin_forward({0, 1, 2, 3});
  for (int b = 0; b < 4; ++b) {
    src->before_block(b);
    const std::string name = "layers." + std::to_string(b) + ".proj.q.weight";
    const Tensor t = src->get(name), f = w.get(name);
    EXPECT_NE(t.data, f.data);
    EXPECT_EQ(to_f32_vector(t), to_f32_vector(f)) << name;
  }
  EXPECT_THROW(src->get("layers.1.proj.q.weight"), std::logic_error);  // not the running block
}

namespace {

// A backend that only moves bytes and keeps the order of the two streams on record: the copy
// stream (copies in issue order, each after a compute fence) and the compute stream (a block's
// compute is one op here, an unpacking another, each waiting for copy fences). The host
// backend's copies are immediate, so this is where the streaming source's fences are checked:
// what a GPU would race on shows up as a read of a copy the compute did not wait for, or a copy
// over bytes whose last compute use it did not wait for.
class StreamLogBackend : public Backend {
 public:
  struct Span {
    const char* begin;
    const char* end;
    bool overlaps(const Span& o) const { return begin < o.end && o.begin < end; }
  };
  size_t ops = 0;            // compute ops issued
  size_t copies_waited = 0;  // the compute stream has waited for copies [0, copies_waited)
  size_t copies = 0, unpackings = 0;

  std::string name() const override { return "stream log"; }
  Where where() const override { return Where::Host; }
  Tensor alloc(DType t, const std::vector<int64_t>& dims) override { return host_tensor(t, dims); }
  Tensor upload(const Tensor& host) override {
    Tensor t = host_tensor(host.dtype, host.dims());
    std::memcpy(t.data, host.data, host.nbytes());
    return t;
  }
  Tensor download(const Tensor& t) override { return t; }

  // A copy waits for exactly the compute through the last op that used its bytes: not less (it
  // would overwrite weights still being read) and not more (the copy engine, which bounds a
  // streamed step, would idle while later blocks compute).
  Fence copy_async(const Tensor& src, Tensor& dst, Fence after) override {
    const Span span = span_of(dst, src.nbytes());
    size_t needed = 0;
    for (const Use& u : uses_)
      if (u.span.overlaps(span)) needed = std::max(needed, u.op + 1);
    const size_t waits = after ? fence(after, true) : 0;
    EXPECT_EQ(waits, needed) << "copy " << copies << " waits for compute ops [0, " << waits
                             << "); its bytes were last used by op " << needed - 1;
    std::memcpy(dst.data, src.data, src.nbytes());
    fills_.push_back({span, copies++});
    fences_.push_back({false, copies});
    return fences_.size();
  }
  Fence compute_fence() override {
    fences_.push_back({true, ops});
    return fences_.size();
  }
  void compute_wait(Fence f) override {
    if (f) copies_waited = std::max(copies_waited, fence(f, false));  // the copy stream is in order
  }
  // An unpacking is a compute op that reads the packed bytes and writes the values.
  void unpack_bf16(const PackedBf16& layout, const Tensor& packed, Tensor& out) override {
    read(span_of(packed, layout.bytes()), "a packing");
    Backend::unpack_bf16(layout, packed, out);
    const Span written = span_of(out, out.nbytes());
    uses_.push_back({written, ops});
    fills_.push_back({written, kCompute});
    ++ops;
    ++unpackings;
  }

  // A compute read of `span` by the op being issued: what last filled it must be a copy the
  // compute waited for, or an earlier compute op.
  void read(const Span& span, const std::string& what) {
    const Fill* latest = nullptr;
    for (const Fill& f : fills_)
      if (f.span.overlaps(span)) latest = &f;
    ASSERT_NE(latest, nullptr) << what << " read from bytes nothing filled";
    if (latest->copy != kCompute) {
      EXPECT_LT(latest->copy, copies_waited) << what << " read before the compute waited for its copy";
    }
    uses_.push_back({span, ops});
  }

 private:
  static constexpr size_t kCompute = ~size_t(0);
  struct Use {
    Span span;
    size_t op;
  };
  struct Fill {
    Span span;
    size_t copy;  // the copy's index, or kCompute
  };
  struct FenceRecord {
    bool compute;
    size_t value;  // compute: ops issued before it; copy: copies up to and including it
  };
  static Span span_of(const Tensor& t, size_t bytes) {
    const char* b = static_cast<const char*>(t.data);
    return {b, b + bytes};
  }
  size_t fence(Fence f, bool compute) const {
    EXPECT_EQ(fences_.at(f - 1).compute, compute) << "a stream waits for a fence of the wrong stream";
    return fences_.at(f - 1).value;
  }
  std::vector<Use> uses_;
  std::vector<Fill> fills_;
  std::vector<FenceRecord> fences_;
};

// Runs passes of blocks as the DiT does (begin_forward, then before_block and the block's
// reads, one compute op per block); the backend checks every read and every copy. `prefetches`:
// the source copies a pass's first streamed block ahead (pinned images); one that streams from
// the files copies each block as it starts.
void run_passes(StreamLogBackend& be, DitWeightSource& src, const WeightFiles& w, int resident,
                const std::vector<std::vector<int>>& passes, bool prefetches = true) {
  int last_first = -1;  // the last pass's first streamed block: prefetched for this pass
  for (const std::vector<int>& order : passes) {
    int first = -1;
    for (int b : order)
      if (b >= resident && first < 0) first = b;
    const size_t copies_before = be.copies;
    src.begin_forward(order);
    // A pass that starts on the block the last pass prefetched copies nothing as it begins.
    if (first >= 0 && !prefetches) {
      EXPECT_EQ(be.copies, copies_before) << "a block copied before it runs";
    } else if (first >= 0) {
      if (first == last_first) EXPECT_EQ(be.copies, copies_before) << "the prefetch was copied again";
      else EXPECT_GT(be.copies, copies_before) << "the first block was not copied";
    }
    last_first = first;
    for (int b : order) {
      src.before_block(b);
      const std::string prefix = "layers." + std::to_string(b) + ".";
      for (const std::string& name : w.names()) {
        if (name.rfind(prefix, 0) != 0) continue;
        const Tensor t = src.get(name);
        EXPECT_EQ(to_f32_vector(t), to_f32_vector(w.get(name))) << name;
        if (b >= resident)
          be.read({static_cast<const char*>(t.data), static_cast<const char*>(t.data) + t.nbytes()}, name);
      }
      ++be.ops;
    }
  }
}

}  // namespace

TEST(DitResidency, CopiesWaitForTheLastUseOfTheirBytesAndNothingLater) {
  const DitConfig cfg = parse_dit_config(kTransformer + "/config.json");
  const WeightFiles w = WeightFiles::open_folder(kTransformer);
  const std::vector<std::vector<int>> passes = {
      {0, 1, 2, 3}, {0, 1, 2, 3},  // a sampler's steps: the second starts on the prefetch
      {1, 2, 3},                    // a pass skipping a block
      {0, 1, 3},    {0, 1, 2, 3},   // one starting at another streamed block than prefetched
      {3},          {3},  {0, 1, 2, 3}};
  for (int64_t pack_min : {int64_t(8), kPackMinValues})  // every tensor packed; none (tiny tensors)
    for (int resident : {0, 1, 2, 3}) {
      StreamLogBackend be;
      auto src = make_resident_streaming_source(be, w, cfg, resident, pack_min);
      run_passes(be, *src, w, resident, passes);
      EXPECT_GT(be.copies, 0u) << resident;
      EXPECT_EQ(be.unpackings > 0, pack_min == 8) << resident;
    }
  for (int resident : {0, 1, 2, 3}) {  // from the files (an APU): never packed
    StreamLogBackend be;
    auto src = make_mapped_streaming_source(be, w, cfg, resident);
    run_passes(be, *src, w, resident, passes, false);
    EXPECT_GT(be.copies, 0u) << resident;
    EXPECT_EQ(be.unpackings, 0u) << resident;
  }
}
