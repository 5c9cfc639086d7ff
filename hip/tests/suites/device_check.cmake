# AMD device-code checks (issue 3 / issue 6): hip/check_device.sh compiles every kernel in
# src/kernels device-only for each target of hip/amd_targets.txt that Debian's clang-19 knows (all
# but gfx1153, checked in the shipped binary by hip/ci/amd.sh) and checks the
# code objects (matrix instructions, wave32, workgroup 32, no scratch / spills / dynamic stack /
# undefined symbols). Each tests/device_bad/*.hip breaks one rule on purpose (named by its
# `// check_device_expect: KIND` line) and must be caught, which proves the checker itself.
# Without clang-19 / llvm-19 the script exits 77 and ctest reports these tests as skipped.
set(CHECK_DEVICE ${PROJECT_SOURCE_DIR}/check_device.sh)
find_program(CHECK_DEVICE_CLANG clang++-19)
if(NOT CHECK_DEVICE_CLANG)
  message(STATUS "clang++-19 not found: the check_device tests will be reported as skipped "
                 "(apt-get install clang-19 lld-19 llvm-19)")
endif()

add_test(NAME check_device COMMAND ${CHECK_DEVICE} --out ${CMAKE_CURRENT_BINARY_DIR}/check_device/kernels)
# Nine targets, one compile each: about 7 CPU-minutes of clang-19 (docs/amd_targets.md section 5).
set_tests_properties(check_device PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1200 LABELS "device")

file(GLOB DEVICE_BAD_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/device_bad/*.hip)
foreach(src ${DEVICE_BAD_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  file(STRINGS ${src} expect_line REGEX "^// check_device_expect: ")
  string(REGEX REPLACE "^// check_device_expect: *" "" expect_kind "${expect_line}")
  if(NOT expect_kind)
    message(FATAL_ERROR "${src}: missing the '// check_device_expect: KIND' line")
  endif()
  add_test(NAME check_device_detects_${name}
           COMMAND ${CHECK_DEVICE} --expect-violation ${expect_kind} --out ${CMAKE_CURRENT_BINARY_DIR}/check_device/${name}
                   ${src})
  set_tests_properties(check_device_detects_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "device")
endforeach()
