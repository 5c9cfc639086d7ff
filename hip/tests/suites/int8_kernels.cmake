# The INT8 ConvRot kernels' own source run on the host through the device emulation of
# tests/emulation/runtime/portability.h (docs/int8_convrot.md section 8): its folder comes first
# on these test programs' include path, in place of src/runtime/portability.h. One program per
# emulated leaf (NVIDIA's mma.sync m16n8k32, gfx11's and gfx12's v_wmma_i32_16x16x16_iu8: the
# kernels with each platform's fragments), programs of their own so no other test sees the
# emulation. Seconds each (each workgroup is host threads).
foreach(_leaf nvidia:0 gfx11:11 gfx12:12)
  string(REPLACE ":" ";" _pair ${_leaf})
  list(GET _pair 0 _name)
  list(GET _pair 1 _target)
  add_executable(int8_kernels_emulated_${_name} ${CMAKE_CURRENT_SOURCE_DIR}/emulation/test_int8_kernels_emulated.cpp)
  target_include_directories(int8_kernels_emulated_${_name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emulation)
  target_compile_definitions(int8_kernels_emulated_${_name} PRIVATE MOSS_LEAF_EMULATED_TARGET=${_target})
  target_link_libraries(int8_kernels_emulated_${_name} PRIVATE mossinfer_host GTest::gtest GTest::gtest_main)
  # The kernels' `#pragma unroll` is a clang / nvcc pragma.
  target_compile_options(int8_kernels_emulated_${_name} PRIVATE ${_warn} -Wno-unknown-pragmas)
  gtest_discover_tests(int8_kernels_emulated_${_name} TEST_PREFIX "${_name}." DISCOVERY_TIMEOUT 60)
endforeach()

# The quantizing norm and unit kernels' source (kernels/rows.hip with kernels/int8_row_regs.h and
# kernels/int8_row_lds.h) through the same emulation, on both launch paths: NVIDIA's native four
# waves a row, and AMD's one wave (MOSSINFER_KERNELS=portable). No matrix leaf: one program.
add_executable(int8_rows_emulated ${CMAKE_CURRENT_SOURCE_DIR}/emulation/test_int8_rows_emulated.cpp)
target_include_directories(int8_rows_emulated BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emulation)
target_link_libraries(int8_rows_emulated PRIVATE mossinfer_host GTest::gtest GTest::gtest_main)
# (Its unroll counts are read only by those pragmas.)
target_compile_options(int8_rows_emulated PRIVATE ${_warn} -Wno-unknown-pragmas -Wno-unused-variable)
gtest_discover_tests(int8_rows_emulated TEST_PREFIX "native." DISCOVERY_TIMEOUT 60)
gtest_discover_tests(int8_rows_emulated TEST_PREFIX "portable." DISCOVERY_TIMEOUT 60
                     PROPERTIES ENVIRONMENT "MOSSINFER_KERNELS=portable")

# The int8 QKᵀ attention's key quantization (kernels/attention_int8_keys.hip) through the same
# emulation against the host op; no matrix leaf: one program.
add_executable(attention_int8_keys_emulated ${CMAKE_CURRENT_SOURCE_DIR}/emulation/test_attention_int8_keys_emulated.cpp)
target_include_directories(attention_int8_keys_emulated BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emulation)
target_link_libraries(attention_int8_keys_emulated PRIVATE mossinfer_host GTest::gtest GTest::gtest_main)
target_compile_options(attention_int8_keys_emulated PRIVATE ${_warn} -Wno-unknown-pragmas)
gtest_discover_tests(attention_int8_keys_emulated TEST_PREFIX "emulated." DISCOVERY_TIMEOUT 60)

# The portable direct-tiling attention (kernels/attention.hip: the int8 QKᵀ variant and the bf16
# scores' kernel) through the same emulation against the host ops, one program per emulated leaf
# (NVIDIA's mma.sync and scheme, gfx11's and gfx12's WMMA with the transposed AMD schemes).
foreach(_leaf nvidia:0 gfx11:11 gfx12:12)
  string(REPLACE ":" ";" _pair ${_leaf})
  list(GET _pair 0 _name)
  list(GET _pair 1 _target)
  add_executable(attention_emulated_${_name} ${CMAKE_CURRENT_SOURCE_DIR}/emulation/test_attention_int8_emulated.cpp)
  target_include_directories(attention_emulated_${_name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emulation)
  target_compile_definitions(attention_emulated_${_name} PRIVATE MOSS_LEAF_EMULATED_TARGET=${_target})
  target_link_libraries(attention_emulated_${_name} PRIVATE mossinfer_host GTest::gtest GTest::gtest_main)
  target_compile_options(attention_emulated_${_name} PRIVATE ${_warn} -Wno-unknown-pragmas)
  gtest_discover_tests(attention_emulated_${_name} TEST_PREFIX "${_name}." DISCOVERY_TIMEOUT 60)
endforeach()
