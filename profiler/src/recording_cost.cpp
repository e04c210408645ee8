// recording_cost.h.
#include "profiler/recording_cost.h"

#include <cstdio>
#include <cstdlib>

namespace tb::prof {

RecordingCost recording_cost(const TraceMetadata& meta, int64_t span_ns) {
  RecordingCost c;
  const auto& x = meta.extra;
  auto get = [&](const char* k) {
    auto it = x.find(k);
    return it == x.end() ? std::string() : it->second;
  };
  const std::string ns = get("recording_record_ns"), events = get("recording_events"), kinds = get("recording_cupti_kinds");
  const std::string profiler = get("recording_profiler");  // a script's: "torch.profiler (Kineto) ..."
  char b[256];
  if (!ns.empty() && !events.empty()) {
    const double per = std::atof(ns.c_str()), n = std::atof(events.c_str());
    // A range is two records (its begin and its end); counting every event as a range over-states instants.
    c.estimated_ns = 2 * n * per;
    const double span = double(span_ns);
    if (span > 0) c.share = c.estimated_ns / span;
    std::snprintf(b, sizeof b, "recorder: %.0f events at ~%.0f ns a record (~%.2f ms", n, per, c.estimated_ns / 1e6);
    c.text = b;
    if (c.share >= 0) {
      std::snprintf(b, sizeof b, ", %.2f%% of the trace", 100 * c.share);
      c.text += b;
    }
    c.text += ")";
  }
  if (!kinds.empty())
    c.text += (c.text.empty() ? "" : "; ") + std::string("CUPTI: ") + kinds +
              " (its cost: bench_engine_collector, beside torch.profiler's)";
  if (!profiler.empty()) c.text += (c.text.empty() ? "" : "; ") + profiler;
  return c;
}

}  // namespace tb::prof
