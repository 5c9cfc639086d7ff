# `moss-infer-hip serve` (src/server/) and its web page, on cpp-httplib 0.11, included by
# hip/CMakeLists.txt. Two ways to get the library, one source (Debian 12's cpp-httplib 0.11.4):
# - source builds: Debian's libcpp-httplib-dev, whose header declares and whose shared library
#   (libcpp-httplib.so.0.11, built by Debian with CPPHTTPLIB_USE_POLL) implements;
# - the release (MOSSINFER_STATIC_DEPS): the single httplib.h of Debian 12's source package, with
#   Debian's patches (scripts/amd_root.sh unpacks it into the ROCm root; MOSSINFER_HTTPLIB_SOURCE
#   names the folder), compiled into the binary with Debian's CPPHTTPLIB_USE_POLL and without
#   OpenSSL, zlib or brotli, so the binary needs no library the system may lack.
# MOSSINFER_SERVER: ON where cpp-httplib is found unless given. Without a server, `serve` exits 2
# saying why: cpp-httplib was not found (and how to get it), or -DMOSSINFER_SERVER=OFF was asked.
set(MOSSINFER_HTTPLIB_SOURCE "" CACHE PATH
    "folder of cpp-httplib's single httplib.h, compiled into a MOSSINFER_STATIC_DEPS build")
if(MOSSINFER_STATIC_DEPS)
  set(_httplib_found FALSE)
  if(MOSSINFER_HTTPLIB_SOURCE AND EXISTS "${MOSSINFER_HTTPLIB_SOURCE}/httplib.h")
    set(_httplib_found TRUE)
  endif()
  set(_httplib_hint "configure with -DMOSSINFER_HTTPLIB_SOURCE=<folder of httplib.h>, as scripts/amd_release.sh does")
  set(_httplib_what "httplib.h of ${MOSSINFER_HTTPLIB_SOURCE}, compiled in")
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(HTTPLIB IMPORTED_TARGET cpp-httplib)
  set(_httplib_found ${HTTPLIB_FOUND})
  set(_httplib_hint "install libcpp-httplib-dev, then run cmake again and rebuild")
  set(_httplib_what "Debian's libcpp-httplib ${HTTPLIB_VERSION}")
endif()

set(_server_asked_off 0)
if(NOT DEFINED MOSSINFER_SERVER)
  set(MOSSINFER_SERVER ${_httplib_found})
  if(NOT _httplib_found)
    message(WARNING "cpp-httplib not found: building WITHOUT `moss-infer-hip serve` and its web page "
                    "(${_httplib_hint})")
  endif()
elseif(MOSSINFER_SERVER AND NOT _httplib_found)
  message(FATAL_ERROR "MOSSINFER_SERVER=ON but cpp-httplib was not found: ${_httplib_hint}")
elseif(NOT MOSSINFER_SERVER)
  set(_server_asked_off 1)
endif()
if(MOSSINFER_SERVER)
  message(STATUS "moss-infer-hip serve: ON (cpp-httplib: ${_httplib_what})")
elseif(_server_asked_off)
  message(STATUS "moss-infer-hip serve: OFF (-DMOSSINFER_SERVER=OFF)")
else()
  message(STATUS "moss-infer-hip serve: OFF (cpp-httplib not found: ${_httplib_hint})")
endif()

if(MOSSINFER_SERVER)
  file(GLOB MOSSINFER_SERVER_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/server/*.cpp)
  list(FILTER MOSSINFER_SERVER_SOURCES EXCLUDE REGEX "_unavailable\\.cpp$")
  # The web page (src/server/web/index.html) as a C++ array, remade when the page changes.
  set(_page ${CMAKE_CURRENT_SOURCE_DIR}/src/server/web/index.html)
  set(_page_cpp ${CMAKE_CURRENT_BINARY_DIR}/generated/web_page_data.cpp)
  add_custom_command(OUTPUT ${_page_cpp}
    COMMAND ${CMAKE_COMMAND} -DIN=${_page} -DOUT=${_page_cpp} -DNAME=kWebPageHtml
            -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_file.cmake
    DEPENDS ${_page} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/embed_file.cmake
    COMMENT "Embedding the web page (src/server/web/index.html)")
  add_library(mossinfer_server STATIC ${MOSSINFER_SERVER_SOURCES} ${_page_cpp})
  target_link_libraries(mossinfer_server PUBLIC mossinfer_host)
  if(MOSSINFER_STATIC_DEPS)
    target_include_directories(mossinfer_server SYSTEM PUBLIC ${MOSSINFER_HTTPLIB_SOURCE})
    target_compile_definitions(mossinfer_server PUBLIC CPPHTTPLIB_USE_POLL)
  else()
    target_link_libraries(mossinfer_server PUBLIC PkgConfig::HTTPLIB)
  endif()
else()
  add_library(mossinfer_server STATIC ${CMAKE_CURRENT_SOURCE_DIR}/src/server/serve_unavailable.cpp)
  target_link_libraries(mossinfer_server PUBLIC mossinfer_host)
  target_compile_definitions(mossinfer_server PRIVATE MOSSINFER_SERVER_ASKED_OFF=${_server_asked_off})
endif()
target_compile_options(mossinfer_server PRIVATE ${_warn})
