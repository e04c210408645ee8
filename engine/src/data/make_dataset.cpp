#include "engine/make_dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <system_error>
#include <vector>

#include "data/data.h"
#include "data/image_ops.h"

namespace tb::engine {
namespace {

namespace fs = std::filesystem;

struct Rgb {
  float r, g, b;
};

// Per-class look: two palette colours, a texture scale and a grain level. Derived from the class index only
// (not the seed), so datasets made with different seeds share their classes.
struct ClassStyle {
  Rgb a, b, shape;
  float cell;   // base texture cell as a fraction of the image size
  float grain;  // per-pixel noise sigma (0..255 scale)
};

Rgb hsv(float h, float s, float v) {
  h = std::fmod(h, 1.0f) * 6.0f;
  const int i = int(h);
  const float f = h - i, p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (i % 6) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

ClassStyle style_for(int k) {
  std::mt19937_64 rng(0xC1A55ull * 1000003ull + uint64_t(k));
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const float hue = std::fmod(k * 0.618034f, 1.0f);  // golden-ratio hues: neighbours differ
  ClassStyle s;
  s.a = hsv(hue, 0.45f + 0.4f * u(rng), 0.35f + 0.35f * u(rng));
  s.b = hsv(hue + 0.08f + 0.2f * u(rng), 0.3f + 0.5f * u(rng), 0.6f + 0.35f * u(rng));
  s.shape = hsv(hue + 0.5f, 0.6f, 0.8f);
  s.cell = 0.12f + 0.25f * u(rng);
  s.grain = 4.0f + 6.0f * u(rng);
  return s;
}

// Multi-octave value noise in [0,1]: a random lattice per octave, smoothstep-interpolated.
class ValueNoise {
 public:
  ValueNoise(int w, int h, float base_cell, std::mt19937_64& rng) {
    std::uniform_real_distribution<float> u(0.f, 1.f);
    float cell = std::max(2.0f, base_cell);
    float amp = 1.0f;
    while (cell >= 2.0f && octaves_.size() < 6) {
      Octave o;
      o.cell = cell;
      o.amp = amp;
      o.gw = int(w / cell) + 2;
      o.gh = int(h / cell) + 2;
      o.grid.resize(size_t(o.gw) * o.gh);
      for (auto& v : o.grid) v = u(rng);
      norm_ += amp;
      octaves_.push_back(std::move(o));
      cell *= 0.5f;
      amp *= 0.55f;
    }
  }
  float at(int x, int y) const {
    float sum = 0;
    for (const Octave& o : octaves_) {
      const float fx = x / o.cell, fy = y / o.cell;
      const int ix = int(fx), iy = int(fy);
      float tx = fx - ix, ty = fy - iy;
      tx = tx * tx * (3 - 2 * tx);
      ty = ty * ty * (3 - 2 * ty);
      const float* r0 = &o.grid[size_t(iy) * o.gw + ix];
      const float* r1 = r0 + o.gw;
      const float top = r0[0] + (r0[1] - r0[0]) * tx;
      const float bot = r1[0] + (r1[1] - r1[0]) * tx;
      sum += o.amp * (top + (bot - top) * ty);
    }
    return sum / norm_;
  }

 private:
  struct Octave {
    float cell = 0, amp = 0;
    int gw = 0, gh = 0;
    std::vector<float> grid;
  };
  std::vector<Octave> octaves_;
  float norm_ = 0;
};

void render(const ClassStyle& cs, int w, int h, std::mt19937_64& rng, std::vector<uint8_t>& rgb) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const float size = float(std::min(w, h));
  const ValueNoise tone(w, h, cs.cell * size * (0.8f + 0.4f * u(rng)), rng);
  const ValueNoise detail(w, h, cs.cell * size * 0.35f, rng);
  // Illumination: a linear gradient in a random direction.
  const float ang = 6.2831853f * u(rng);
  const float gx = std::cos(ang) / w, gy = std::sin(ang) / h;
  const float light0 = 0.75f + 0.2f * u(rng);
  struct Shape {
    bool circle;
    float cx, cy, r, rx, ry;
    Rgb c;
  };
  std::vector<Shape> shapes(2 + rng() % 4);
  for (auto& s : shapes) {
    s.circle = u(rng) < 0.5f;
    s.cx = u(rng) * w;
    s.cy = u(rng) * h;
    s.r = (0.05f + 0.15f * u(rng)) * size;
    s.rx = s.r * (0.5f + u(rng));
    s.ry = s.r * (0.5f + u(rng));
    const float j = 0.7f + 0.3f * u(rng);
    s.c = {cs.shape.r * j, cs.shape.g * j, cs.shape.b * j};
  }
  std::normal_distribution<float> grain(0.f, cs.grain);
  rgb.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const float t = tone.at(x, y);
      const float d = detail.at(x, y);
      const float mix = std::clamp(t * 1.4f - 0.2f, 0.f, 1.f);
      Rgb c{cs.a.r + (cs.b.r - cs.a.r) * mix, cs.a.g + (cs.b.g - cs.a.g) * mix, cs.a.b + (cs.b.b - cs.a.b) * mix};
      for (const Shape& s : shapes) {
        const float dx = x - s.cx, dy = y - s.cy;
        const bool inside = s.circle ? dx * dx + dy * dy < s.r * s.r : std::abs(dx) < s.rx && std::abs(dy) < s.ry;
        if (inside) c = {0.3f * c.r + 0.7f * s.c.r, 0.3f * c.g + 0.7f * s.c.g, 0.3f * c.b + 0.7f * s.c.b};
      }
      const float light = std::clamp(light0 + (x * gx + y * gy) * 0.5f, 0.2f, 1.2f) * (0.75f + 0.5f * d);
      uint8_t* p = &rgb[(size_t(y) * w + x) * 3];
      const float n = grain(rng);
      p[0] = uint8_t(std::clamp(c.r * light * 255.f + n, 0.f, 255.f));
      p[1] = uint8_t(std::clamp(c.g * light * 255.f + n * 0.9f, 0.f, 255.f));
      p[2] = uint8_t(std::clamp(c.b * light * 255.f + n * 1.1f, 0.f, 255.f));
    }
  }
}

}  // namespace

