# Bad input against the built binary (issue 9): broken copies of the tiny model folder
# (safetensors headers, dtypes, shapes, tensors, configs, GGUF, quantized files, tokenizer),
# bad prompts and output paths, and odd-but-valid inputs that must succeed on the host
# backend. Each case checks the exit status, the message (file and tensor or key) and that
# no output or temporary file is left. Prints "N passed, M failed".
add_test(NAME bad_input
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/bad_input/bad_input_tests.sh $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
set_tests_properties(bad_input PROPERTIES TIMEOUT 900 LABELS "bad_input")
