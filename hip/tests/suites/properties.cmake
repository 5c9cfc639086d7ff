# Hostile inputs by class (issue 16): special files in place of every model file, every
# numeric flag and MOSSINFER_THREADS mutated, signals at every stage boundary, file-size
# limits, weight files truncated mid-run, bad output paths, the drawn seed. Each generated
# case checks exit status, message, no output left and no hang. Runs under sanitize.sh too.
add_test(NAME bad_input_properties
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bad_input/property_tests.sh $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
set_tests_properties(bad_input_properties PROPERTIES TIMEOUT 900 LABELS "bad_input;properties")
