# The golden subcommands' --backend host|hip (issue 17): a backend that does not exist, and
# --device without --backend hip, are usage errors (exit 2) in every build; a host-only
# moss-check (HIP_TARGET=host: MOSSINFER_CHECK_DEVICE=0) refuses --backend hip the same way,
# saying why. The expectation script is official_dump.cmake's (CMD, EXPECT_RC, EXPECT_REGEX).
set(_expect_script ${CMAKE_CURRENT_LIST_DIR}/official_dump.cmake)
foreach(sub te dit vae e2e official)
  add_test(NAME golden_backend_bogus_${sub}
           COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|${sub}|--backend|bogus" -DEXPECT_RC=2
                   "-DEXPECT_REGEX=--backend: unknown backend 'bogus' \\(host or hip\\)" -P ${_expect_script})
  add_test(NAME golden_backend_device_without_hip_${sub}
           COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|${sub}|--device|1" -DEXPECT_RC=2
                   "-DEXPECT_REGEX=--device goes with --backend hip" -P ${_expect_script})
  set_tests_properties(golden_backend_bogus_${sub} golden_backend_device_without_hip_${sub}
                       PROPERTIES TIMEOUT 30 LABELS "golden;cli")
  if(NOT _check_device)
    add_test(NAME golden_backend_hip_host_only_${sub}
             COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|${sub}|--backend|hip" -DEXPECT_RC=2
                     "-DEXPECT_REGEX=--backend hip: this moss-check is a host-only build" -P ${_expect_script})
    set_tests_properties(golden_backend_hip_host_only_${sub} PROPERTIES TIMEOUT 30 LABELS "golden;cli")
  endif()
endforeach()

# Numeric flags go through the program's one number parser (util/numbers.h, via golden_compare.h's
# int_flag / decimal_flag): junk, signs and blanks, exponents, hex and out-of-range values are
# usage errors naming the flag, before any file is opened (the paths here do not exist).
set(_numeric_bad "2abc" "-1" " 3" "1e3" "0x10" "1001")
set(_i 0)
foreach(value IN LISTS _numeric_bad)
  foreach(sub e2e official)
    if(sub STREQUAL "e2e")
      set(_args "e2e|--model|/nonexistent|--golden-dit|/nonexistent|--golden-te|/nonexistent|--steps|${value}")
    else()
      set(_args "official|--model|/nonexistent|--dump|/nonexistent|--steps|${value}")
    endif()
    add_test(NAME check_numeric_flag_${sub}_${_i}
             COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|${_args}" -DEXPECT_RC=2
                     "-DEXPECT_REGEX=--steps '.*': (not an integer|must be between 0 and 1000)" -P ${_expect_script})
    set_tests_properties(check_numeric_flag_${sub}_${_i} PROPERTIES TIMEOUT 30 LABELS "golden;cli")
  endforeach()
  math(EXPR _i "${_i} + 1")
endforeach()
foreach(value "1e-3" "-0.5" "nan" "300")
  add_test(NAME check_numeric_flag_official_cfg_${_i}
           COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|official|--model|/nonexistent|--dump|/nonexistent|--cfg|${value}"
                   -DEXPECT_RC=2 "-DEXPECT_REGEX=--cfg '.*': (not a number|must be between)" -P ${_expect_script})
  set_tests_properties(check_numeric_flag_official_cfg_${_i} PROPERTIES TIMEOUT 30 LABELS "golden;cli")
  math(EXPR _i "${_i} + 1")
endforeach()

# moss-check kernels --sustain SECONDS (the sustained timing of the kernel checks): the same parser,
# 1..600 seconds; checked before any device is touched, so a device build runs these without a GPU.
if(_check_device)
  set(_i 0)
  foreach(value "2abc" "0" "601" " 3" "1.5" "-2")
    add_test(NAME check_numeric_flag_kernels_sustain_${_i}
             COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|kernels|--sustain|${value}" -DEXPECT_RC=2
                     "-DEXPECT_REGEX=--sustain '.*': (not an integer|must be between 1 and 600)" -P ${_expect_script})
    set_tests_properties(check_numeric_flag_kernels_sustain_${_i} PROPERTIES TIMEOUT 30 LABELS "golden;cli")
    math(EXPR _i "${_i} + 1")
  endforeach()
endif()
