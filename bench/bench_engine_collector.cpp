// What recording costs the training it records (not run in CI; docs/gpu-results.md). Single fresh runs with the
// collector off and on could not rank CUPTI's activity kinds on an H200: each run was noisy by 10-24% and the
// "off" run itself drifted 14% between passes. Here, in ONE process and one configuration, windows with the
// recording off and on alternate (AB, BA, ...), so drift cancels within a pair, and the ratio on/off gets the
// tuner's t interval. "On" is what `run --trace` records: the range recorder and, on a CUDA device, the CUPTI
// collector (TUNEBENCH_CUPTI_KINDS picks its activity kinds, TUNEBENCH_CUPTI_OFF=1 leaves it off). Collecting
// the records after a window is not in its time (a run pays it once, at the end).
// usage: bench_engine_collector [--model M] [--data D] [--device auto|cpu|cuda] [--set k=v,...] [--window N]
//        [--pairs N]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "engine/recording.h"
#include "engine/session.h"
#include "engine/tuner.h"
#include "measure/interval.h"

using namespace tb::engine;
namespace measure = tb::measure;

int main(int argc, char** argv) {
  SessionOptions o;
  o.model = "mnist_cnn";
  o.data = "synthetic";
  o.seed = 1;
  std::string set;
  int window = 20, pairs = 6;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model") o.model = argv[i + 1];
    else if (a == "--data") o.data = argv[i + 1];
    else if (a == "--device") o.device = argv[i + 1];
    else if (a == "--set") set = argv[i + 1];
    else if (a == "--window") window = std::atoi(argv[i + 1]);
    else if (a == "--pairs") pairs = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_engine_collector: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  try {
    auto w = make_session_workload(o);
    Config c = w->baseline();
    std::stringstream in(set);
    for (std::string kv; std::getline(in, kv, ',');)
      if (const auto eq = kv.find('='); eq != std::string::npos) c[kv.substr(0, eq)] = kv.substr(eq + 1);
    w->apply(c);
    const bool cuda = trains_on_cuda(o.device);
    const char* kinds = std::getenv("TUNEBENCH_CUPTI_KINDS");
    std::printf("collector bench: %s on %s (%s), %d pairs of %d-step windows; on = ranges%s\n", o.model.c_str(),
                o.data.c_str(), cuda ? "cuda" : "cpu", pairs, window,
                !cuda ? " (no CUDA device: no CUPTI)"
                : std::getenv("TUNEBENCH_CUPTI_OFF") ? " (TUNEBENCH_CUPTI_OFF=1)"
                : kinds ? (std::string(" + CUPTI ") + kinds).c_str()
                        : " + CUPTI (default kinds)");
    w->measure(window);  // warm-up of the configuration, not measured
    std::vector<measure::Window> off, on;
    size_t events = 0;
    for (int p = 0; p < pairs; ++p) {
      for (int side = 0; side < 2; ++side) {
        const bool recording = (side == 0) != (p % 2 == 0);  // off first in even pairs, on first in odd ones
        if (!recording) {
          off.push_back(w->measure(window));
          continue;
        }
        Capture capture(cuda);
        on.push_back(w->measure(window));
        if (auto t = capture.finish()) events = t->event_count();
      }
      std::printf("  pair %d: off %.1f, on %.1f samples/s\n", p + 1, off.back().throughput(), on.back().throughput());
    }
    const auto r = measure::paired_ratio(off, on);
    std::printf("recording on / off: %.3fx [%.3f, %.3f] (%d pairs); %zu events in the last window recorded\n",
                r.ratio, r.lo, r.hi, r.pairs, events);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_engine_collector: %s\n", e.what());
    return 1;
  }
}
