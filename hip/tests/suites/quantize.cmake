# `moss-infer-hip quantize` (issue 49, docs/int8_convrot.md section 6) from the command line on
# the tiny model: the run at group 64, --help, and every refusal's exit status and message
# (hip/tests/cli/quantize_tests.sh). What the file holds is checked by the unit tests
# (QuantizeDit.*, Int8ConvRot.*) and, against the PyTorch reference, by
# bench/tests/test_int8_convrot_ref.py.
add_test(NAME cli_quantize COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/quantize_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL} $<TARGET_FILE:moss-check> ${TEST_DATA})
set_tests_properties(cli_quantize PROPERTIES LABELS "cli;int8")
# Running the file `quantize` writes (docs/int8_convrot.md, "Running INT8 files"): generations
# with --diffusion-model on the host backend, inspect, a float8 file refused, LoRAs beside the
# quantized layers through a jobs file (set, none restored bit for bit, set again)
# (hip/tests/cli/int8_run_tests.sh); the numbers: unit tests Int8Dit.*, Int8MemoryPlan.*.
add_test(NAME cli_int8_run COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/int8_run_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL} $<TARGET_FILE:moss-check> ${TEST_DATA})
set_tests_properties(cli_int8_run PROPERTIES LABELS "cli;int8")
