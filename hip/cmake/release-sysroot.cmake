# Toolchain file of the AMD release build (scripts/amd_release.sh, docs/amd_release.md): run inside
# the ROCm 7 root, clang-22 compiles host and device code, but against the Debian 12 tree in
# ${MOSSINFER_SYSROOT} (glibc 2.36 headers, GCC 12's libstdc++, static PCRE2/utf8proc/libpng/zlib),
# so the binary needs no newer glibc than the distributions it targets. The HIP runtime and the
# device libraries still come from the root (ROCM_PATH=/usr).
set(MOSSINFER_SYSROOT "/sysroot" CACHE PATH "Debian 12 tree the release is compiled against")
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_SYSROOT "${MOSSINFER_SYSROOT}")
set(CMAKE_C_COMPILER clang-22)
set(CMAKE_CXX_COMPILER clang++-22)
set(CMAKE_HIP_COMPILER clang++-22)
set(_gcc "--gcc-install-dir=${MOSSINFER_SYSROOT}/usr/lib/gcc/x86_64-linux-gnu/12")
set(CMAKE_C_FLAGS_INIT "${_gcc}")
set(CMAKE_CXX_FLAGS_INIT "${_gcc}")
# With a sysroot, clang would look for the HIP runtime and the device libraries under it.
set(CMAKE_HIP_FLAGS_INIT "${_gcc} --rocm-path=/usr --rocm-device-lib-path=/usr/lib/llvm-22/lib/clang/22/amdgcn/bitcode")
# libamdhip64.so (the root's) needs the root's newer glibc; only its own symbols are resolved here,
# the user's ROCm supplies the library at run time.
# The HIP link (clang's --hip-link adds -lamdhip64) must find that one library of the root, and no
# other: ${MOSSINFER_HIP_LINK_DIR} holds only libamdhip64.so (scripts/amd_release.sh makes it).
set(MOSSINFER_HIP_LINK_DIR "/opt/mossinfer-hip-link" CACHE PATH "folder holding only the root's libamdhip64.so")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld -Wl,--allow-shlib-undefined -L${MOSSINFER_HIP_LINK_DIR}")
# Libraries and headers from the sysroot only; programs (and the HIP package files) from the root.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
