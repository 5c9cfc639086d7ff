#include "io/png_text.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "io/files.h"
#include "util/error.h"
#include "util/interrupt.h"

namespace moss {
namespace {

constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

uint32_t be32(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// Reads exactly n bytes at offset; false when the file ends first. Throws on a read error.
bool read_at(int fd, const std::string& path, uint64_t offset, void* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd, static_cast<char*>(out) + done, n - done, off_t(offset + done));
    if (r < 0 && errno == EINTR) {
      check_interrupted();
      continue;
    }
    if (r < 0) throw failure(path + ": read error (" + std::strerror(errno) + ")");
    if (r == 0) return false;
    done += size_t(r);
  }
  return true;
}

std::string latin1_to_utf8(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x80) {
      out += char(c);
    } else {
      out += char(0xc0 | (c >> 6));
      out += char(0x80 | (c & 0x3f));
    }
  }
  return out;
}

// The value of a tEXt or iTXt chunk's data whose keyword matched (data = keyword NUL rest).
PngTextChunk text_value(const std::string& type, const std::string& data, size_t after_key) {
  PngTextChunk out;
  if (type == "tEXt") {
    out.status = PngTextStatus::Found;
    out.text = latin1_to_utf8(data.substr(after_key));
    return out;
  }
  // iTXt: compression flag, method, language tag NUL, translated keyword NUL, text.
  size_t p = after_key;
  if (p + 2 > data.size()) {
    out.status = PngTextStatus::Damaged;
    out.detail = "an iTXt chunk cut short";
    return out;
  }
  if (data[p] != 0) {
    out.status = PngTextStatus::Compressed;
    return out;
  }
  p += 2;
  for (int field = 0; field < 2; ++field) {
    const size_t nul = data.find('\0', p);
    if (nul == std::string::npos) {
      out.status = PngTextStatus::Damaged;
      out.detail = "an iTXt chunk cut short";
      return out;
    }
    p = nul + 1;
  }
  out.status = PngTextStatus::Found;
  out.text = data.substr(p);
  return out;
}

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

// Reads exactly n bytes at offset of the PNG; false when it ends first.
using ReadAt = std::function<bool(uint64_t offset, void* out, size_t n)>;

// The walk over the chunks, for a file or bytes in memory (`path` names either in messages).
PngTextChunk find_text_chunk(const ReadAt& read, uint64_t size, const std::string& path, const std::string& keyword,
                             size_t limit) {
  unsigned char sig[8];
  if (!read(0, sig, 8) || std::memcmp(sig, kSignature, 8) != 0) throw failure(path + ": not a PNG file");
  PngTextChunk result;  // Missing until a chunk with the keyword is seen
  uint64_t offset = 8;
  for (;;) {
    unsigned char head[8];
    if (!read(offset, head, 8))
      throw failure(path + ": the PNG file is cut short (it ends at byte " + std::to_string(size) +
                    ", before its IEND chunk)");
    const uint32_t length = be32(head);
    const std::string type(reinterpret_cast<const char*>(head + 4), 4);
    if (length > 0x7fffffffu)
      throw failure(path + ": a damaged PNG chunk at byte " + std::to_string(offset) + " (length " +
                    std::to_string(length) + ")");
    const uint64_t data_at = offset + 8, next = data_at + uint64_t(length) + 4;
    if (type == "IEND") return result;
    if (next > size)
      throw failure(path + ": the PNG file is cut short (its " + type + " chunk at byte " + std::to_string(offset) +
                    " runs past the end, byte " + std::to_string(size) + ")");
    if (type == "tEXt" || type == "iTXt" || type == "zTXt") {
      // The keyword (1 to 79 bytes, then NUL) decides whether the rest is read.
      const size_t key_probe = std::min<size_t>(length, keyword.size() + 1);
      std::string key(key_probe, '\0');
      if (!read(data_at, key.data(), key_probe))
        throw failure(path + ": the PNG file is cut short (in its " + type + " chunk at byte " +
                      std::to_string(offset) + ")");
      if (key_probe == keyword.size() + 1 && key.compare(0, keyword.size(), keyword) == 0 && key.back() == '\0') {
        if (length > limit)
          throw failure(path + ": its " + type + " chunk '" + keyword + "' has " + std::to_string(length) +
                        " bytes, more than the " + std::to_string(limit) + " read");
        std::string data(length, '\0');
        unsigned char crc_bytes[4];
        if (!read(data_at, data.data(), length) ||
            !read(data_at + length, crc_bytes, 4))
          throw failure(path + ": the PNG file is cut short (in its " + type + " chunk '" + keyword + "')");
        uLong crc = crc32(0L, head + 4, 4);
        crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data()), uInt(length));
        if (uint32_t(crc) != be32(crc_bytes)) {
          result.status = PngTextStatus::Damaged;
          result.detail = "its " + type + " chunk at byte " + std::to_string(offset) + " fails its CRC check";
        } else if (type == "zTXt") {
          result.status = PngTextStatus::Compressed;
        } else {
          PngTextChunk found = text_value(type, data, keyword.size() + 1);
          if (found.status == PngTextStatus::Found) return found;
          result = found;
        }
      }
    }
    offset = next;
  }
}

}  // namespace

PngTextChunk read_png_text_chunk(const std::string& path, const std::string& keyword, size_t limit) {
  const Fd file{open_regular_file(path)};
  struct stat st;
  const uint64_t size = ::fstat(file.fd, &st) == 0 ? uint64_t(st.st_size) : 0;
  return find_text_chunk([&](uint64_t offset, void* out, size_t n) { return read_at(file.fd, path, offset, out, n); },
                         size, path, keyword, limit);
}

PngTextChunk png_text_chunk(const std::string& bytes, const std::string& name, const std::string& keyword,
                            size_t limit) {
  const auto read = [&](uint64_t offset, void* out, size_t n) {
    if (offset > bytes.size() || n > bytes.size() - offset) return false;
    std::memcpy(out, bytes.data() + offset, n);
    return true;
  };
  return find_text_chunk(read, bytes.size(), name, keyword, limit);
}

}  // namespace moss
