// imagefolder dataset, image codecs, augmentation math, make-dataset generator.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <climits>
#include <filesystem>
#include <fstream>

#include "data/data.h"
#include "data/image_ops.h"
#include "engine/make_dataset.h"
#include "test_data_common.h"

namespace tb::engine {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

// make-dataset into a folder holding files it would not write refuses (they would join the dataset);
// re-running the same spec over its own output is fine.
TEST(DataImageFolder, MakeDatasetRefusesAFolderWithOtherFiles) {
  TempDir dir;
  ImageFolderSpec spec;
  spec.out = dir.str();
  spec.images = 6;
  spec.width = spec.height = 16;
  spec.classes = 2;
  EXPECT_EQ(generate_image_folder(spec).images, 6);
  EXPECT_EQ(generate_image_folder(spec).images, 6);  // same spec again: overwrites its own files
  spec.images = 4;                                    // img_000004/5 would be left over
  try {
    generate_image_folder(spec);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("already holds 2 file(s)"), std::string::npos) << e.what();
  }
  TempDir other;
  std::ofstream(other.path() / "notes.txt") << "x";
  spec.out = other.str();
  EXPECT_THROW(generate_image_folder(spec), DataError);
}

TEST(DataImageFolder, GeneratedJpegsLoadWithShapeRangeAndLabels) {
  TempDir dir;
  ImageFolderSpec spec;
  spec.out = dir.str();
  spec.images = 9;
  spec.width = 64;
  spec.height = 48;
  spec.classes = 3;
  const auto r = generate_image_folder(spec);
  EXPECT_EQ(r.images, 9);
  // Textured, not flat: at least 2x the bytes of a flat image of the same size and quality (the entropy
  // decode cost follows the bytes).
  std::vector<uint8_t> flat(64 * 48 * 3, 128);
  EXPECT_GT(r.bytes / r.images, 2 * int64_t(testing::jpeg_of(flat, 64, 48).size()));

  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 32, 40, 10});
  ASSERT_EQ(ds->size(), 9);
  EXPECT_EQ(ds->num_classes(), 3);
  EXPECT_NE(ds->describe().find("9 images, 3 classes"), std::string::npos) << ds->describe();
  std::vector<float> out(3 * 32 * 40);
  for (int64_t i = 0; i < ds->size(); ++i) {
    std::mt19937_64 rng(i);
    int64_t label = -1;
    ASSERT_TRUE(ds->load(i, rng, out.data(), label)) << i;
    // Sorted class folders → labels; files sorted inside: indices 0..2 are class_000, 3..5 class_001, ...
    EXPECT_EQ(label, i / 3);
    double sum = 0, sq = 0;
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 32 * 40; ++k) {
        const float v = out[size_t(c) * 32 * 40 + k];
        ASSERT_TRUE(std::isfinite(v));
        ASSERT_GE(v, (0.f - kMean[c]) / kStd[c] - 1e-4f);
        ASSERT_LE(v, (1.f - kMean[c]) / kStd[c] + 1e-4f);
        sum += v;
        sq += double(v) * v;
      }
    const double n = 3.0 * 32 * 40, var = sq / n - (sum / n) * (sum / n);
    EXPECT_GT(var, 0.01) << "sample " << i << " is flat";
  }
}

TEST(DataImageFolder, PngAndJpegTogetherExactNormalizationOfAUniformPng) {
  TempDir dir;
  const int w = 30, h = 20;
  testing::write_bytes(dir.path() / "a_cats" / "x.jpg", testing::jpeg_of(testing::textured_rgb(w, h, 0), w, h));
  std::vector<uint8_t> uniform(size_t(w) * h * 3);
  for (size_t i = 0; i < uniform.size(); i += 3) {
    uniform[i] = 255;
    uniform[i + 1] = 0;
    uniform[i + 2] = 128;
  }
  testing::write_bytes(dir.path() / "b_dogs" / "y.png", testing::png_of(uniform, w, h));
  // Not an image extension: ignored.
  testing::write_bytes(dir.path() / "b_dogs" / "notes.txt", {'h', 'i'});

  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 16, 16, 5});
  ASSERT_EQ(ds->size(), 2);
  std::vector<float> out(3 * 16 * 16);
  std::mt19937_64 rng(1);
  int64_t label = -1;
  ASSERT_TRUE(ds->load(1, rng, out.data(), label));
  EXPECT_EQ(label, 1);
  const float want[3] = {(1.f - kMean[0]) / kStd[0], (0.f - kMean[1]) / kStd[1], (128.f / 255.f - kMean[2]) / kStd[2]};
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 16 * 16; ++k) ASSERT_NEAR(out[size_t(c) * 256 + k], want[c], 1e-4) << c << "," << k;
  ASSERT_TRUE(ds->load(0, rng, out.data(), label));
  EXPECT_EQ(label, 0);
}

