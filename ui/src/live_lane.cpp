#include "ui/live_lane.h"

namespace tb::ui {

std::shared_ptr<const StepLaneInput> liveLane(const RunRecord& record, qint64 after_step) {
  const auto& steps = record.steps;
  size_t first = 0;
  while (first < steps.size() && steps[first].i <= after_step) ++first;
  if (steps.size() - first > kLiveLaneSteps) first = steps.size() - kLiveLaneSteps;
  if (first >= steps.size()) return nullptr;
  auto lane = std::make_shared<StepLaneInput>();
  lane->steps.reserve(steps.size() - first);
  for (size_t k = first; k < steps.size(); ++k) {
    const StepSample& s = steps[k];
    if (s.t_ns <= 0) continue;  // a step that states no start cannot be placed
    tb::prof::LaneStep l;
    l.index = s.i;
    l.t_ns = s.t_ns;
    l.wall_ns = s.wall_ns;
    l.data_wait_ns = s.data_wait_ns;
    l.forward_ns = s.forward_ns;
    l.backward_ns = s.backward_ns;
    l.optim_ns = s.optim_ns;
    l.traced = s.traced;
    l.warmup = s.warmup;
    l.skipped = s.skipped;
    l.host_rss = s.host_rss;
    l.device_allocated = s.device_allocated;
    l.evaluations = s.evaluations;
    lane->steps.push_back(l);
  }
  if (lane->steps.empty()) return nullptr;
  const int64_t from = lane->steps.front().t_ns;
  for (const OutsideInterval& o : record.outside) {
    if (o.t_ns < from) continue;
    lane->outside.push_back({o.t_ns, o.wall_ns, o.kind.toStdString(), o.after_step});
  }
  for (const tb::prof::LaneCompile& c : record.compiles)
    if (c.t_ns + c.dur_ns >= from) lane->compiles.push_back(c);
  return lane;
}

}  // namespace tb::ui
