#include "core/mapped_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"

namespace tps {
namespace {

namespace fs = std::filesystem;

TEST(MappedFile, MapsTheBytesAndPrefaultKeepsThem) {
  const fs::path path = fs::temp_directory_path() / ("tps_mapped_" + std::to_string(::getpid()));
  std::vector<char> bytes(3 * 4096 + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 1);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  {
    MappedFile file(path.string());
    ASSERT_EQ(file.size(), bytes.size());
    // A range that starts and ends inside pages, as a tensor's does.
    prefault_pages(file.data() + 100, 2 * 4096 + 50);
    prefault_pages(file.data(), 0);
    for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(static_cast<char>(file.data()[i]), bytes[i]) << i;
  }
  fs::remove(path);
  EXPECT_THROW(MappedFile("/no/such/file"), Error);
}

}  // namespace
}  // namespace tps
