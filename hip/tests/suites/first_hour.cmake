# A newcomer's first hour (issue 51): the program's first messages (no device, the backend
# variables, the default --skip-layers on a small model, jobs refusals by FILE:LINE, done lines,
# step events per device), quickstart's machine detection on fake ROCm layouts, quickstart itself
# on this build (no second build: it reuses this folder), and --help against the flag tables.
add_test(NAME first_hour_messages COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/first_hour_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
add_test(NAME quickstart_detection COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/quickstart_detect_test.sh)
add_test(NAME get_model_check COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/get_model_test.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
add_test(NAME help_matches_docs COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/help_tables_test.py
         $<TARGET_FILE:moss-infer-hip> ${PROJECT_SOURCE_DIR}/..)
add_test(NAME readme_commands COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/readme_commands_test.py
         $<TARGET_FILE:moss-infer-hip> ${PROJECT_SOURCE_DIR}/..)
set_tests_properties(readme_commands PROPERTIES TIMEOUT 300)
add_test(NAME quickstart_host COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/quickstart_host_test.sh
         ${CMAKE_BINARY_DIR})
set_tests_properties(quickstart_host PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
