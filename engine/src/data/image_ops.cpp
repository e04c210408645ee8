#include "data/image_ops.h"

#include <c10/util/Half.h>
#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

namespace tb::engine::data {
namespace {

struct TjHandle {
  tjhandle handle = nullptr;
  ~TjHandle() {
    if (handle) tjDestroy(handle);
  }
};

TjHandle& decompressor_slot() {
  thread_local TjHandle h;
  return h;
}

tjhandle decompressor() {
  TjHandle& h = decompressor_slot();
  if (!h.handle) h.handle = tjInitDecompress();
  return h.handle;
}

// libjpeg-turbo 2.1 leaves a handle in a bad state after a failed header read (the next good file then
// fails once too), so after any failure the thread's handle is replaced. Errors are rare; this is cheap.
void reset_decompressor() {
  TjHandle& h = decompressor_slot();
  if (h.handle) tjDestroy(h.handle);
  h.handle = nullptr;
}

tjhandle compressor() {
  thread_local TjHandle h;
  if (!h.handle) h.handle = tjInitCompress();
  return h.handle;
}

void set_error(std::string* error, const std::string& msg) {
  if (error) *error = msg;
}

// Precomputed bilinear taps for one axis (align_corners=false, clamped to the image).
struct Taps {
  std::vector<int> i0, i1;
  std::vector<float> w1;  // weight of i1; i0 gets 1 - w1
};

Taps make_taps(double start, double extent, int out, int limit, bool flip) {
  Taps t;
  t.i0.resize(out);
  t.i1.resize(out);
  t.w1.resize(out);
  const double step = extent / out;
  for (int o = 0; o < out; ++o) {
    const int src_o = flip ? out - 1 - o : o;
    double s = start + (src_o + 0.5) * step - 0.5;
    s = std::clamp(s, 0.0, double(limit - 1));
    const int a = std::min(int(s), limit - 1);
    const int b = std::min(a + 1, limit - 1);
    t.i0[o] = a;
    t.i1[o] = b;
    t.w1[o] = float(s - a);
  }
  return t;
}

}  // namespace

ImageFormat sniff_format(const uint8_t* data, size_t size) {
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) return ImageFormat::Jpeg;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return ImageFormat::Png;
  return ImageFormat::Unknown;
}

bool read_file(const std::string& path, std::vector<uint8_t>& bytes, size_t max_bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return false;
  if (std::fseek(f.get(), 0, SEEK_END) != 0) return false;
  const long len = std::ftell(f.get());
  if (len < 0 || size_t(len) > max_bytes) return false;
  std::rewind(f.get());
  bytes.resize(size_t(len));
  return len == 0 || std::fread(bytes.data(), 1, bytes.size(), f.get()) == bytes.size();
}

bool image_dimensions(const uint8_t* data, size_t size, int& width, int& height) {
  switch (sniff_format(data, size)) {
    case ImageFormat::Jpeg: {
      int subsamp = 0, colorspace = 0;
      if (tjDecompressHeader3(decompressor(), data, size, &width, &height, &subsamp, &colorspace) != 0) {
        reset_decompressor();
        return false;
      }
      return width > 0 && height > 0;
    }
    case ImageFormat::Png: {
      if (size < 24) return false;
      auto be32 = [&](size_t o) {
        return (uint32_t(data[o]) << 24) | (uint32_t(data[o + 1]) << 16) | (uint32_t(data[o + 2]) << 8) |
               uint32_t(data[o + 3]);
      };
      width = int(be32(16));
      height = int(be32(20));
      return width > 0 && height > 0;
    }
    default:
      return false;
  }
}

