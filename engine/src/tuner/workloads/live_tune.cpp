// What a live session takes from an Auto-tune's result (engine/live_tune.h).
#include "engine/live_tune.h"

#include "engine/cpu_allocator.h"

namespace tb::engine {

LiveTuneOutcome apply_tune_live(Session& session, const TuneResult& result) {
  LiveTuneOutcome o;
  for (const auto& [k, v] : result.final_config) {
    if (!session.config().count(k) || session.config().at(k) == v) continue;
    const KnobInfo* info = find_knob(k);
    if (info && info->process_scope) {
      if (auto b = result.baseline.find(k); b != result.baseline.end() && b->second == v) continue;
      if (k != "cpu_allocator" || !switch_cpu_allocator_live(v)) {
        o.warnings.push_back("the tuner keeps " + k + "=" + v + ", which takes effect when a process starts: " +
                             "restart the run with --set " + k + "=" + v +
                             (k == "cpu_allocator" ? " (" + cpu_allocator_env(v) + ")" : ""));
        continue;
      }
    }
    o.changed[k] = v;
  }
  if (session.config().at("cpu_allocator") != active_cpu_allocator() && !o.changed.count("cpu_allocator"))
    o.changed["cpu_allocator"] = active_cpu_allocator();
  if (!o.changed.empty()) o.rev = session.apply(o.changed);
  return o;
}

}  // namespace tb::engine
