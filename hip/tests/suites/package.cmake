# The package: CPack's tarball holds bin/moss-infer-hip and the licence files, under this build's
# name (linux-hip only for the AMD build, the release; CMakeLists.txt).
add_test(NAME package_tarball
         COMMAND bash -c "cd \"$0\" && cpack -G TGZ -B \"$0/package-test\" >/dev/null && \
tar tzf \"$0/package-test/$1.tar.gz\" | sort > \"$0/package-test/contents\" && \
grep -qx \"$1/bin/moss-infer-hip\" \"$0/package-test/contents\" && \
grep -qx \"$1/LICENSE\" \"$0/package-test/contents\" && \
grep -qx \"$1/THIRD_PARTY_LICENSES.md\" \"$0/package-test/contents\""
                 ${CMAKE_BINARY_DIR} ${MOSSINFER_PACKAGE_NAME})