CropBox random_resized_crop(int width, int height, std::mt19937_64& rng, double scale_lo, double scale_hi,
                            double ratio_lo, double ratio_hi) {
  const double area = double(width) * height;
  std::uniform_real_distribution<double> u_scale(scale_lo, scale_hi);
  std::uniform_real_distribution<double> u_logr(std::log(ratio_lo), std::log(ratio_hi));
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * u_scale(rng);
    const double ratio = std::exp(u_logr(rng));
    const int w = int(std::lround(std::sqrt(target * ratio)));
    const int h = int(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      std::uniform_int_distribution<int> ux(0, width - w), uy(0, height - h);
      const int y = uy(rng);
      const int x = ux(rng);
      return {x, y, w, h};
    }
  }
  // Fallback: centre crop, clamped to the ratio range.
  const double in_ratio = double(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = std::max(1, int(std::lround(w / ratio_lo)));
  } else if (in_ratio > ratio_hi) {
    w = std::max(1, int(std::lround(h * ratio_hi)));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

bool decode_jpeg(const uint8_t* data, size_t size, int channels, const CropBox& box, int out_w, int out_h,
                 Image& out, double& scale, std::string* error) {
  tjhandle h = decompressor();
  if (!h) {
    set_error(error, "tjInitDecompress failed");
    return false;
  }
  int w = 0, hgt = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, data, size, &w, &hgt, &subsamp, &colorspace) != 0 || w <= 0 || hgt <= 0) {
    set_error(error, tjGetErrorStr2(h));
    reset_decompressor();
    return false;
  }
  // Pick the smallest scaling factor that keeps the crop at least the output size in both axes.
  int nfactors = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&nfactors);
  tjscalingfactor best{1, 1};
  if (box.w > 0 && box.h > 0 && factors) {
    double best_value = 1.0;
    for (int i = 0; i < nfactors; ++i) {
      const double f = double(factors[i].num) / factors[i].denom;
      if (f > 1.0 || f >= best_value) continue;
      if (box.w * f >= out_w && box.h * f >= out_h) {
        best = factors[i];
        best_value = f;
      }
    }
  }
  const int sw = TJSCALED(w, best);
  const int sh = TJSCALED(hgt, best);
  if (int64_t(sw) * sh * channels > (int64_t(1) << 30)) {
    set_error(error, "image too large");
    return false;
  }
  out.width = sw;
  out.height = sh;
  out.channels = channels;
  out.pixels.resize(size_t(sw) * sh * channels);
  const int pf = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  if (tjDecompress2(h, data, size, out.pixels.data(), sw, sw * channels, sh, pf, 0) != 0) {
    // Also a warning (e.g. premature end of data in a truncated file): the bottom of the image would be gray.
    set_error(error, tjGetErrorStr2(h));
    reset_decompressor();
    return false;
  }
  scale = double(best.num) / best.denom;
  return true;
}

bool decode_png(const uint8_t* data, size_t size, int channels, Image& out, std::string* error) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data, size)) {
    set_error(error, image.message);
    return false;
  }
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (int64_t(image.width) * image.height * channels > (int64_t(1) << 30)) {
    png_image_free(&image);
    set_error(error, "image too large");
    return false;
  }
  out.width = int(image.width);
  out.height = int(image.height);
  out.channels = channels;
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  png_color black{0, 0, 0};
  if (!png_image_finish_read(&image, &black, out.pixels.data(), 0, nullptr)) {
    set_error(error, image.message);
    png_image_free(&image);
    return false;
  }
  return true;
}

