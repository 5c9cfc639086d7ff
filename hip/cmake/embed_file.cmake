# cmake -DIN=FILE -DOUT=FILE.cpp -DNAME=ident -P embed_file.cmake: FILE's bytes as a C++ array
# `extern const unsigned char NAME[]` with `extern const size_t NAME_size` (a file compiled into
# the binary, such as the server's web page: no file beside the binary to lose or mismatch).
file(READ "${IN}" _hex HEX)
string(LENGTH "${_hex}" _n)
math(EXPR _size "${_n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
string(REPEAT "0x..," 24 _row)  # CMake's regular expressions have no {n}
string(REGEX REPLACE "(${_row})" "\\1\n  " _bytes "${_bytes}")
file(WRITE "${OUT}.tmp" "// Generated from ${IN} by embed_file.cmake; do not edit.\n#include <cstddef>\n"
     "extern const unsigned char ${NAME}[] = {\n  ${_bytes}0x00};\n"
     "extern const std::size_t ${NAME}_size = ${_size};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
