# The server's limits by class (issue 35, README "Server limits"): listening on a port in use,
# slow heads and bodies, idle and many connections from one address and from many, encodings,
# framing, methods and header sizes, each case checking status, message and the connection's
# close; and cancellation inside a step (interrupt, disconnect, SIGTERM, a CLI's SIGINT/SIGTERM)
# at a size where one host step takes minutes. Labelled bad_input too, so hip/ci/sanitize.sh
# runs them under ASan + UBSan.
if(MOSSINFER_SERVER)
  foreach(suite limits cancel)
    add_test(NAME server_${suite}
             COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/server/${suite}_test.py $<TARGET_FILE:moss-infer-hip> ${TINY_MODEL})
    set_tests_properties(server_${suite} PROPERTIES TIMEOUT 900 LABELS "server;bad_input")
  endforeach()
endif()
