// Fixture helpers shared by the data pipeline tests (test_data_*.cpp): temporary folders and image files
// generated at test time.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/image_ops.h"

namespace tb::engine::testing {

// A fresh folder under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "tb_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    if (info) name += std::string("_") + info->name();
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(p.parent_path());
  FILE* f = std::fopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr) << p;
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

// A textured RGB image (gradients plus a checker), so JPEG crops differ from each other.
inline std::vector<uint8_t> textured_rgb(int w, int h, int seed) {
  std::vector<uint8_t> px(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &px[(size_t(y) * w + x) * 3];
      p[0] = uint8_t((x * 255) / w);
      p[1] = uint8_t((y * 255) / h);
      p[2] = uint8_t((((x / 4) + (y / 4) + seed) % 2) * 200 + 20);
    }
  return px;
}

inline std::vector<uint8_t> jpeg_of(const std::vector<uint8_t>& rgb, int w, int h, int quality = 90) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(data::encode_jpeg(rgb.data(), w, h, 3, quality, out));
  return out;
}

inline std::vector<uint8_t> png_of(const std::vector<uint8_t>& px, int w, int h, int channels = 3) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(data::encode_png(px.data(), w, h, channels, out));
  return out;
}

}  // namespace tb::engine::testing
