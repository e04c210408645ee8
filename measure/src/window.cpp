#include "measure/window.h"

#include <algorithm>

namespace tb::measure {

std::vector<Window> windows_of(const std::vector<StepTiming>& steps, int size) {
  std::vector<Window> out;
  size = std::max(1, size);
  for (size_t i = 0; i < steps.size(); i += size_t(size)) {
    const size_t end = std::min(steps.size(), i + size_t(size));
    Window w;
    w.start_s = double(steps[i].start_ns) * 1e-9;
    for (size_t k = i; k < end; ++k) {
      ++w.steps;
      w.samples += steps[k].samples;
      w.wall_s += double(steps[k].wall_ns) * 1e-9;
      w.data_wait_s += double(steps[k].data_wait_ns) * 1e-9;
      w.minor_faults += steps[k].minor_faults;
    }
    if (!out.empty() && 2 * w.steps < size) {
      Window& last = out.back();
      last.steps += w.steps;
      last.samples += w.samples;
      last.wall_s += w.wall_s;
      last.data_wait_s += w.data_wait_s;
      last.minor_faults += w.minor_faults;
    } else {
      out.push_back(w);
    }
  }
  return out;
}

double pooled_throughput(const std::vector<Window>& windows) {
  double samples = 0, seconds = 0;
  for (const auto& w : windows) samples += double(w.samples), seconds += w.wall_s;
  return seconds > 0 ? samples / seconds : 0.0;
}

}  // namespace tb::measure
