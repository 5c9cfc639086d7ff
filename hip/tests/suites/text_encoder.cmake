# Text encoder (issue 5): the host reference against the fp32 goldens, all four cases, every
# layer output and the last hidden state (relative L2 < 1e-5). The DeltaNet chunked/recurrent
# agreement runs in unit_tests (TextOps.*).
add_test(NAME text_encoder_golden
         COMMAND moss-check te --model ${TINY_MODEL} --golden ${TEST_DATA}/golden_text_encoder.safetensors)
set_tests_properties(text_encoder_golden PROPERTIES TIMEOUT 120 LABELS "golden;text_encoder")
