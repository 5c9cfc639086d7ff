# The web page at / of `serve` (issue 29): over plain HTTP (the page byte for byte, its type and
# policy, the routes it calls, the CLI's image for its request body), and in Debian's headless
# Chromium driven by Selenium (skipped, status 77, only where chromium or chromium-driver is absent;
# CI installs them, .ci/run). Each starts its own server on the tiny model and the host backend.
# cors (issue 46): a page of another origin posting KoboldAI Lite's request, with and without
# serve --cors-origin '*'.
if(MOSSINFER_SERVER)
  foreach(suite page browser cors)
    add_test(NAME server_web_${suite}
             COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/server/web_${suite}_test.py $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
    set_tests_properties(server_web_${suite} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS server)
  endforeach()
endif()
