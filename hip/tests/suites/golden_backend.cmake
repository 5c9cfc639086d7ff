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
