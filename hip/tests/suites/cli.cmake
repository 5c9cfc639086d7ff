# The program itself: command-line behaviour, and the golden e2e request end to end on the
# host backend (PNG within 2 levels on average of the golden image, a readable --latent-out).
add_test(NAME cli_behaviour COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
set(E2E_OUT ${CMAKE_CURRENT_BINARY_DIR}/e2e_cli)
add_test(NAME cli_e2e_host_run
         COMMAND bash -c "rm -f \"$1\"/apple.png \"$1\"/apple.npy && MOSSINFER_BACKEND=host \"$0\" --model \"$2\" \
--prompt 'a red apple on a wooden table' --negative '' --size 96x64 --steps 4 --cfg 3 --shift 5 --seed 42 \
--skip-layers 2 -o \"$1\"/apple.png --latent-out \"$1\"/apple.npy"
                 $<TARGET_FILE:moss-infer-hip> ${E2E_OUT} ${TINY_MODEL})
add_test(NAME cli_e2e_host_check
         COMMAND moss-check cli-output --png ${E2E_OUT}/apple.png --npy ${E2E_OUT}/apple.npy
                 --golden ${TEST_DATA}/golden_dit.safetensors)
file(MAKE_DIRECTORY ${E2E_OUT})
set_tests_properties(cli_e2e_host_check PROPERTIES DEPENDS cli_e2e_host_run)
set_tests_properties(cli_e2e_host_run PROPERTIES FIXTURES_SETUP e2e_cli)
set_tests_properties(cli_e2e_host_check PROPERTIES FIXTURES_REQUIRED e2e_cli)
# Records, --from-png replay (byte-identical images), --batch-count, prompt files, --jobs and
# --progress json (issue 18), on the host backend.
add_test(NAME cli_frontends COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/frontend_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
set_tests_properties(cli_frontends PROPERTIES TIMEOUT 600)
# The files users hold (issue 45, docs/model_files.md): the tiny model in every layout gives the
# folder's image; every refusal; inspect.
add_test(NAME cli_model_files COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/model_files_tests.sh
         $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL} $<TARGET_FILE:model_layouts>)
set_tests_properties(cli_model_files PROPERTIES TIMEOUT 300)
# bench/model_files_mapping.sh on the full-size model's headers (sparse files, no disk space): the
# full-size folder and Comfy-Org single files open, pass every check and inspect; its times are
# printed, never judged (issue 45).
add_test(NAME bench_model_files_mapping
         COMMAND bash -c "mkdir -p \"$2\" && out=$(TMPDIR=\"$2\" bash \"$0\" \"$1\" 1) && echo \"$out\" && \
grep -q '^model opened and checked' <<<\"$out\" && grep -q '^inspect files: exit 0' <<<\"$out\""
                 ${CMAKE_CURRENT_SOURCE_DIR}/../../bench/model_files_mapping.sh $<TARGET_FILE_DIR:bench_model_files>
                 ${CMAKE_CURRENT_BINARY_DIR}/bench_model_files_mapping)
