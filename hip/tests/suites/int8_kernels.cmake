# The INT8 ConvRot kernels' own source run on the host through the device emulation of
# tests/emulation/runtime/portability.h (docs/int8_convrot.md section 8): its folder comes first
# on this one test program's include path, in place of src/runtime/portability.h. A program of
# its own, so no other test sees the emulation. A few seconds (each workgroup is host threads).
add_executable(int8_kernels_emulated ${CMAKE_CURRENT_SOURCE_DIR}/emulation/test_int8_kernels_emulated.cpp)
target_include_directories(int8_kernels_emulated BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emulation)
target_link_libraries(int8_kernels_emulated PRIVATE mossinfer_host GTest::gtest GTest::gtest_main)
# The kernels' `#pragma unroll` is a clang / nvcc pragma.
target_compile_options(int8_kernels_emulated PRIVATE ${_warn} -Wno-unknown-pragmas)
gtest_discover_tests(int8_kernels_emulated DISCOVERY_TIMEOUT 60)
