// Counts and speed per compiled region (docs/analysis.md, "Compiled regions"): torch.profiler draws each run of
// torch.compile's code as a `Torch-Compiled Region: F/C` range (F: Dynamo's frame id, C: that frame's compile)
// and each run of a compiled backward as `CompiledFunctionBackward`. Those ids say nothing to a user; the
// compile lane's boxes carry the frame's label and, at their start, the same id (profiler/compile_lane.h), so
// the rows are named as the lane names the compiles.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analysis_findings.h"
#include "analysis_intervals.h"
#include "analysis_kernels.h"
#include "analysis_passes.h"
#include "analysis_step_spans.h"
#include "profiler/compile_lane.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"

namespace tb::prof::detail {
namespace {

constexpr std::string_view kRegionPrefix = "Torch-Compiled Region: ";
constexpr std::string_view kCompiledBackward = "CompiledFunctionBackward";
constexpr std::string_view kBackwardMark = " (backward)";  // frame_label()'s word for a lazily compiled backward

// What the compile lane says of the compiles: the label of each id's forward compile, and the labels of the
// backward compiles (CompiledFunctionBackward carries no id: its row is named by them).
struct LaneLabels {
  std::map<std::string, std::string, std::less<>> by_id;
  std::vector<std::string> backward;  // distinct, first seen first
};

// A merged group trace has a lane per rank; the ranks run the same script, so the first label of an id stands.
LaneLabels read_lane_labels(const Trace& trace) {
  LaneLabels l;
  for (const Track& t : trace.tracks()) {
    if (!is_step_lane(t) || t.kind() != TrackKind::CpuThread || t.name() != kCompileLaneTrackName) continue;
    const Event* box = nullptr;
    for (const Event& e : t.events()) {
      if (e.kind != EventKind::Range) continue;
      const std::string_view n = trace.name(e.name);
      const std::string_view detail = e.detail == kNoName ? std::string_view() : trace.name(e.detail);
      if (n == names::kLaneCompile) {
        box = &e;
        if (detail.find(kBackwardMark) != std::string_view::npos &&
            std::find(l.backward.begin(), l.backward.end(), detail) == l.backward.end())
          l.backward.emplace_back(detail);
      } else if (n == names::kLaneCompileId && box && e.start_ns == box->start_ns && !detail.empty() &&
                 box->detail != kNoName) {
        const std::string_view label = trace.name(box->detail);
        // A frame's backward compile has its forward's id: the forward's label names the region.
        if (label.find(kBackwardMark) == std::string_view::npos) l.by_id.try_emplace(std::string(detail), label);
      }
    }
  }
  return l;
}

struct Runs {
  std::string id;
  std::vector<int64_t> durations;  // of the runs in the steps, less the compiles inside them
  int64_t compiling = 0;           // those compiles' time
  uint64_t elsewhere = 0;
};

// Every run on the analysed process's threads (a compiled backward runs on autograd's device threads on a GPU),
// by region. A name is looked at once: a trace repeats a few names a million times. The code after a graph
// break compiles inside the run that first reaches it (its frame is called from the region's code), so the
// compile lane's compiles are taken out of a run's time: a run is the compiled code's speed, the compile the
// findings' (analysis_compile.cpp).
std::vector<Runs> collect_runs(const Trace& trace, const Scope& sc, const StepSpans& steps,
                               const iv::Intervals& compiling) {
  constexpr int32_t kUnseen = -2, kOther = -1;
  std::vector<int32_t> slot_of(trace.name_count(), kUnseen);
  std::vector<Runs> runs;
  std::map<std::string, int32_t, std::less<>> slot_by_id;
  auto slot = [&](NameId name) {
    int32_t& s = slot_of[name];
    if (s != kUnseen) return s;
    const std::string_view n = trace.name(name);
    std::string id;
    if (n == kCompiledBackward) id = "backward";
    else if (n.substr(0, kRegionPrefix.size()) == kRegionPrefix) id = std::string(n.substr(kRegionPrefix.size()));
    else return s = kOther;
    auto [it, fresh] = slot_by_id.try_emplace(id, int32_t(runs.size()));
    if (fresh) runs.push_back({id, {}, 0, 0});
    return s = it->second;
  };
  for (const Track& t : trace.tracks()) {
    if (!in_scope(t, sc)) continue;
    for (const Event& e : t.events()) {
      if (e.kind != EventKind::Range || e.name >= slot_of.size()) continue;
      const int32_t s = slot(e.name);
      if (s < 0) continue;
      Runs& r = runs[size_t(s)];
      if (!steps.holds(e.start_ns)) {
        ++r.elsewhere;
        continue;
      }
      const int64_t compile = iv::measure(compiling, e.start_ns, e.end_ns);
      r.durations.push_back(e.duration_ns() - compile);
      r.compiling += compile;
    }
  }
  return runs;
}

// "F/C" -> F and C; -1 for an id of another form (compiled autograd's "!A/F/C").
void parse_id(const std::string& id, CompiledRegionStat& row) {
  const size_t slash = id.find('/');
  if (id.empty() || slash == std::string::npos || slash == 0 || id.find('/', slash + 1) != std::string::npos) return;
  char* end = nullptr;
  const long long f = std::strtoll(id.c_str(), &end, 10);
  if (end != id.c_str() + slash) return;
  const long long c = std::strtoll(id.c_str() + slash + 1, &end, 10);
  if (*end != '\0' || end == id.c_str() + slash + 1) return;
  row.frame = f;
  row.compile = c;
}

std::string backward_label(const LaneLabels& lane) {
  if (lane.backward.size() == 1) return lane.backward.front();
  if (lane.backward.empty()) return "compiled backward";
  return "compiled backward of " + std::to_string(lane.backward.size()) + " frames";
}

CompiledRegionStat row_of(Runs& r, const LaneLabels& lane, const StepSpans& steps) {
  CompiledRegionStat row;
  row.id = r.id;
  row.backward = r.id == "backward";
  if (row.backward) {
    row.label = backward_label(lane);
  } else {
    parse_id(r.id, row);
    const auto it = lane.by_id.find(r.id);
    row.label = it != lane.by_id.end() ? it->second : "region " + r.id;
  }
  row.runs = r.durations.size();
  row.runs_elsewhere = r.elsewhere;
  row.compile_ns = r.compiling;
  for (int64_t d : r.durations) row.total_ns += d;
  if (!r.durations.empty()) {
    auto mid = r.durations.begin() + std::ptrdiff_t(r.durations.size() / 2);
    std::nth_element(r.durations.begin(), mid, r.durations.end());
    row.median_ns = *mid;
  }
  row.runs_per_step = steps.steps ? double(row.runs) / double(steps.steps) : 0;
  row.share = steps.base_ns > 0 ? double(row.total_ns) / double(steps.base_ns) : 0;
  return row;
}

}  // namespace

void add_compiled_regions(const Trace& trace, const Scope& sc, AnalysisResult& r) {
  const StepSpans steps(r);
  // The kernels inside the regions: on a GPU (CUDA graphs) they may run where no region range is drawn.
  add_compiled_kernels(trace, sc, steps, r.compiled_regions.kernels);
  std::vector<Runs> runs = collect_runs(trace, sc, steps, iv::merge(compile_intervals(trace)));
  if (runs.empty()) return;
  const LaneLabels lane = read_lane_labels(trace);
  CompiledRegions& out = r.compiled_regions;
  out.steps = steps.steps;
  out.base_ns = steps.base_ns;
  for (Runs& x : runs) out.rows.push_back(row_of(x, lane, steps));
  // By frame, then compile, as Dynamo numbered them; ids of another form after them, the backward last.
  std::sort(out.rows.begin(), out.rows.end(), [](const CompiledRegionStat& a, const CompiledRegionStat& b) {
    if (a.backward != b.backward) return b.backward;
    if ((a.frame < 0) != (b.frame < 0)) return b.frame < 0;
    if (a.frame != b.frame) return a.frame < b.frame;
    if (a.compile != b.compile) return a.compile < b.compile;
    return a.id < b.id;
  });
}

}  // namespace tb::prof::detail