TEST(DataImageFolder, GrayscaleModelGetsOneChannel) {
  TempDir dir;
  const int w = 24, h = 24;
  std::vector<uint8_t> gray(size_t(w) * h, 100);
  testing::write_bytes(dir.path() / "c" / "g.png", testing::png_of(gray, w, h, 1));
  testing::write_bytes(dir.path() / "c" / "j.jpg", testing::jpeg_of(testing::textured_rgb(w, h, 1), w, h));
  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{1, 28, 28, 10});
  std::vector<float> out(28 * 28);
  std::mt19937_64 rng(3);
  int64_t label = -1;
  ASSERT_TRUE(ds->load(1, rng, out.data(), label));  // sorted: g.png is index 0, j.jpg 1
  ASSERT_TRUE(ds->load(0, rng, out.data(), label));
  for (float v : out) ASSERT_NEAR(v, (100.f / 255.f - 0.449f) / 0.226f, 1e-4);
}

TEST(DataImageFolder, CorruptAndTruncatedJpegsFailToLoad) {
  TempDir dir;
  const int w = 64, h = 64;
  const auto good = testing::jpeg_of(testing::textured_rgb(w, h, 2), w, h);
  testing::write_bytes(dir.path() / "k" / "0_good.jpg", good);
  testing::write_bytes(dir.path() / "k" / "1_truncated.jpg", std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2));
  std::vector<uint8_t> garbage(good.size());
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = uint8_t(i * 7919 % 251);
  testing::write_bytes(dir.path() / "k" / "2_garbage.jpg", garbage);
  // Valid JPEG header followed by noise: the header parses, the decode must fail.
  std::vector<uint8_t> scrambled = good;
  for (size_t i = scrambled.size() / 3; i < scrambled.size(); ++i) scrambled[i] = uint8_t(i * 31 % 256);
  testing::write_bytes(dir.path() / "k" / "3_scrambled.jpg", scrambled);
  testing::write_bytes(dir.path() / "k" / "4_empty.png", {});

  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 32, 32, 10});
  ASSERT_EQ(ds->size(), 5);
  std::vector<float> out(3 * 32 * 32);
  std::mt19937_64 rng(0);
  int64_t label = 0;
  EXPECT_TRUE(ds->load(0, rng, out.data(), label));
  EXPECT_FALSE(ds->load(1, rng, out.data(), label));
  EXPECT_FALSE(ds->load(2, rng, out.data(), label));
  EXPECT_FALSE(ds->load(4, rng, out.data(), label));
  EXPECT_FALSE(ds->load(99, rng, out.data(), label));
  (void)ds->load(3, rng, out.data(), label);  // may or may not decode; must not crash
  // A good file right after a failed one still decodes (libjpeg-turbo leaves a failed handle unusable).
  EXPECT_FALSE(ds->load(1, rng, out.data(), label));
  EXPECT_TRUE(ds->load(0, rng, out.data(), label));
  EXPECT_FALSE(ds->load(2, rng, out.data(), label));
  EXPECT_TRUE(ds->load(0, rng, out.data(), label));
}

TEST(DataImageFolder, LoaderSkipsAndCountsCorruptFiles) {
  TempDir dir;
  const int w = 40, h = 40;
  for (int i = 0; i < 6; ++i)
    testing::write_bytes(dir.path() / (i % 2 ? "b" : "a") / ("img" + std::to_string(i) + ".jpg"),
                         testing::jpeg_of(testing::textured_rgb(w, h, i), w, h));
  const auto good = testing::jpeg_of(testing::textured_rgb(w, h, 9), w, h);
  testing::write_bytes(dir.path() / "a" / "truncated.jpg", std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 3));
  testing::write_bytes(dir.path() / "b" / "garbage.jpg", std::vector<uint8_t>(500, 0x42));

  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 24, 24, 10});
  ASSERT_EQ(ds->size(), 8);
  LoaderOptions o;
  o.batch_size = 4;
  o.workers = 0;
  Loader loader(ds, o);
  // Three epochs' worth: every file is visited, the corrupt ones are replaced, never thrown.
  for (int i = 0; i < 6; ++i) {
    Batch b = loader.next();
    ASSERT_EQ(b.input.sizes(), (std::vector<int64_t>{4, 3, 24, 24}));
    ASSERT_EQ(b.samples, 4);
    ASSERT_TRUE(torch::isfinite(b.input).all().item<bool>());
  }
  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.skipped, 2);             // two distinct bad files
  EXPECT_GE(s.skip_events, 2);         // ... hit at least once each
  EXPECT_EQ(s.batches, 6);
  EXPECT_EQ(s.samples, 24);
}

