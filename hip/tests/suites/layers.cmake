# The include graph against the floors written in docs/architecture.md (issue 17), and the
# checker's own cases.
add_test(NAME layers_self_test COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers.py --self-test)
add_test(NAME layers COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/layers/check_layers.py
                             ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/../docs/architecture.md)
