# SIGINT / SIGTERM during host-backend runs (issue 9): exit 130 / 143 with a message, no
# output and no temporary file left, whichever stage the signal lands in.
add_test(NAME interrupts
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bad_input/interrupt_tests.sh $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
set_tests_properties(interrupts PROPERTIES TIMEOUT 600 LABELS "bad_input;interrupts")