TEST(DataImageFolder, OnlyCorruptFilesIsAClearError) {
  TempDir dir;
  testing::write_bytes(dir.path() / "a" / "x.jpg", std::vector<uint8_t>(100, 1));
  testing::write_bytes(dir.path() / "a" / "y.png", std::vector<uint8_t>(100, 2));
  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 8, 8, 10});
  for (int workers : {0, 2}) {
    LoaderOptions o;
    o.batch_size = 2;
    o.workers = workers;
    Loader loader(ds, o);
    try {
      loader.next();
      FAIL() << "expected DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("no readable sample"), std::string::npos) << e.what();
    }
  }
}

TEST(DataImageFolder, MissingEmptyOrImagelessFolderIsDataError) {
  TempDir dir;
  const InputSpec in{3, 8, 8, 10};
  auto expect_error = [&](const std::string& spec, const std::string& needle) {
    try {
      make_dataset(spec, in);
      ADD_FAILURE() << spec << ": expected DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  expect_error("imagefolder:" + dir.str() + "/nope", "does not exist");
  expect_error("imagefolder:", "no directory");
  expect_error("imagefolder:" + dir.str(), "no class subfolders");
  fs::create_directories(dir.path() / "a");
  testing::write_bytes(dir.path() / "a" / "readme.txt", {'x'});
  expect_error("imagefolder:" + dir.str(), "no images");
  expect_error("imagenet:" + dir.str(), "unknown dataset");
  testing::write_bytes(dir.path() / "file.jpg", {'x'});
  expect_error("imagefolder:" + (dir.path() / "file.jpg").string(), "not a directory");
}

TEST(DataImageFolder, Fp16PreprocessIsCloseButReallyHalfPrecision) {
  TempDir dir;
  ImageFolderSpec spec;
  spec.out = dir.str();
  spec.images = 2;
  spec.width = spec.height = 96;
  spec.classes = 1;
  generate_image_folder(spec);
  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 64, 64, 10});
  std::vector<float> a(3 * 64 * 64), b(a.size());
  int64_t la = 0, lb = 0;
  std::mt19937_64 r1(5), r2(5);
  ASSERT_TRUE(ds->load(0, r1, a.data(), la, SampleOptions{true}));
  ASSERT_TRUE(ds->load(0, r2, b.data(), lb, SampleOptions{false}));
  EXPECT_EQ(la, lb);
  double max_diff = 0;
  int exactly_half = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(a[i] - b[i])));
    exactly_half += float(c10::Half(b[i])) == b[i];
  }
  EXPECT_LT(max_diff, 0.03);  // fp16 rounding of values up to ~2.6 plus a 0..255 blend in fp16
  EXPECT_GT(max_diff, 0.0);   // but not the fp32 result: the math really ran in half precision
  EXPECT_EQ(exactly_half, int(b.size()));  // every fp16-path output is representable in fp16
}


// fast_decode: with the crop known, TurboJPEG decodes at a reduced DCT scale; the result stays close to the
// full-size decode (same crop, same flip) but is not bit-identical. (Its speed is measured in
// bench/bench_engine_loader, not here.)
TEST(DataImageFolder, ScaledDecodeIsCloseToFullDecodeAndCheaper) {
  TempDir dir;
  ImageFolderSpec spec;
  spec.out = dir.str();
  spec.images = 4;
  spec.width = 640;
  spec.height = 480;
  spec.classes = 1;
  generate_image_folder(spec);
  auto ds = make_dataset("imagefolder:" + dir.str(), InputSpec{3, 32, 32, 10});
  std::vector<float> a(3 * 32 * 32), b(a.size());
  double sum_diff = 0;
  int64_t la = 0, lb = 0;
  for (int64_t i = 0; i < 4; ++i) {
    std::mt19937_64 r1(11 + i), r2(11 + i);
    SampleOptions full, fast;
    fast.scaled_decode = true;
    ASSERT_TRUE(ds->load(i, r1, a.data(), la, full));
    ASSERT_TRUE(ds->load(i, r2, b.data(), lb, fast));
    EXPECT_EQ(la, lb);
    for (size_t k = 0; k < a.size(); ++k) sum_diff += std::abs(a[k] - b[k]);
  }
  const double mean_diff = sum_diff / (4.0 * a.size());
  EXPECT_GT(mean_diff, 0.0);   // really a different decode path
  EXPECT_LT(mean_diff, 0.25);  // same crop and flip: the picture agrees (values are in std units, range ~4)
}

