#include "io/image_files.h"

#include <png.h>

#include <cstring>
#include <memory>

#include "io/files.h"
#include "util/error.h"

namespace moss {
namespace {

void png_append(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}
void png_flush_nothing(png_structp) {}
[[noreturn]] void png_fail(png_structp png, png_const_charp msg) {
  std::string* err = static_cast<std::string*>(png_get_error_ptr(png));
  if (err) *err = msg;
  png_longjmp(png, 1);
}
void png_warn_silently(png_structp, png_const_charp) {}

bool is_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c >= 0x80 || c == 0) return false;
  return true;
}

}  // namespace

// libpng reports errors by longjmp: the functions that call it hold no C++ objects with
// destructors in their own frame (only plain pointers), so nothing is skipped by the jump.
static bool png_write_raw(png_structp png, png_infop info, std::string* out, const uint8_t* rgb, int64_t width,
                          int64_t height, png_text* chunks, int n_chunks) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, out, png_append, png_flush_nothing);
  png_set_IHDR(png, info, png_uint_32(width), png_uint_32(height), 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (n_chunks) png_set_text(png, info, chunks, n_chunks);
  png_write_info(png, info);
  for (int64_t y = 0; y < height; ++y) png_write_row(png, const_cast<png_bytep>(rgb + y * width * 3));
  png_write_end(png, info);
  return true;
}

std::string encode_png(const uint8_t* rgb, int64_t width, int64_t height, const std::vector<PngText>& text) {
  std::string out, err;
  std::vector<png_text> chunks(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    // libpng takes the text up to its first NUL: a value with one would be cut without a word.
    if (text[i].value.find('\0') != std::string::npos)
      throw failure("PNG: the " + text[i].key + " text holds a NUL byte, which a PNG text chunk cannot");
    std::memset(&chunks[i], 0, sizeof(png_text));
    const bool ascii = is_ascii(text[i].value);
    chunks[i].compression = ascii ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
    chunks[i].key = const_cast<char*>(text[i].key.c_str());
    chunks[i].text = const_cast<char*>(text[i].value.c_str());
    (ascii ? chunks[i].text_length : chunks[i].itxt_length) = text[i].value.size();
  }
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, png_fail, png_warn_silently);
  if (!png) throw failure("PNG: cannot create the encoder");
  png_infop info = png_create_info_struct(png);
  bool ok = info && png_write_raw(png, info, &out, rgb, width, height, chunks.data(), int(chunks.size()));
  png_destroy_write_struct(&png, &info);
  if (!ok) throw failure("PNG encoding failed: " + err);
  return out;
}

void write_png(const std::string& path, const uint8_t* rgb, int64_t width, int64_t height,
               const std::vector<PngText>& text) {
  write_file_atomic(path, encode_png(rgb, width, height, text));
}

namespace {
struct PngReader {
  const std::string* bytes;
  size_t pos;
};
void png_read_bytes(png_structp p, png_bytep out, png_size_t n) {
  PngReader* r = static_cast<PngReader*>(png_get_io_ptr(p));
  if (r->pos + n > r->bytes->size()) png_error(p, "truncated file");
  std::memcpy(out, r->bytes->data() + r->pos, n);
  r->pos += n;
}
}  // namespace

// Two passes around the longjmp rule: the header pass reports the size, the caller sizes the
// pixel buffer, the second pass fills it and collects the text chunks.
static bool png_read_raw(png_structp png, png_infop info, PngReader* reader, PngImage* img) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, reader, png_read_bytes);
  png_read_info(png, info);
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_read_update_info(png, info);
  img->width = png_get_image_width(png, info);
  img->height = png_get_image_height(png, info);
  img->rgb.resize(size_t(img->width * img->height * 3));
  for (int64_t y = 0; y < img->height; ++y) png_read_row(png, img->rgb.data() + y * img->width * 3, nullptr);
  png_read_end(png, info);
  png_textp t = nullptr;
  int n = 0;
  png_get_text(png, info, &t, &n);
  for (int i = 0; i < n; ++i)
    img->text.push_back(
        {t[i].key, std::string(t[i].text, t[i].compression > 0 ? t[i].itxt_length : t[i].text_length)});
  return true;
}

PngImage read_png(const std::string& path) {
  std::string bytes = read_text_file(path), err;
  if (bytes.size() < 8 || png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8))
    throw failure(path + ": not a PNG file");
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, png_fail, png_warn_silently);
  png_infop info = png_create_info_struct(png);
  PngImage img;
  PngReader reader{&bytes, 0};
  bool ok = info && png_read_raw(png, info, &reader, &img);
  png_destroy_read_struct(&png, &info, nullptr);
  if (!ok) throw failure(path + ": PNG decoding failed: " + err);
  return img;
}

std::string encode_npy_f32(const float* data, const std::vector<int64_t>& shape) {
  std::string dims;
  size_t count = 1;
  for (int64_t d : shape) {
    dims += std::to_string(d) + ", ";
    count *= size_t(d);
  }
  if (shape.size() > 1) dims.resize(dims.size() - 1);  // "(a, b)"; one dim keeps "(a,)"
  else if (shape.size() == 1) dims = std::to_string(shape[0]) + ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + '\n', padded with spaces to 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(data), count * sizeof(float));
  return out;
}

void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape) {
  write_file_atomic(path, encode_npy_f32(data, shape));
}

NpyArray read_npy_f32(const std::string& path) {
  std::string b = read_text_file(path);
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw failure(path + ": not a .npy file");
  size_t hlen = uint8_t(b[8]) | (size_t(uint8_t(b[9])) << 8);
  if (10 + hlen > b.size()) throw failure(path + ": truncated .npy header");
  std::string h = b.substr(10, hlen);
  if (h.find("'descr': '<f4'") == std::string::npos || h.find("'fortran_order': False") == std::string::npos)
    throw failure(path + ": only little-endian float32 C-order arrays are read");
  // The shape tuple: "'shape': (a, b, c)" with any spacing.
  const size_t key = h.find("'shape': (");
  const size_t close = key == std::string::npos ? key : h.find(')', key);
  if (close == std::string::npos) throw failure(path + ": no shape in the .npy header");
  NpyArray a;
  size_t count = 1;
  int64_t dim = -1;
  for (size_t i = key + 10; i <= close; ++i) {
    const char c = h[i];
    if (c >= '0' && c <= '9') {
      dim = (dim < 0 ? 0 : dim * 10) + (c - '0');
      if (dim > (int64_t(1) << 40)) throw failure(path + ": shape too large in the .npy header");
    } else if (c == ',' || c == ')') {
      if (dim >= 0) {
        a.shape.push_back(dim);
        count *= size_t(dim);
      }
      dim = -1;
    } else if (c != ' ') {
      throw failure(path + ": malformed shape in the .npy header");
    }
  }
  if (b.size() != 10 + hlen + count * 4) throw failure(path + ": data size does not match the shape");
  a.data.resize(count);
  std::memcpy(a.data.data(), b.data() + 10 + hlen, count * 4);
  return a;
}

}  // namespace moss
