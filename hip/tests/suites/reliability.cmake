# Paths, streams, replayed PNGs, option values and signals by class (issue 35): output paths
# spelled with ., .., //, links and NUL bytes from every source, NUL bytes in JSON input, stdin
# closed / a directory / /dev/zero / empty and the input size limits, PNG headers claiming any
# size, damaged and refused records, flag-like option values, the signals whose default would
# end the process, SIGKILL's leftovers, stdout to /dev/full. Runs under sanitize.sh too.
add_test(NAME bad_input_paths_streams
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bad_input/paths_streams_tests.sh $<TARGET_FILE:moss-infer-hip>
                 ${TINY_MODEL})
set_tests_properties(bad_input_paths_streams PROPERTIES TIMEOUT 900 LABELS "bad_input;properties")
