// The three dataset kinds behind make_dataset(): synthetic, imagefolder:DIR, mnist:DIR.
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "data/data.h"
#include "data/image_ops.h"
#include "profiler/range_names.h"
#include "profiler/recorder.h"

namespace tb::engine {
namespace {

namespace fs = std::filesystem;
namespace names = tb::prof::names;

// ImageNet statistics (torchvision's Normalize for pretrained models); the gray value is their average.
constexpr float kImageNetMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kImageNetStd[3] = {0.229f, 0.224f, 0.225f};
constexpr float kGrayMean[1] = {0.449f};
constexpr float kGrayStd[1] = {0.226f};
// MNIST statistics of PyTorch's MNIST example.
constexpr float kMnistMean[1] = {0.1307f};
constexpr float kMnistStd[1] = {0.3081f};

void check_spec(const InputSpec& in, const std::string& what) {
  if (in.channels != 1 && in.channels != 3)
    throw DataError(what + ": the model wants " + std::to_string(in.channels) +
                    " input channels; datasets produce 1 (gray) or 3 (RGB)");
  if (in.height < 1 || in.width < 1 || in.height > 4096 || in.width > 4096)
    throw DataError(what + ": unsupported input size " + std::to_string(in.height) + "x" + std::to_string(in.width));
}

// A dataset read from a directory (`kind`:DIR): the name its errors go by ("mnist:/data"), once the model's input
// suits it and the path given exists.
std::string directory_dataset(const char* kind, const std::string& dir, const InputSpec& in) {
  const std::string what = std::string(kind) + ":" + dir;
  check_spec(in, what);
  if (dir.empty()) throw DataError(std::string(kind) + ": no directory given (use " + kind + ":DIR)");
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw DataError(what + ": directory does not exist");
  return what;
}

// ---------------------------------------------------------------------------------------------- synthetic
// Gaussian noise whose per-channel mean depends on the label, so a model can actually learn it. The loader
// builds one batch of these once and reuses it (is_synthetic), so its cost is irrelevant.
class SyntheticDataset final : public Dataset {
 public:
  explicit SyntheticDataset(const InputSpec& in) : in_(in) {}
  std::string describe() const override {
    return "synthetic (" + std::to_string(in_.channels) + "x" + std::to_string(in_.height) + "x" +
           std::to_string(in_.width) + ", " + std::to_string(num_classes()) + " classes)";
  }
  int64_t size() const override { return int64_t(1) << 20; }
  int64_t num_classes() const override { return std::max<int64_t>(1, in_.num_classes); }
  InputSpec spec() const override { return in_; }
  bool is_synthetic() const override { return true; }
  bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label) const override {
    label = index % num_classes();
    std::normal_distribution<float> noise(0.f, 1.f);
    const int64_t plane = in_.height * in_.width;
    for (int64_t c = 0; c < in_.channels; ++c) {
      const float shift = 0.5f * float(((label + 1) * (c + 3)) % 7) - 1.5f;
      for (int64_t i = 0; i < plane; ++i) out[c * plane + i] = noise(rng) + shift;
    }
    return true;
  }

