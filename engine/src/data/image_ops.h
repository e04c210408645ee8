// Image decoding, encoding and the per-sample augmentation math of the imagefolder dataset (engine-private,
// torch-free so make_dataset and the tests can use it without LibTorch types).
//
// Threading: every function is reentrant. The TurboJPEG handles are per thread (thread_local), created on
// first use and destroyed when the thread exits, so loader workers never share decoder state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tb::engine::data {

// 8-bit interleaved pixels (HWC), 1 (gray) or 3 (RGB) channels.
struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;
};

// A crop rectangle in pixels of the full-resolution image.
struct CropBox {
  int x = 0, y = 0, w = 0, h = 0;
};

enum class ImageFormat { Unknown, Jpeg, Png };

// By magic bytes, not by file extension (a .jpg that is really a PNG still loads).
ImageFormat sniff_format(const uint8_t* data, size_t size);

// Whole file into `bytes`; false when it cannot be opened/read or exceeds max_bytes.
bool read_file(const std::string& path, std::vector<uint8_t>& bytes, size_t max_bytes = size_t(1) << 30);

// Image dimensions from the header only (JPEG or PNG); false for a header that does not parse.
bool image_dimensions(const uint8_t* data, size_t size, int& width, int& height);

// torchvision RandomResizedCrop.get_params: 10 attempts at an area fraction in [scale_lo, scale_hi] and a
// log-uniform aspect ratio in [ratio_lo, ratio_hi], else the centre crop clamped to the ratio range.
CropBox random_resized_crop(int width, int height, std::mt19937_64& rng, double scale_lo = 0.08,
                            double scale_hi = 1.0, double ratio_lo = 3.0 / 4.0, double ratio_hi = 4.0 / 3.0);

// Decodes a JPEG with libjpeg-turbo (TurboJPEG API). `channels` is 1 (decoded straight to gray, cheaper) or 3.
// Reduced-scale decode: the DCT is scaled to the smallest TurboJPEG factor (n/8) that keeps the crop `box`
// (full-resolution pixels) at least out_w x out_h, so a 1000-px photo cropped to 224 decodes at 1/2 or 1/4 of
// the work. This is what fast loaders do (DALI, PIL's draft mode, FFCV). `scale` receives the factor used
// (decoded size / full size). An empty box (w==0) decodes at full size. Truncated or garbage data, including
// libjpeg's "premature end of data" warning, is a failure: false and `error` says why.
bool decode_jpeg(const uint8_t* data, size_t size, int channels, const CropBox& box, int out_w, int out_h,
                 Image& out, double& scale, std::string* error = nullptr);

// Decodes a PNG with libpng's simplified API to 1 or 3 channels (alpha dropped onto black, 16-bit reduced).
bool decode_png(const uint8_t* data, size_t size, int channels, Image& out, std::string* error = nullptr);

// Crop (x, y, w, h in the decoded image's pixels; fractional after a scaled decode) → bilinear resize to
// out_w x out_h (align_corners=false, as torchvision without antialias) → optional horizontal flip →
// (v/255 - mean[c]) / std[c], written as float planes CHW into `out`. `img.channels` must equal `channels`.
void resample_normalize_f32(const Image& img, double x, double y, double w, double h, bool flip, int out_w,
                            int out_h, const float* mean, const float* std, float* out);
// Same math done naively in half precision on the CPU (c10::Half: every add/mul rounds to fp16 in software),
// the slow path a known tuning story measured when preprocessing was left in fp16. Results differ from the fp32 path by
// fp16 rounding (about 1e-3 relative).
void resample_normalize_f16(const Image& img, double x, double y, double w, double h, bool flip, int out_w,
                            int out_h, const float* mean, const float* std, float* out);

// Encodes 8-bit RGB (3 channels) or gray (1) with TurboJPEG, 4:2:0 chroma for RGB. False on failure.
bool encode_jpeg(const uint8_t* pixels, int width, int height, int channels, int quality,
                 std::vector<uint8_t>& out, std::string* error = nullptr);
// Encodes 8-bit RGB or gray as PNG into memory (tests use it for fixtures).
bool encode_png(const uint8_t* pixels, int width, int height, int channels, std::vector<uint8_t>& out);

}  // namespace tb::engine::data
