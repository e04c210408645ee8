#include "measure/warmup.h"

#include <algorithm>
#include <cmath>

namespace tb::measure {

WarmupDetector::WarmupDetector(int min_steps, int block, double tolerance, int max_steps)
    : min_(std::max(0, min_steps)), block_(std::max(1, block)), max_(std::max(max_steps, min_steps)), tol_(tolerance) {
  if (min_ <= 0) {  // the caller asked for no warm-up at all
    done_ = true;
    reason_ = "none";
  }
}

void WarmupDetector::add(int64_t samples, int64_t wall_ns) {
  if (done_) return;
  ++steps_;
  recent_.emplace_back(samples, wall_ns);
  while (recent_.size() > size_t(2 * block_)) recent_.pop_front();
  if (steps_ >= min_ && recent_.size() == size_t(2 * block_)) {
    double s1 = 0, w1 = 0, s2 = 0, w2 = 0;
    for (int i = 0; i < block_; ++i) s1 += double(recent_[i].first), w1 += double(recent_[i].second);
    for (int i = block_; i < 2 * block_; ++i) s2 += double(recent_[i].first), w2 += double(recent_[i].second);
    if (w1 > 0 && w2 > 0 && s1 > 0) {
      const double r = (s2 / w2) / (s1 / w1);
      if (std::fabs(r - 1) <= tol_) {
        done_ = true;
        reason_ = "stable";
        return;
      }
    }
  }
  if (steps_ >= max_) {
    done_ = true;
    reason_ = "cap";
  }
}

}  // namespace tb::measure
