// The one mechanism that wraps ops. Every public op of the op families (core_ops.h,
// text_ops.h, vae_ops.h) is a non-virtual function that checks its operands, then runs the
// backend's body (a protected virtual) inside run_op below, which brackets it with the family's
// hook when one is set. The HIP backend's profiler (ops/hip/op_profiler.h) is such a hook, and so
// is the measuring backend (ops/measure), which skips every body: neither writes an override
// per op, and adding an op touches its family's header, its checks and its two bodies.
//
// A hook rather than a wrapping family (a second CoreOps that forwards each op) because the
// forwarding is what cost one hand-written override per op and per wrapper; the hook sees every
// op through one small struct instead.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace moss {

// One op call as a hook sees it.
struct OpCall {
  explicit OpCall(std::string n) : name(std::move(n)) {}
  OpCall(std::string n, DType dtype, std::vector<int64_t> dims)
      : name(std::move(n)), scratch_dtype(dtype), scratch_dims(std::move(dims)) {}

  // "<family>.<op>", plus what tells calls of one op apart where that matters to a profile
  // (a GEMM's weight shape, the activations' dtype): "core.linear 3072x3072 x:bf16".
  std::string name;
  // Device memory the op may take for itself beyond its operands (a backend's scratch), as a
  // tensor of this dtype and shape; empty: none. The measuring backend counts it.
  DType scratch_dtype = DType::F32;
  std::vector<int64_t> scratch_dims;
};

class OpHook {
 public:
  virtual ~OpHook() = default;
  // Before the op's body (its operands already checked); false skips the body.
  virtual bool begin(const OpCall& call) = 0;
  // After the body (also when it threw, or was skipped).
  virtual void end() = 0;
};

// Runs body() inside `hook`; make_call() builds the OpCall, only when there is a hook (so
// without one an op costs one branch and no string).
template <class MakeCall, class Body>
void run_op(OpHook* hook, MakeCall&& make_call, Body&& body) {
  if (!hook) {
    body();
    return;
  }
  const bool run = hook->begin(make_call());
  struct End {
    OpHook* hook;
    ~End() { hook->end(); }
  } end{hook};
  if (run) body();
}

template <class Body>
void run_op(OpHook* hook, const char* name, Body&& body) {
  run_op(hook, [name] { return OpCall{name}; }, body);
}

// "3072x3072": a shape in OpCall names.
std::string op_dims(const Tensor& t);

// Operand checks shared by every backend (the public ops call them before any body): they
// throw std::invalid_argument("<op>: <why>"). They look at shapes and dtypes only, never at
// where a tensor lives or its storage, which the backend's body checks (the measuring backend's
// tensors have shapes but no storage). The backends' bodies throw their own operand refusals
// through op_require as well, so every refusal reads the same.
void op_require(bool ok, const char* op, const std::string& why);

// The base of the three families: holds the hook (set by the backend, not owned).
class OpFamily {
 public:
  virtual ~OpFamily() = default;
  void set_hook(OpHook* hook) { hook_ = hook; }

 protected:
  OpHook* hook_ = nullptr;
};

}  // namespace moss
