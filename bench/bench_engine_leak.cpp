// Leak benchmark (not run in CI; docs/cpu-results.md): in ONE process, baseline -> each CPU knob -> baseline, for every
// knob value that runs on the CPU. If a knob leaves state behind (prefetched batches, threads, allocator
// state, model layout, optimizer state...), the baseline measured after it differs from the baseline measured
// before it. Prints, per knob, the baseline before and after (samples/s, windows timed as the tuner times
// them) with Welch's interval of their ratio, and at the end the noise verdict over every baseline window.
//
// The windows come from the tuner's own Workload (make_session_workload): warm-up until stable after every
// change, windows device-synced, samples over wall time, the allocator pinned steady (glibc_tuned).
// usage: bench_engine_leak [--data DIR|synthetic] [--images N] [--size WxH] [--window N] [--windows N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/make_dataset.h"
#include "engine/session.h"
#include "engine/tuner.h"
#include "measure/interval.h"
#include "measure/noise.h"

using namespace tb::engine;
namespace measure = tb::measure;

int main(int argc, char** argv) {
  std::string data = "/tmp/tunebench-leak-jpegs";
  int images = 384, width = 500, height = 375, window = 12, windows = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--data") data = argv[i + 1];
    else if (a == "--images") images = std::atoi(argv[i + 1]);
    else if (a == "--window") window = std::atoi(argv[i + 1]);
    else if (a == "--windows") windows = std::atoi(argv[i + 1]);
    else if (a == "--size") std::sscanf(argv[i + 1], "%dx%d", &width, &height);
  }
  if (data != "synthetic" && !std::filesystem::exists(data)) {
    ImageFolderSpec spec;
    spec.out = data;
    spec.images = images;
    spec.width = width;
    spec.height = height;
    spec.classes = 10;
    generate_image_folder(spec);
  }
  SessionOptions o;
  o.model = "mnist_cnn";
  o.data = data == "synthetic" ? data : "imagefolder:" + data;
  o.device = "cpu";
  o.seed = 1;
  auto w = make_session_workload(o);
  const Config base = w->baseline();
  std::printf("leak bench: %s, %d windows of %d steps per measurement, allocator %s\n", o.data.c_str(), windows,
              window, w->describe().value("measurement_allocator", std::string("?")).c_str());

  std::vector<measure::Window> all_base;
  auto measure_n = [&](const Config& c, bool is_base) {
    std::vector<measure::Window> out;
    w->apply(c);
    for (int i = 0; i < windows; ++i) {
      out.push_back(w->measure(window));
      if (is_base) all_base.push_back(out.back());
    }
    return out;
  };

  std::printf("%-28s %12s %12s %10s %18s  %s\n", "knob", "base before", "base after", "ratio", "95% interval", "verdict");
  std::vector<measure::Window> before = measure_n(base, true);
  int leaks = 0, checked = 0;
  for (const auto& k : w->knobs()) {
    if (!k.applicability.applicable || k.info.process_scope) continue;
    std::vector<std::string> values;
    if (k.info.type == KnobType::Int) {
      if (k.info.id == "intra_op_threads") values = {"1"};
      else if (k.info.id == "batch_size") values = {"64"};
      else if (!k.info.recommended_value.empty() && k.info.recommended_value != base.at(k.info.id))
        values = {k.info.recommended_value};
    } else {
      std::vector<std::string> choices = k.info.choices;
      for (const auto& c : choices)
        if (c != base.at(k.info.id) &&
            std::find(k.applicability.unavailable_values.begin(), k.applicability.unavailable_values.end(), c) ==
                k.applicability.unavailable_values.end())
          values.push_back(c);
    }
    for (const auto& v : values) {
      Config c = base;
      c[k.info.id] = v;
      if (k.info.id == "prefetch") c["workers"] = "2";  // a queue depth needs workers to fill it
      try {
        measure_n(c, false);
      } catch (const TrialFailure& e) {
        std::printf("%-28s could not run: %s\n", (k.info.id + "=" + v).c_str(), e.what());
        continue;
      }
      std::vector<measure::Window> after = measure_n(base, true);
      const auto r = measure::welch_ratio(before, after);
      const bool leak = r.valid() && !r.no_effect() && std::fabs(r.ratio - 1) > 0.03;
      leaks += leak;
      ++checked;
      std::printf("%-28s %12.1f %12.1f %9.3fx   [%6.3f, %6.3f]  %s\n", (k.info.id + "=" + v).c_str(),
                  measure::pooled_throughput(before), measure::pooled_throughput(after), r.ratio, r.lo, r.hi,
                  !r.valid() ? "n/a" : leak ? "DIFFERS (leak or drift)" : "within the noise");
      before = after;
    }
  }
  std::sort(all_base.begin(), all_base.end(), [](auto& a, auto& b) { return a.start_s < b.start_s; });
  const auto noise = measure::assess_noise(all_base);
  std::printf("\n%d knob values checked, %d baselines differ from the one before the knob by more than 3%% beyond "
              "their interval\nevery baseline window of the run: %s\nfirst vs last baseline: %.1f -> %.1f samples/s\n",
              checked, leaks, noise.text.c_str(), all_base.empty() ? 0.0 : all_base.front().throughput(),
              all_base.empty() ? 0.0 : all_base.back().throughput());
  return 0;
}
