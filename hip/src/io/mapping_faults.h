// Weight files are mmap'd (io/safetensors.h). When another process truncates or rewrites
// one while a run uses it, reading the lost pages raises SIGBUS, which would kill the run
// with no word. The mappings are registered here so that a SIGBUS inside one is reported
// naming the file ("<path>: changed or truncated while in use", exit 1).
//
// The handler cannot unwind (the fault is inside an op, on any thread): it writes the
// message with write(2) and _exits. That leaves no output: outputs exist only as
// temporaries during the final write (io/output_files.h), which reads no mapping.
#pragma once
#include <cstddef>
#include <string>

namespace moss {

void install_mapping_fault_handler();
void register_mapping(const void* base, size_t size, const std::string& path);
void unregister_mapping(const void* base);

}  // namespace moss
