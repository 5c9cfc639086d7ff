# The fp8 matrix leaf (kernels/matrix_leaf.h mma_f8, for the attention's P.V in e4m3) run through the
# device emulation of tests/emulation/runtime/portability.h, as int8_kernels.cmake runs the int8
# leaf: one program per platform that has the instruction (NVIDIA's mma.sync m16n8k32 .e4m3, gfx12's
# v_wmma_f32_16x16x16_fp8_fp8; gfx11 has none and refuses to compile the leaf). Under a second each.
# The lane maps alone: unit_tests --gtest_filter='MatrixLayoutsFp8*'; the conversion: 'Fp8E4m3*'.
foreach(_leaf nvidia:0 gfx12:12)
  string(REPLACE ":" ";" _pair ${_leaf})
  list(GET _pair 0 _name)
  list(GET _pair 1 _target)
  add_executable(fp8_leaf_emulated_${_name} ${CMAKE_CURRENT_SOURCE_DIR}/emulation/test_fp8_leaf_emulated.cpp)
  target_include_directories(fp8_leaf_emulated_${_name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emulation)
  target_compile_definitions(fp8_leaf_emulated_${_name} PRIVATE MOSS_LEAF_EMULATED_TARGET=${_target})
  target_link_libraries(fp8_leaf_emulated_${_name} PRIVATE mossinfer_host GTest::gtest GTest::gtest_main)
  target_compile_options(fp8_leaf_emulated_${_name} PRIVATE ${_warn} -Wno-unknown-pragmas)
  gtest_discover_tests(fp8_leaf_emulated_${_name} TEST_PREFIX "${_name}." DISCOVERY_TIMEOUT 60)
endforeach()
