# Official-pipeline dumps (issue 9) without torch: `moss-check official-fixture` writes a dump
# in the format of tools/golden/dump_official.py from the tiny goldens (and broken copies), and
# `moss-check official` must PASS every stage on the good one (fp32 host limits: 1e-5 text
# encoder and step-0 velocities, 1e-4 sampler latents, 1e-5 VAE image) and FAIL the broken ones
# with a message that names the problem.
#
# This file is also the expectation script of the failure cases (cmake -P): it runs CMD
# ('|'-separated), and requires exit status EXPECT_RC and output matching EXPECT_REGEX.
if(CMAKE_SCRIPT_MODE_FILE)
  string(REPLACE "|" ";" _cmd "${CMD}")
  execute_process(COMMAND ${_cmd} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  message("${_out}${_err}")
  if(NOT _rc STREQUAL "${EXPECT_RC}")
    message(FATAL_ERROR "exit status ${_rc}, expected ${EXPECT_RC}")
  endif()
  if(NOT "${_out}${_err}" MATCHES "${EXPECT_REGEX}")
    message(FATAL_ERROR "the output does not match '${EXPECT_REGEX}'")
  endif()
  return()
endif()

set(_dumps ${CMAKE_CURRENT_BINARY_DIR}/official-dump)
add_test(NAME official_dump_fixture
         COMMAND ${CMAKE_COMMAND} -E make_directory ${_dumps})
foreach(kind good swap-velocities cut-hidden wrong-ids)
  if(kind STREQUAL "good")
    set(_corrupt "")
  else()
    set(_corrupt --corrupt ${kind})
  endif()
  add_test(NAME official_dump_fixture_${kind}
           COMMAND moss-check official-fixture --data ${TEST_DATA} --out ${_dumps}/${kind}.safetensors ${_corrupt})
  set_tests_properties(official_dump_fixture_${kind} PROPERTIES DEPENDS official_dump_fixture
                       FIXTURES_SETUP official_dump FIXTURES_REQUIRED official_dump_dir LABELS "golden;official")
endforeach()
set_tests_properties(official_dump_fixture PROPERTIES FIXTURES_SETUP official_dump_dir LABELS "golden;official")

# Every stage (inputs, te, dit0, dit, vae, e2e) on the tiny model: all PASS.
add_test(NAME official_dump_tiny
         COMMAND moss-check official --dump ${_dumps}/good.safetensors --model ${TINY_MODEL})
set_tests_properties(official_dump_tiny PROPERTIES FIXTURES_REQUIRED official_dump TIMEOUT 120
                     FAIL_REGULAR_EXPRESSION "FAIL " PASS_REGULAR_EXPRESSION "[1-9][0-9]* passed, 0 failed"
                     LABELS "golden;official")

# Broken dumps: exit 1 and the message.
set(_expect ${CMAKE_CURRENT_LIST_FILE})
function(official_dump_failure name dump stages regex)
  add_test(NAME official_dump_${name}
           COMMAND ${CMAKE_COMMAND} "-DCMD=$<TARGET_FILE:moss-check>|official|--dump|${_dumps}/${dump}.safetensors|--model|${TINY_MODEL}|--stages|${stages}"
                   -DEXPECT_RC=1 "-DEXPECT_REGEX=${regex}" -P ${_expect})
  set_tests_properties(official_dump_${name} PROPERTIES FIXTURES_REQUIRED official_dump TIMEOUT 120
                       LABELS "golden;official")
endfunction()
official_dump_failure(swapped_velocities swap-velocities "te,dit0"
                      "FAIL case0\\.step0\\.v_cond: cos 0\\.8[^\n]*limit")
official_dump_failure(cut_hidden cut-hidden "te"
                      "cut-hidden\\.safetensors: case 0 [^\n]*cond\\.hidden has 18 rows but cond\\.ids has 19 tokens")
official_dump_failure(wrong_ids wrong-ids "te"
                      "FAIL case0\\.cond\\.ids \\(our tokenizer\\): ids differ at 5")
