# The release package: CPack's tarball holds bin/moss-infer-hip and the licence files.
add_test(NAME package_tarball
         COMMAND bash -c "cd \"$0\" && cpack -G TGZ -B \"$0/package-test\" >/dev/null && \
tar tzf \"$0/package-test/mossinfer-$1-linux-hip-x86_64.tar.gz\" | sort > \"$0/package-test/contents\" && \
grep -qx \"mossinfer-$1-linux-hip-x86_64/bin/moss-infer-hip\" \"$0/package-test/contents\" && \
grep -qx \"mossinfer-$1-linux-hip-x86_64/LICENSE\" \"$0/package-test/contents\" && \
grep -qx \"mossinfer-$1-linux-hip-x86_64/THIRD_PARTY_LICENSES.md\" \"$0/package-test/contents\""
                 ${CMAKE_BINARY_DIR} ${PROJECT_VERSION})
