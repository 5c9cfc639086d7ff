# Tokenizer and prompt template against Hugging Face `tokenizers` (issue 4): the tiny
# tokenizer of the test model and the real 248k-token Qwen3.5 vocabulary.
add_test(NAME golden_tokenizer_tiny
         COMMAND moss-check tokenizer --tokenizer ${TINY_MODEL}/tokenizer/tokenizer.json
                 --cases ${TEST_DATA}/tokenizer_cases.json)
add_test(NAME golden_prompt_tiny
         COMMAND moss-check prompt --tokenizer ${TINY_MODEL}/tokenizer/tokenizer.json
                 --cases ${TEST_DATA}/prompt_cases.json)
add_test(NAME golden_tokenizer_qwen35
         COMMAND moss-check tokenizer --tokenizer ${TEST_DATA}/qwen35-tokenizer/tokenizer.json
                 --cases ${TEST_DATA}/tokenizer_cases_qwen35.json)
add_test(NAME golden_prompt_qwen35
         COMMAND moss-check prompt --tokenizer ${TEST_DATA}/qwen35-tokenizer/tokenizer.json
                 --cases ${TEST_DATA}/prompt_cases_qwen35.json)
set_tests_properties(golden_tokenizer_tiny golden_prompt_tiny golden_tokenizer_qwen35 golden_prompt_qwen35
                     PROPERTIES LABELS tokenizer)