 private:
  InputSpec in_;
};

// -------------------------------------------------------------------------------------------- imagefolder
bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

class ImageFolderDataset final : public Dataset {
 public:
  ImageFolderDataset(const std::string& dir, const InputSpec& in) : dir_(dir), in_(in) {
    const std::string what = directory_dataset("imagefolder", dir, in);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw DataError(what + ": not a directory");
    std::vector<fs::path> class_dirs;
    fs::directory_iterator it(dir, ec);
    if (ec) throw DataError(what + ": cannot read directory (" + ec.message() + ")");
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) throw DataError(what + ": cannot read directory (" + ec.message() + ")");
      std::error_code ec2;
      if (it->is_directory(ec2) && it->path().filename().string()[0] != '.') class_dirs.push_back(it->path());
    }
    if (class_dirs.empty())
      throw DataError(what + ": no class subfolders (expected " + dir + "/<class>/<image>.jpg|.png)");
    std::sort(class_dirs.begin(), class_dirs.end(),
              [](const fs::path& a, const fs::path& b) { return a.filename().string() < b.filename().string(); });
    for (size_t label = 0; label < class_dirs.size(); ++label) {
      classes_.push_back(class_dirs[label].filename().string());
      std::vector<std::string> files;
      fs::recursive_directory_iterator rit(class_dirs[label], fs::directory_options::skip_permission_denied, ec);
      for (; !ec && rit != fs::recursive_directory_iterator(); rit.increment(ec)) {
        std::error_code ec2;
        if (rit->is_regular_file(ec2) && has_image_extension(rit->path())) files.push_back(rit->path().string());
      }
      std::sort(files.begin(), files.end());
      for (auto& f : files) samples_.push_back({std::move(f), int64_t(label)});
    }
    if (samples_.empty())
      throw DataError(what + ": no images (.jpg/.jpeg/.png) in its " + std::to_string(class_dirs.size()) +
                      " class folders");
    if (in.channels == 1) {
      mean_ = kGrayMean;
      std_ = kGrayStd;
    } else {
      mean_ = kImageNetMean;
      std_ = kImageNetStd;
    }
  }

  std::string describe() const override {
    return "imagefolder:" + dir_ + " (" + std::to_string(samples_.size()) + " images, " +
           std::to_string(classes_.size()) + " classes)";
  }
  int64_t size() const override { return int64_t(samples_.size()); }
  int64_t num_classes() const override { return int64_t(classes_.size()); }
  InputSpec spec() const override { return in_; }

  bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label) const override {
    return load(index, rng, out, label, SampleOptions{});
  }

  bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label,
            const SampleOptions& options) const override {
    if (index < 0 || index >= size()) return false;
    const Sample& s = samples_[size_t(index)];
    thread_local std::vector<uint8_t> bytes;
    thread_local data::Image img;
    const int C = int(in_.channels), W = int(in_.width), H = int(in_.height);
    data::CropBox box;
    double sx = 1, sy = 1;
    bool flip = false;
    using Clock = std::chrono::steady_clock;
    auto t = Clock::now();
    auto lap = [&](int64_t SampleTimes::*part) {  // the time since the last lap, to `part`
      const auto now = Clock::now();
      if (options.times) options.times->*part += std::chrono::duration_cast<std::chrono::nanoseconds>(now - t).count();
      t = now;
    };
    {
      TB_RANGE_ARG(names::kDecode, index);
      if (!data::read_file(s.path, bytes)) return false;
      lap(&SampleTimes::read_ns);
      int fw = 0, fh = 0;
      if (!data::image_dimensions(bytes.data(), bytes.size(), fw, fh)) return false;
      // The crop is drawn on the full-resolution size first so the JPEG decoder can scale down to it.
      box = data::random_resized_crop(fw, fh, rng);
      flip = std::bernoulli_distribution(0.5)(rng);
      double scale = 1;
      switch (data::sniff_format(bytes.data(), bytes.size())) {
        case data::ImageFormat::Jpeg:
          // An empty box asks for a full-size decode (the naive default); the crop box lets TurboJPEG scale.
          if (!data::decode_jpeg(bytes.data(), bytes.size(), C, options.scaled_decode ? box : data::CropBox{}, W, H,
                                 img, scale))
            return false;
          break;
        case data::ImageFormat::Png:
          if (!data::decode_png(bytes.data(), bytes.size(), C, img)) return false;
          break;
        default:
          return false;
      }
      if (img.width < 1 || img.height < 1) return false;
      sx = double(img.width) / fw;
      sy = double(img.height) / fh;
      lap(&SampleTimes::decode_ns);
    }
    {
      TB_RANGE_ARG(names::kAugment, index);
      if (options.fp32_preprocess)
        data::resample_normalize_f32(img, box.x * sx, box.y * sy, box.w * sx, box.h * sy, flip, W, H, mean_, std_, out);
      else
        data::resample_normalize_f16(img, box.x * sx, box.y * sy, box.w * sx, box.h * sy, flip, W, H, mean_, std_, out);
      lap(&SampleTimes::augment_ns);
    }
    label = s.label;
    return true;
  }

 private:
  struct Sample {
    std::string path;
    int64_t label;
  };
  std::string dir_;
  InputSpec in_;
  std::vector<std::string> classes_;
  std::vector<Sample> samples_;
  const float* mean_ = kImageNetMean;
  const float* std_ = kImageNetStd;
};

// ---------------------------------------------------------------------------------------------------- mnist
uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// Reads a whole IDX file, plain or gzip (zlib's gzread passes plain files through).
std::vector<uint8_t> read_maybe_gz(const std::string& path, const std::string& what) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw DataError(what + ": cannot open " + path);
  std::vector<uint8_t> data;
  uint8_t buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      gzclose(f);
      throw DataError(what + ": " + path + " is not a readable IDX file (bad gzip data)");
    }
    if (n == 0) break;
    data.insert(data.end(), buf, buf + n);
    if (data.size() > (size_t(1) << 31)) {
      gzclose(f);
      throw DataError(what + ": " + path + " is too large for an IDX file");
    }
  }
  gzclose(f);
  return data;
}

std::string find_idx(const fs::path& dir, const std::vector<std::string>& names) {
  std::error_code ec;
  for (const auto& n : names) {
    for (const char* suffix : {"", ".gz"}) {
      fs::path p = dir / (n + suffix);
      if (fs::is_regular_file(p, ec)) return p.string();
    }
  }
  return {};
}

