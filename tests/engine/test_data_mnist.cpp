// mnist:DIR (IDX files, plain and gzip) and the synthetic dataset.
#include <gtest/gtest.h>
#include <zlib.h>

#include "data/data.h"
#include "test_data_common.h"

namespace tb::engine {
namespace {

using testing::TempDir;

void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  v.push_back(uint8_t(x >> 24));
  v.push_back(uint8_t(x >> 16));
  v.push_back(uint8_t(x >> 8));
  v.push_back(uint8_t(x));
}

// count images of rows x cols, pixel (i, k) = (i * 13 + k) % 256, label i % 10.
void write_idx(const std::filesystem::path& dir, uint32_t count, uint32_t rows, uint32_t cols, bool gz = false,
               uint32_t image_magic = 0x803, uint32_t label_count = 0) {
  std::vector<uint8_t> img, lbl;
  put_be32(img, image_magic);
  put_be32(img, count);
  put_be32(img, rows);
  put_be32(img, cols);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t k = 0; k < rows * cols; ++k) img.push_back(uint8_t((i * 13 + k) % 256));
  if (!label_count) label_count = count;
  put_be32(lbl, 0x801);
  put_be32(lbl, label_count);
  for (uint32_t i = 0; i < label_count; ++i) lbl.push_back(uint8_t(i % 10));
  if (!gz) {
    testing::write_bytes(dir / "train-images-idx3-ubyte", img);
    testing::write_bytes(dir / "train-labels-idx1-ubyte", lbl);
    return;
  }
  for (auto [name, data] : {std::pair{"train-images-idx3-ubyte.gz", &img}, std::pair{"train-labels-idx1-ubyte.gz", &lbl}}) {
    gzFile f = gzopen((dir / name).string().c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, data->data(), unsigned(data->size())), int(data->size()));
    gzclose(f);
  }
}

void expect_mnist_values(const Dataset& ds) {
  std::vector<float> out(28 * 28);
  for (int64_t i : {0, 7, 19}) {
    std::mt19937_64 rng(0);
    int64_t label = -1;
    ASSERT_TRUE(ds.load(i, rng, out.data(), label));
    EXPECT_EQ(label, i % 10);
    for (int k = 0; k < 28 * 28; ++k) {
      const float px = float((i * 13 + k) % 256);
      ASSERT_NEAR(out[size_t(k)], (px / 255.f - 0.1307f) / 0.3081f, 1e-5) << i << "," << k;
    }
  }
}

TEST(DataMnist, IdxFilesLoadExactly) {
  TempDir dir;
  write_idx(dir.path(), 20, 28, 28);
  auto ds = make_dataset("mnist:" + dir.str(), InputSpec{1, 28, 28, 10});
  EXPECT_EQ(ds->size(), 20);
  EXPECT_EQ(ds->num_classes(), 10);
  expect_mnist_values(*ds);
  // Through the loader: shapes and targets.
  LoaderOptions o;
  o.batch_size = 8;
  Loader loader(ds, o);
  Batch b = loader.next();
  EXPECT_EQ(b.input.sizes(), (std::vector<int64_t>{8, 1, 28, 28}));
  EXPECT_EQ(b.target.scalar_type(), torch::kInt64);
  EXPECT_TRUE((b.target >= 0).all().item<bool>() && (b.target < 10).all().item<bool>());
}

TEST(DataMnist, GzipFilesLoadToo) {
  TempDir dir;
  write_idx(dir.path(), 20, 28, 28, /*gz=*/true);
  auto ds = make_dataset("mnist:" + dir.str(), InputSpec{1, 28, 28, 10});
  EXPECT_EQ(ds->size(), 20);
  expect_mnist_values(*ds);
}

TEST(DataMnist, ResizedAndReplicatedForAnRgbModel) {
  TempDir dir;
  write_idx(dir.path(), 3, 28, 28);
  auto ds = make_dataset("mnist:" + dir.str(), InputSpec{3, 32, 32, 10});
  std::vector<float> out(3 * 32 * 32);
  std::mt19937_64 rng(0);
  int64_t label = 0;
  ASSERT_TRUE(ds->load(1, rng, out.data(), label));
  for (int k = 0; k < 32 * 32; ++k) {
    ASSERT_EQ(out[size_t(k)], out[size_t(1024 + k)]);
    ASSERT_EQ(out[size_t(k)], out[size_t(2048 + k)]);
  }
}

TEST(DataMnist, BadFilesAreClearErrors) {
  const InputSpec in{1, 28, 28, 10};
  auto expect_error = [&](const std::string& dir, const std::string& needle) {
    try {
      make_dataset("mnist:" + dir, in);
      ADD_FAILURE() << "expected DataError (" << needle << ")";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {
    TempDir dir;
    expect_error(dir.str(), "train-images-idx3-ubyte");
    expect_error(dir.str() + "/missing", "does not exist");
  }
  {
    TempDir dir;
    write_idx(dir.path(), 4, 28, 28, false, /*image_magic=*/0x1234);
    expect_error(dir.str(), "bad magic");
  }
  {
    TempDir dir;
    write_idx(dir.path(), 4, 28, 28);
    std::vector<uint8_t> img;
    ASSERT_TRUE(data::read_file((dir.path() / "train-images-idx3-ubyte").string(), img));
    img.resize(img.size() - 10);
    testing::write_bytes(dir.path() / "train-images-idx3-ubyte", img);
    expect_error(dir.str(), "does not match its header");
  }
  {
    TempDir dir;
    write_idx(dir.path(), 4, 28, 28, false, 0x803, /*label_count=*/5);
    expect_error(dir.str(), "4 images but 5 labels");
  }
}

TEST(DataSynthetic, OneDeviceBatchReusedWithNoLoadingCost) {
  auto ds = make_dataset("synthetic", InputSpec{3, 16, 16, 4});
  EXPECT_TRUE(ds->is_synthetic());
  LoaderOptions o;
  o.batch_size = 6;
  o.workers = 2;  // ignored: nothing to load
  Loader loader(ds, o);
  Batch a = loader.next();
  Batch b = loader.next();
  EXPECT_EQ(a.input.sizes(), (std::vector<int64_t>{6, 3, 16, 16}));
  EXPECT_EQ(a.input.data_ptr(), b.input.data_ptr());
  EXPECT_EQ(b.index, a.index + 1);
  EXPECT_EQ(b.data_wait_ns, 0);
  EXPECT_TRUE((a.target >= 0).all().item<bool>() && (a.target < 4).all().item<bool>());
  EXPECT_GT(a.input.std().item<float>(), 0.5f);
  LoaderOptions o2 = o;
  o2.batch_size = 3;
  o2.channels_last = true;
  loader.reconfigure(o2);
  Batch c = loader.next();
  EXPECT_EQ(c.input.size(0), 3);
  EXPECT_TRUE(c.input.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_EQ(loader.stats().batches, 3);
}

}  // namespace
}  // namespace tb::engine
