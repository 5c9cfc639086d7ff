// PNG (8-bit RGB with text chunks) and .npy (float32, C order) writers and readers. Writers
// build the file in memory and write it atomically (io/files.h): complete or absent.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moss {

struct PngText {
  std::string key, value;  // value in UTF-8; written as tEXt when ASCII, else as iTXt
};

std::string encode_png(const uint8_t* rgb, int64_t width, int64_t height, const std::vector<PngText>& text);
void write_png(const std::string& path, const uint8_t* rgb, int64_t width, int64_t height,
               const std::vector<PngText>& text);

struct PngImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
  std::vector<PngText> text;
};
PngImage read_png(const std::string& path);  // tests and tools; throws moss::failure

std::string encode_npy_f32(const float* data, const std::vector<int64_t>& shape);
void write_npy_f32(const std::string& path, const float* data, const std::vector<int64_t>& shape);

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
NpyArray read_npy_f32(const std::string& path);  // '<f4', C order only; throws moss::failure

}  // namespace moss