TEST(DataImageOps, RandomResizedCropStaysInsideAndCoversTheScaleRange) {
  std::mt19937_64 rng(7);
  double min_frac = 1, max_frac = 0;
  for (int i = 0; i < 2000; ++i) {
    const int W = 50 + int(rng() % 300), H = 50 + int(rng() % 300);
    const data::CropBox b = data::random_resized_crop(W, H, rng);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_GT(b.w, 0);
    ASSERT_GT(b.h, 0);
    ASSERT_LE(b.x + b.w, W);
    ASSERT_LE(b.y + b.h, H);
    const double frac = double(b.w) * b.h / (double(W) * H);
    min_frac = std::min(min_frac, frac);
    max_frac = std::max(max_frac, frac);
  }
  EXPECT_LT(min_frac, 0.12);
  EXPECT_GT(max_frac, 0.8);
  // Fallback for an extreme aspect ratio: centre crop clamped to 4/3.
  std::mt19937_64 r2(1);
  const data::CropBox wide = data::random_resized_crop(1000, 10, r2);
  EXPECT_LE(wide.w, 1000);
  EXPECT_LE(wide.h, 10);
}

TEST(DataImageOps, JpegDecodesAtReducedScaleWhenTheCropAllows) {
  const int w = 256, h = 256;
  const auto jpeg = testing::jpeg_of(testing::textured_rgb(w, h, 3), w, h);
  data::Image img;
  double scale = 0;
  ASSERT_TRUE(data::decode_jpeg(jpeg.data(), jpeg.size(), 3, data::CropBox{0, 0, 256, 256}, 64, 64, img, scale));
  EXPECT_DOUBLE_EQ(scale, 0.25);
  EXPECT_EQ(img.width, 64);
  EXPECT_EQ(img.height, 64);
  // A small crop needs the full resolution.
  ASSERT_TRUE(data::decode_jpeg(jpeg.data(), jpeg.size(), 3, data::CropBox{10, 10, 60, 60}, 64, 64, img, scale));
  EXPECT_DOUBLE_EQ(scale, 1.0);
  EXPECT_EQ(img.width, 256);
  // Gray decode.
  ASSERT_TRUE(data::decode_jpeg(jpeg.data(), jpeg.size(), 1, data::CropBox{}, 8, 8, img, scale));
  EXPECT_EQ(img.channels, 1);
  EXPECT_EQ(img.pixels.size(), size_t(256 * 256));
}

TEST(DataMakeDataset, DeterministicAndValidated) {
  TempDir a, b;
  ImageFolderSpec spec;
  spec.images = 4;
  spec.width = 32;
  spec.height = 24;
  spec.classes = 2;
  spec.seed = 11;
  int64_t calls = 0;
  spec.progress = [&](int64_t done, int64_t total) {
    ++calls;
    EXPECT_EQ(total, 4);
    EXPECT_EQ(done, (calls - 1) % 4 + 1);
  };
  spec.out = a.str();
  generate_image_folder(spec);
  spec.out = b.str();
  generate_image_folder(spec);
  EXPECT_EQ(calls, 8);
  std::vector<uint8_t> x, y;
  ASSERT_TRUE(data::read_file((a.path() / "class_001" / "img_000003.jpg").string(), x));
  ASSERT_TRUE(data::read_file((b.path() / "class_001" / "img_000003.jpg").string(), y));
  EXPECT_EQ(x, y);
  int w = 0, h = 0;
  ASSERT_TRUE(data::image_dimensions(x.data(), x.size(), w, h));
  EXPECT_EQ(w, 32);
  EXPECT_EQ(h, 24);

  ImageFolderSpec bad = spec;
  bad.images = 0;
  EXPECT_THROW(generate_image_folder(bad), DataError);
  bad = spec;
  bad.width = 2;
  EXPECT_THROW(generate_image_folder(bad), DataError);
  bad = spec;
  bad.out = "/proc/tunebench_cannot_write_here";
  EXPECT_THROW(generate_image_folder(bad), DataError);

  int pw = 0, ph = 0;
  EXPECT_TRUE(parse_image_size("160x120", pw, ph));
  EXPECT_EQ(pw, 160);
  EXPECT_EQ(ph, 120);
  EXPECT_FALSE(parse_image_size("160", pw, ph));
  EXPECT_FALSE(parse_image_size("0x10", pw, ph));
  EXPECT_FALSE(parse_image_size("-5x10", pw, ph));
  EXPECT_FALSE(parse_image_size("12x12x", pw, ph));
}

}  // namespace
}  // namespace tb::engine
