// One text chunk of a PNG file, read without decoding the image (issue 35): --from-png needs the
// generation record only, and a 308-byte file whose header claims 20000x20000 pixels must not
// cost 1.2 GB. The reader walks the chunk list (8-byte header each), seeks over every chunk's
// data except the text chunk asked for, and reads that one whole only when it is at most
// `limit` bytes; it stops at the first intact match or at IEND. Cost: the chunk headers and the
// chunk read, whatever the image's size.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace moss {

enum class PngTextStatus {
  Found,     // `text` holds the value (tEXt read as Latin-1 and given in UTF-8; iTXt as it is)
  Missing,   // no text chunk with that keyword
  Damaged,   // a chunk with that keyword whose CRC does not match (`detail` says which chunk)
  Compressed,  // only in a zTXt or a compressed iTXt (this reader does not inflate)
};

struct PngTextChunk {
  PngTextStatus status = PngTextStatus::Missing;
  std::string text;
  std::string detail;
};

// Throws moss::Error (exit 1) naming `path` for a file that is not a PNG, is cut short before
// IEND, or whose chunk with the keyword is larger than `limit`.
PngTextChunk read_png_text_chunk(const std::string& path, const std::string& keyword, size_t limit);
// The same over a PNG's bytes in memory (a client's upload); `name` stands for the path in messages.
PngTextChunk png_text_chunk(const std::string& bytes, const std::string& name, const std::string& keyword,
                            size_t limit);

}  // namespace moss