bool parse_image_size(const std::string& text, int& width, int& height) {
  const auto x = text.find_first_of("xX");
  if (x == std::string::npos || x == 0 || x + 1 >= text.size()) return false;
  auto parse = [](const std::string& s, int& v) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    v = std::stoi(s);
    return v >= 8 && v <= 8192;
  };
  return parse(text.substr(0, x), width) && parse(text.substr(x + 1), height);
}

ImageFolderResult generate_image_folder(const ImageFolderSpec& spec) {
  if (spec.out.empty()) throw DataError("make-dataset: no output folder given (--out DIR)");
  if (spec.images < 1) throw DataError("make-dataset: --images must be at least 1");
  if (spec.images > 10'000'000) throw DataError("make-dataset: --images is too large (max 10000000)");
  if (spec.classes < 1 || spec.classes > 1000) throw DataError("make-dataset: --classes must be 1..1000");
  if (spec.width < 8 || spec.height < 8 || spec.width > 8192 || spec.height > 8192)
    throw DataError("make-dataset: --size must be between 8x8 and 8192x8192");
  if (spec.quality < 1 || spec.quality > 100) throw DataError("make-dataset: --quality must be 1..100");

  const fs::path root(spec.out);
  std::error_code ec;
  // A folder that already holds other files would silently mix them into the dataset (seen: a benchmark
  // folder reused at another image size measured the old images). Re-running the same spec is fine.
  if (fs::is_directory(root, ec)) {
    int64_t stray = 0;
    std::string example;
    auto note = [&](const fs::path& p) {
      if (stray++ == 0) example = p.string();
    };
    for (const auto& top : fs::directory_iterator(root, ec)) {
      int k = -1;
      const std::string cname = top.path().filename().string();
      if (top.is_directory() && std::sscanf(cname.c_str(), "class_%3d", &k) == 1 && cname.size() == 9 && k >= 0 &&
          k < spec.classes) {
        for (const auto& f : fs::directory_iterator(top.path(), ec)) {
          long long i = -1;
          const std::string fname = f.path().filename().string();
          const bool ours = fname.size() == 14 && std::sscanf(fname.c_str(), "img_%6lld.jpg", &i) == 1 && i >= 0 &&
                            i < spec.images && i % spec.classes == k && fname.compare(10, 4, ".jpg") == 0;
          if (!ours) note(f.path());
        }
      } else {
        note(top.path());
      }
    }
    if (stray > 0)
      throw DataError("make-dataset: '" + spec.out + "' already holds " + std::to_string(stray) +
                      " file(s) this run would not write (e.g. '" + example +
                      "'); a dataset there would mix them in. Use an empty or new folder.");
  }
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root)) throw DataError("make-dataset: cannot create folder '" + spec.out + "'" +
                                                     (ec ? " (" + ec.message() + ")" : std::string()));
  std::vector<fs::path> class_dirs;
  for (int k = 0; k < spec.classes; ++k) {
    char name[32];
    std::snprintf(name, sizeof(name), "class_%03d", k);
    class_dirs.push_back(root / name);
    fs::create_directories(class_dirs.back(), ec);
    if (ec) throw DataError("make-dataset: cannot create folder '" + class_dirs.back().string() + "' (" + ec.message() + ")");
  }
  std::vector<ClassStyle> styles;
  for (int k = 0; k < spec.classes; ++k) styles.push_back(style_for(k));

  ImageFolderResult result;
  std::vector<uint8_t> rgb, jpeg;
  for (int64_t i = 0; i < spec.images; ++i) {
    const int k = int(i % spec.classes);
    std::mt19937_64 rng(spec.seed * 0x9E3779B97F4A7C15ull + uint64_t(i) * 0xD1B54A32D192ED03ull + 1);
    render(styles[size_t(k)], spec.width, spec.height, rng, rgb);
    std::string err;
    if (!data::encode_jpeg(rgb.data(), spec.width, spec.height, 3, spec.quality, jpeg, &err))
      throw DataError("make-dataset: JPEG encoding failed: " + err);
    char name[32];
    std::snprintf(name, sizeof(name), "img_%06lld.jpg", static_cast<long long>(i));
    const fs::path path = class_dirs[size_t(k)] / name;
    FILE* f = std::fopen(path.string().c_str(), "wb");
    if (!f) throw DataError("make-dataset: cannot write '" + path.string() + "'");
    const bool ok = std::fwrite(jpeg.data(), 1, jpeg.size(), f) == jpeg.size();
    if (std::fclose(f) != 0 || !ok) throw DataError("make-dataset: cannot write '" + path.string() + "' (disk full?)");
    result.images++;
    result.bytes += int64_t(jpeg.size());
    if (spec.progress) spec.progress(i + 1, spec.images);
  }
  return result;
}

}  // namespace tb::engine
