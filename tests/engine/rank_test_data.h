// The data the data-parallel CLI tests train on (test_cli_distributed.cpp, test_cli_tune_ranks.cpp): 48 JPEGs
// of 32x32 in 4 classes, enough for two shards of a few batches. Test-only.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

#include "engine/make_dataset.h"

namespace tb::test_util {

// Makes DIR/images under the temp dir (DIR = `prefix` + this pid) and returns DIR.
inline std::string make_rank_test_images(const std::string& prefix) {
  const std::string dir = (std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))).string();
  tb::engine::ImageFolderSpec spec;
  spec.out = dir + "/images";
  spec.images = 48;
  spec.width = spec.height = 32;
  spec.classes = 4;
  tb::engine::generate_image_folder(spec);
  return dir;
}

}  // namespace tb::test_util
