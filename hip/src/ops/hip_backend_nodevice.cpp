// HIP_TARGET=host builds carry no device code: only the host reference backend exists.
#include "ops/backend.h"
#include "util/error.h"

namespace moss {

std::unique_ptr<Backend> make_hip_backend(int) {
  throw failure("this build has no GPU backend (built with HIP_TARGET=host); MOSSINFER_BACKEND=host runs the host reference");
}

}  // namespace moss
