// tunebench-cli make-dataset --out DIR [--images N] [--size WxH] [--classes K] [--seed S] [--quality Q]
// Only parses arguments and reports progress; the generator is tb::engine::generate_image_folder.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include <unistd.h>

#include "client/inputs.h"
#include "engine/make_dataset.h"
#include "commands.h"

namespace tb::cli {
namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: make-dataset: %s\n", msg.c_str());
  return 2;
}

bool parse_int(const char* s, long long lo, long long hi, long long& v) {
  const auto n = client::inputs::parse_integer(s ? s : "", lo, hi);
  if (n) v = *n;
  return n.has_value();
}

void usage(FILE* f) {
  std::fputs(
      "usage: tunebench-cli make-dataset --out DIR [--images N] [--size WxH] [--classes K] [--seed S] [--quality Q]\n"
      "  writes DIR/class_KKK/img_NNNNNN.jpg: textured JPEGs (decode cost like photos), per-class colour statistics\n"
      "  defaults: --images 1000 --size 256x256 --classes 10 --seed 0 --quality 90\n",
      f);
}

}  // namespace

int cmd_make_dataset(int argc, char** argv) {
  tb::engine::ImageFolderSpec spec;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    // Accept "--opt value" and "--opt=value".
    std::string key = a, value;
    bool has_value = false;
    if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      key = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    auto take = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    long long v = 0;
    if (key == "--out") {
      if (!take() || value.empty()) return fail("--out needs a folder");
      spec.out = value;
    } else if (key == "--images") {
      if (!take() || !parse_int(value.c_str(), 1, 10'000'000, v))
        return fail("--images needs a whole number from 1 to 10000000 (got '" + value + "')");
      spec.images = v;
    } else if (key == "--size") {
      if (!take() || !tb::engine::parse_image_size(value, spec.width, spec.height))
        return fail("--size needs WxH with each side 8..8192, e.g. 224x224 (got '" + value + "')");
    } else if (key == "--classes") {
      if (!take() || !parse_int(value.c_str(), 1, 1000, v))
        return fail("--classes needs a whole number from 1 to 1000 (got '" + value + "')");
      spec.classes = int(v);
    } else if (key == "--seed") {
      if (!take() || !parse_int(value.c_str(), 0, (1LL << 62), v))
        return fail("--seed needs a non-negative whole number (got '" + value + "')");
      spec.seed = uint64_t(v);
    } else if (key == "--quality") {
      if (!take() || !parse_int(value.c_str(), 1, 100, v))
        return fail("--quality needs a whole number from 1 to 100 (got '" + value + "')");
      spec.quality = int(v);
    } else {
      return fail("unknown option '" + a + "' (see tunebench-cli make-dataset --help)");
    }
  }
  if (spec.out.empty()) return fail("--out DIR is required");

  const auto t0 = std::chrono::steady_clock::now();
  int last_pct = -1;
  // A terminal gets one line rewritten in place every 5%; a log (GUI, CI) gets a line every 10%.
  const bool tty = isatty(fileno(stderr));
  spec.progress = [&](int64_t done, int64_t total) {
    const int pct = int(done * 100 / total);
    const int step = tty ? 5 : 10;
    if (pct != last_pct && (pct % step == 0 || done == total)) {
      last_pct = pct;
      std::fprintf(stderr, "%smake-dataset: %lld/%lld images (%d%%)%s", tty ? "\r" : "", static_cast<long long>(done),
                   static_cast<long long>(total), pct, tty && done != total ? "" : "\n");
      std::fflush(stderr);
    }
  };
  try {
    const auto r = tb::engine::generate_image_folder(spec);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "make-dataset: wrote %lld images (%d classes, %dx%d, %.1f MB, %.1f KB/image) to %s in %.1f s\n",
                 static_cast<long long>(r.images), spec.classes, spec.width, spec.height, r.bytes / 1e6,
                 r.bytes / 1e3 / double(r.images), spec.out.c_str(), s);
    return 0;
  } catch (const std::exception& e) {
    // The generator's messages already start with "make-dataset:".
    if (tty && last_pct >= 0 && last_pct < 100) std::fputc('\n', stderr);  // end the progress line first
    std::fprintf(stderr, "tunebench-cli: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace tb::cli