void resample_normalize_f32(const Image& img, double x, double y, double w, double h, bool flip, int out_w,
                            int out_h, const float* mean, const float* std, float* out) {
  const Taps tx = make_taps(x, w, out_w, img.width, flip);
  const Taps ty = make_taps(y, h, out_h, img.height, false);
  const int C = img.channels;
  const size_t plane = size_t(out_w) * out_h;
  const size_t stride = size_t(img.width) * C;
  float scale[3], bias[3];
  for (int c = 0; c < C; ++c) {
    scale[c] = 1.0f / (255.0f * std[c]);
    bias[c] = -mean[c] / std[c];
  }
  for (int oy = 0; oy < out_h; ++oy) {
    const uint8_t* r0 = img.pixels.data() + ty.i0[oy] * stride;
    const uint8_t* r1 = img.pixels.data() + ty.i1[oy] * stride;
    const float wy = ty.w1[oy];
    for (int ox = 0; ox < out_w; ++ox) {
      const int a = tx.i0[ox] * C, b = tx.i1[ox] * C;
      const float wx = tx.w1[ox];
      for (int c = 0; c < C; ++c) {
        const float top = r0[a + c] + (r0[b + c] - r0[a + c]) * wx;
        const float bot = r1[a + c] + (r1[b + c] - r1[a + c]) * wx;
        const float v = top + (bot - top) * wy;
        out[c * plane + size_t(oy) * out_w + ox] = v * scale[c] + bias[c];
      }
    }
  }
}

void resample_normalize_f16(const Image& img, double x, double y, double w, double h, bool flip, int out_w,
                            int out_h, const float* mean, const float* std, float* out) {
  using c10::Half;
  const Taps tx = make_taps(x, w, out_w, img.width, flip);
  const Taps ty = make_taps(y, h, out_h, img.height, false);
  const int C = img.channels;
  const size_t plane = size_t(out_w) * out_h;
  const size_t stride = size_t(img.width) * C;
  const Half k255(255.0f);
  Half hmean[3], hstd[3];
  for (int c = 0; c < C; ++c) {
    hmean[c] = Half(mean[c]);
    hstd[c] = Half(std[c]);
  }
  // Deliberately naive, like numpy/torch code that converted the uint8 image to float16 first: each pixel
  // becomes Half, and the blend and (v/255 - mean)/std are Half operations, each rounded to fp16.
  for (int oy = 0; oy < out_h; ++oy) {
    const uint8_t* r0 = img.pixels.data() + ty.i0[oy] * stride;
    const uint8_t* r1 = img.pixels.data() + ty.i1[oy] * stride;
    const Half wy(ty.w1[oy]);
    for (int ox = 0; ox < out_w; ++ox) {
      const int a = tx.i0[ox] * C, b = tx.i1[ox] * C;
      const Half wx(tx.w1[ox]);
      for (int c = 0; c < C; ++c) {
        const Half p00(float(r0[a + c])), p01(float(r0[b + c])), p10(float(r1[a + c])), p11(float(r1[b + c]));
        const Half top = Half(p00 + Half(Half(p01 - p00) * wx));
        const Half bot = Half(p10 + Half(Half(p11 - p10) * wx));
        const Half v = Half(top + Half(Half(bot - top) * wy));
        const Half n = Half(Half(Half(v / k255) - hmean[c]) / hstd[c]);
        out[c * plane + size_t(oy) * out_w + ox] = float(n);
      }
    }
  }
}

bool encode_jpeg(const uint8_t* pixels, int width, int height, int channels, int quality,
                 std::vector<uint8_t>& out, std::string* error) {
  tjhandle h = compressor();
  if (!h) {
    set_error(error, "tjInitCompress failed");
    return false;
  }
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  const int pf = channels == 1 ? TJPF_GRAY : TJPF_RGB;
  const int samp = channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
  if (tjCompress2(h, pixels, width, width * channels, height, pf, &buf, &len, samp, quality, 0) != 0) {
    set_error(error, tjGetErrorStr2(h));
    if (buf) tjFree(buf);
    return false;
  }
  out.assign(buf, buf + len);
  tjFree(buf);
  return true;
}

bool encode_png(const uint8_t* pixels, int width, int height, int channels, std::vector<uint8_t>& out) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = png_uint_32(width);
  image.height = png_uint_32(height);
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, pixels, 0, nullptr)) return false;
  out.resize(size);
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, pixels, 0, nullptr)) return false;
  out.resize(size);
  return true;
}

}  // namespace tb::engine::data