class MnistDataset final : public Dataset {
 public:
  MnistDataset(const std::string& dir, const InputSpec& in) : dir_(dir), in_(in) {
    const std::string what = directory_dataset("mnist", dir, in);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw DataError(what + ": directory does not exist");
    const std::string img_path = find_idx(dir, {"train-images-idx3-ubyte", "train-images.idx3-ubyte"});
    const std::string lbl_path = find_idx(dir, {"train-labels-idx1-ubyte", "train-labels.idx1-ubyte"});
    if (img_path.empty()) throw DataError(what + ": train-images-idx3-ubyte[.gz] not found");
    if (lbl_path.empty()) throw DataError(what + ": train-labels-idx1-ubyte[.gz] not found");
    images_ = read_maybe_gz(img_path, what);
    const std::vector<uint8_t> labels = read_maybe_gz(lbl_path, what);
    if (images_.size() < 16 || be32(images_.data()) != 0x00000803)
      throw DataError(what + ": " + img_path + " has a bad magic number (expected IDX3 unsigned byte, 0x00000803)");
    if (labels.size() < 8 || be32(labels.data()) != 0x00000801)
      throw DataError(what + ": " + lbl_path + " has a bad magic number (expected IDX1 unsigned byte, 0x00000801)");
    count_ = be32(images_.data() + 4);
    rows_ = be32(images_.data() + 8);
    cols_ = be32(images_.data() + 12);
    if (count_ == 0 || rows_ == 0 || cols_ == 0 || rows_ > 4096 || cols_ > 4096)
      throw DataError(what + ": " + img_path + " declares an empty or absurd shape");
    if (images_.size() != 16 + size_t(count_) * rows_ * cols_)
      throw DataError(what + ": " + img_path + " size does not match its header (" + std::to_string(count_) + "x" +
                      std::to_string(rows_) + "x" + std::to_string(cols_) + ")");
    const uint32_t nlabels = be32(labels.data() + 4);
    if (labels.size() != 8 + size_t(nlabels))
      throw DataError(what + ": " + lbl_path + " size does not match its header");
    if (nlabels != count_)
      throw DataError(what + ": " + std::to_string(count_) + " images but " + std::to_string(nlabels) + " labels");
    labels_.assign(labels.begin() + 8, labels.end());
    int64_t max_label = 0;
    for (uint8_t l : labels_) max_label = std::max<int64_t>(max_label, l);
    classes_ = max_label + 1;
  }

  std::string describe() const override {
    return "mnist:" + dir_ + " (" + std::to_string(count_) + " images " + std::to_string(rows_) + "x" +
           std::to_string(cols_) + ", " + std::to_string(classes_) + " classes)";
  }
  int64_t size() const override { return count_; }
  int64_t num_classes() const override { return classes_; }
  InputSpec spec() const override { return in_; }

  bool load(int64_t index, std::mt19937_64& rng, float* out, int64_t& label) const override {
    return load(index, rng, out, label, SampleOptions{});
  }

  // No augmentation (the seed-001 MNIST example uses ToTensor + Normalize only); resized when the model's
  // input is not the file's size, replicated to 3 channels for RGB models.
  bool load(int64_t index, std::mt19937_64& /*rng*/, float* out, int64_t& label,
            const SampleOptions& options) const override {
    if (index < 0 || index >= size()) return false;
    TB_RANGE_ARG(names::kAugment, index);
    const auto t0 = std::chrono::steady_clock::now();  // all of it is the resample (the images are in memory)
    thread_local data::Image img;
    img.width = int(cols_);
    img.height = int(rows_);
    img.channels = 1;
    const uint8_t* src = images_.data() + 16 + size_t(index) * rows_ * cols_;
    img.pixels.assign(src, src + size_t(rows_) * cols_);
    const int W = int(in_.width), H = int(in_.height);
    if (options.fp32_preprocess)
      data::resample_normalize_f32(img, 0, 0, cols_, rows_, false, W, H, kMnistMean, kMnistStd, out);
    else
      data::resample_normalize_f16(img, 0, 0, cols_, rows_, false, W, H, kMnistMean, kMnistStd, out);
    const size_t plane = size_t(W) * H;
    for (int64_t c = 1; c < in_.channels; ++c) std::memcpy(out + c * plane, out, plane * sizeof(float));
    label = labels_[size_t(index)];
    if (options.times)
      options.times->augment_ns +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    return true;
  }

 private:
  std::string dir_;
  InputSpec in_;
  std::vector<uint8_t> images_;
  std::vector<uint8_t> labels_;
  uint32_t count_ = 0, rows_ = 0, cols_ = 0;
  int64_t classes_ = 0;
};

}  // namespace

std::shared_ptr<Dataset> make_dataset(const std::string& spec, const InputSpec& input) {
  if (spec == "synthetic") {
    check_spec(input, "synthetic");
    return std::make_shared<SyntheticDataset>(input);
  }
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? std::string() : spec.substr(colon + 1);
  if (kind == "imagefolder") return std::make_shared<ImageFolderDataset>(arg, input);
  if (kind == "mnist") return std::make_shared<MnistDataset>(arg, input);
  throw DataError("unknown dataset '" + spec + "' (use synthetic, imagefolder:DIR or mnist:DIR)");
}

}  // namespace tb::engine
