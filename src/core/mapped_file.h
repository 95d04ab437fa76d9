#pragma once
// A read-only memory map of a whole file: model weights are used in place (zero copy).
#include <cstddef>
#include <cstdint>
#include <string>

namespace tps {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws tps::Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Maps the pages of [p, p + n) into the page table now, so that rows looked up at
// random later (token embeddings) do not fault in one page at a time (measured on
// TinyLlama's decode: the embedding step 74-89 us per token without, 33-39 with).
void prefault_pages(const void* p, size_t n);

// Drops the whole pages inside [p, p + n) of a read-only file mapping from this
// process's resident set; they stay in the page cache, and a later read maps them again.
void release_pages(const void* p, size_t n);

}  // namespace tps
