// `tunebench-cli make-dataset`: writes an image folder of JPEGs that cost what real photos cost to decode.
//
// Why not flat colours: JPEG decode time is dominated by entropy decoding, which scales with the number of
// non-zero DCT coefficients. Flat images decode several times faster than photos and would make the loader
// look free. Each image here is multi-octave value noise (texture at every scale, like foliage or fabric),
// a smooth illumination gradient, a few shapes with edges, and per-pixel grain, so quality ~90 files come out
// around the bytes-per-pixel of camera photos. Classes differ in their colour statistics (palette, texture
// scale), so a model can learn them and loss curves mean something.
//
// Torch-free on purpose: the CLI (app/engine) includes this header directly.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace tb::engine {

struct ImageFolderSpec {
  std::string out;         // created if missing; class folders class_000 ... inside
  int64_t images = 1000;   // total, spread round-robin over the classes
  int width = 256;
  int height = 256;
  int classes = 10;
  uint64_t seed = 0;
  int quality = 90;        // JPEG quality 1..100
  // Called after each image (done, total) from the calling thread; may be empty.
  std::function<void(int64_t, int64_t)> progress;
};

struct ImageFolderResult {
  int64_t images = 0;
  int64_t bytes = 0;  // total JPEG bytes written
};

// Validates the spec, then writes out/class_KKK/img_NNNNNN.jpg (overwriting same-named files). Deterministic
// for a given spec. Throws DataError (data.h) with a one-line message for bad values or an unwritable folder.
ImageFolderResult generate_image_folder(const ImageFolderSpec& spec);

// Parses "WxH" (e.g. "160x160"); false for anything else or sizes outside 8..8192.
bool parse_image_size(const std::string& text, int& width, int& height);

}  // namespace tb::engine
