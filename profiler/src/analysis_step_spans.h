// The measured steps that the compiled code's runs are counted over (analysis_regions.cpp, analysis_kernels.cpp):
// the warm-up left out, by start; a run belongs to the step it starts in. Without steps, the window stands for
// one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "profiler/analysis.h"

namespace tb::prof::detail {

struct StepSpans {
  std::vector<Interval> spans;
  size_t steps = 0;
  int64_t base_ns = 0;  // the steps' time (the window's traced time without steps): what a share is of

  explicit StepSpans(const AnalysisResult& r) {
    for (size_t i = std::min(r.warmup_steps, r.steps.size()); i < r.steps.size(); ++i) {
      spans.push_back({r.steps[i].start_ns, r.steps[i].end_ns});
      base_ns += r.steps[i].duration_ns();
    }
    steps = spans.size();
    std::sort(spans.begin(), spans.end(), [](const Interval& a, const Interval& b) { return a.t0 < b.t0; });
    if (spans.empty()) {
      spans.push_back(r.window);
      base_ns = r.traced_ns();
    }
  }
  bool holds(int64_t t) const {
    auto it = std::upper_bound(spans.begin(), spans.end(), t, [](int64_t x, const Interval& s) { return x < s.t0; });
    return it != spans.begin() && t < std::prev(it)->t1;
  }
};

}  // namespace tb::prof::detail
