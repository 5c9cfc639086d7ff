#include "streaming/staging.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace moss {

FileStager::FileStager(Backend& be, const std::vector<BlockImage>& images) : be_(be), images_(images) {
  size_t largest = 0;
  for (const BlockImage& img : images_) largest = std::max(largest, img.image_bytes());
  for (Tensor& s : staging_) s = be_.alloc_pinned(largest);
}

FileStager::~FileStager() {
  for (auto& f : fill_)
    if (f.valid()) f.wait();
}

void FileStager::start_fill(int l, int buffer) {
  std::future<void>& f = fill_[size_t(buffer)];
  if (f.valid()) f.get();
  f = std::async(std::launch::async,
                 [this, l, buffer] { images_[size_t(l)].fill(staging_[buffer].ptr<uint8_t>(), kImageFillThreads); });
}

Backend::Fence FileStager::copy(int l, int buffer, Tensor& dst, Backend::Fence after) {
  std::future<void>& f = fill_[size_t(buffer)];
  if (!f.valid()) throw std::logic_error("weight streaming: block " + std::to_string(l) + " was never filled");
  f.get();  // rethrows a failed fill
  return images_[size_t(l)].copy(be_, staging_[buffer], dst, nullptr, after, 0, 0);
}

void FileStager::host_wait(Backend::Fence copy) {
  be_.compute_wait(copy);
  be_.synchronize();
}

}  // namespace moss
