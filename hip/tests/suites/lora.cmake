# LoRAs at run time (issue 47, docs/loras.md): every format merged by the engine against an
# independent PyTorch merge (peft for PEFT files, the kohya/LyCORIS formulas for the others), the
# --lora image bit for bit equal to an offline-merged folder's, records, replay, switching sets
# in one engine and refusals; on the tiny model and the host backend. Needs torch, peft and
# safetensors from PyPI (skipped, status 77, without them). Unit tests: unit_tests --gtest_filter='Lora*'.
add_test(NAME lora_reference
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/lora/lora_reference_test.py $<TARGET_FILE:moss-infer-hip>
                 $<TARGET_FILE:moss-check> ${TINY_MODEL} ${TEST_DATA}/reference/moss_ref.py)
set_tests_properties(lora_reference PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS lora)
# The server's side: --lora-dir's list, prompt tags, switching and restoring (standard library only).
if(MOSSINFER_SERVER)
  add_test(NAME server_lora
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/server/lora_test.py $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
  set_tests_properties(server_lora PROPERTIES TIMEOUT 300 LABELS "server;lora")
endif()
