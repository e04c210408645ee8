// When a warm-up is over (docs/protocol.md "Warm-up"): not after a fixed count, but when step times have
// settled. After at least `min_steps`, the warm-up ends once the throughput of the last `block` steps and
// of the `block` steps before them differ by at most `tolerance` (relative); it ends anyway after
// `max_steps` (and says so). min_steps = 0 means no warm-up at all (done at once, reason "none"). `block` should be a multiple of any periodic structure of the step (the
// accumulation count under grad_accumulation), so that the blocks compare like with like.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace tb::measure {

class WarmupDetector {
 public:
  WarmupDetector(int min_steps = 3, int block = 3, double tolerance = 0.10, int max_steps = 30);
  // Feeds one warm-up step. Ignored once done().
  void add(int64_t samples, int64_t wall_ns);
  bool done() const { return done_; }
  int steps() const { return steps_; }
  // "" while running; "stable" (the last two blocks agree), "cap" (max_steps reached unsettled) or "none".
  const std::string& reason() const { return reason_; }
  int block() const { return block_; }

 private:
  int min_, block_, max_;
  double tol_;
  int steps_ = 0;
  bool done_ = false;
  std::string reason_;
  std::deque<std::pair<int64_t, int64_t>> recent_;  // (samples, wall_ns) of the last 2 * block steps
};

}  // namespace tb::measure
