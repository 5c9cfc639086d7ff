# moss-infer-hip serve (issue 18), on the host backend with the tiny model: plain HTTP (endpoints,
# the CLI's image byte for byte, refusals, progress, interrupt, disconnects, bounds), a real A1111
# client library (webuiapi from PyPI: skipped, status 77, where it is not installed) and 200
# requests from 4 concurrent clients. Issue 32: ops (/health, /ready, --queue, SIGTERM's drain,
# the signals, A1111 progress, interrupt with the image so far), metrics (read by
# prometheus_client's parser from PyPI: skipped where not installed), devices (several host
# engines in the CLI and the server, the same pixels) and deploy (HAProxy from Debian in front of
# three servers, 300 requests, a SIGTERM and a SIGKILL under load: skipped without haproxy).
# clients: the request sequences of SillyTavern, Open WebUI and LibreChat. Issue 46, each client
# replayed from its source at a named commit: clients_lenient (AIYA with png-info,
# text-generation-webui, KoboldAI Lite, the Photoshop plugin) and openai_images (Open WebUI's openai
# engine, LibreChat's DALL-E 3 tool, the openai Node SDK; the openai SDK and LiteLLM from PyPI called:
# skipped where not installed).
# Each test starts its own servers on free ports.
if(MOSSINFER_SERVER)
  foreach(suite http stress webuiapi clients clients_lenient openai_images ops metrics devices deploy)
    add_test(NAME server_${suite}
             COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/server/${suite}_test.py $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
    set_tests_properties(server_${suite} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS server)
  endforeach()
else()
  # Visible in the summary as skipped, not silently absent; and serve says this build has none.
  add_test(NAME server_not_built COMMAND bash -c "echo 'built without the server (no cpp-httplib: apt-get install libcpp-httplib-dev, or -DMOSSINFER_SERVER=OFF): no serve tests'; exit 77")
  set_tests_properties(server_not_built PROPERTIES SKIP_RETURN_CODE 77 LABELS server)
  add_test(NAME server_unavailable_message
           COMMAND bash -c "out=$(\"$0\" serve --model \"$1\" 2>&1); rc=$?; echo \"$out\"; \
[[ $rc -eq 2 ]] && grep -q 'this build has no server' <<<\"$out\" && grep -q 'libcpp-httplib-dev' <<<\"$out\""
                   $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
  set_tests_properties(server_unavailable_message PROPERTIES LABELS server)
endif()
