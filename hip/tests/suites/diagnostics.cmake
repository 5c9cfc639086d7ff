# `moss-infer-hip self-test` and `bench` on a build without a device: flag handling (exit 2), the
# no-device refusal (exit 1) and no self-test on the host backend.
add_test(NAME diagnostics_args COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/diagnostics_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
set_tests_properties(diagnostics_args PROPERTIES ENVIRONMENT "MOSSINFER_BACKEND=host")
# bench's whole stages run on the host backend in the unit tests (unit/test_bench_stages.cpp).
target_link_libraries(unit_tests PRIVATE mossinfer_diagnostics)
