// The compile lane (profiler/compile_lane.h): torch.compile's compiles of a script's run on a row of the step
// lane's pseudo-process.
#include "profiler/compile_lane.h"

#include <algorithm>
#include <cstdlib>

#include "lane_range.h"
#include "profiler/compiled_kernels.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"

namespace tb::prof {

using detail::lane_range;

int64_t LaneCompile::frame_compile_index() const {
  const size_t slash = id.find('/');
  if (slash == std::string::npos) return 0;
  return std::strtoll(id.c_str() + slash + 1, nullptr, 10);
}

std::string LaneCompile::frame_label() const {
  // Dynamo names the code after a graph break torch_dynamo_resume_in_<function>_at_<line>.
  constexpr std::string_view kResume = "torch_dynamo_resume_in_";
  std::string s = frame.empty() ? "a frame" : frame;
  if (s.rfind(kResume, 0) == 0) {
    const size_t at = s.rfind("_at_");
    if (at != std::string::npos && at > kResume.size())
      s = s.substr(kResume.size(), at - kResume.size()) + " after its graph break";
  }
  if (backward) s += " (backward)";
  // The launcher's own forward hooks (python/tunebench/hooks/): Dynamo compiles them too, as frames of their
  // own; named as ours so that nobody looks for them in the script.
  if (file.find("/tunebench/hooks/") != std::string::npos) return "TuneBench's own hook " + s;
  if (!file.empty()) s += " at " + file + ":" + std::to_string(line);
  return s;
}

std::string compile_phase_title(const std::string& phase) {
  if (phase == "dynamo") return "Dynamo: bytecode tracing";
  if (phase == "aot") return "AOT autograd";
  if (phase == "inductor") return "Inductor";
  if (phase == "codegen") return "code generation";
  if (phase == "guards") return "guards";
  return phase;
}

void add_compile_lane(Trace& trace, std::span<const LaneCompile> compiles, int64_t offset_ns) {
  if (compiles.empty()) return;
  const uint32_t row = trace.track_for(TrackKind::CpuThread, kStepLanePid, kCompileLaneTid, kCompileLaneTrackName);
  trace.set_track_name(row, kCompileLaneTrackName);
  trace.set_track_sort_index(row, kStepLaneSortIndex + 2);
  trace.meta().process_names[kStepLanePid] = kStepLaneProcessName;
  const NameId box = trace.intern(names::kLaneCompile), recompile = trace.intern(names::kLaneRecompile),
               broke = trace.intern(names::kLaneGraphBreak), failed = trace.intern(names::kLaneCompileFailed),
               id = trace.intern(names::kLaneCompileId), kernel = trace.intern(names::kLaneKernel);
  for (const LaneCompile& c : compiles) {
    const int64_t start = c.t_ns + offset_ns;
    const int64_t end = start + std::max<int64_t>(0, c.dur_ns);
    // The box before what it holds: a phase as long as the compile still nests inside it.
    trace.add_event(row, lane_range(box, start, end, c.frame_compile_index(), trace.intern(c.frame_label())));
    for (const LaneCompilePhase& p : c.phases) {
      const int64_t a = std::clamp(p.t_ns + offset_ns, start, end);
      const int64_t b = std::clamp(p.t_ns + offset_ns + std::max<int64_t>(0, p.dur_ns), a, end);
      trace.add_event(row, lane_range(trace.intern(compile_phase_title(p.name)), a, b, kNoArg, kNoName));
    }
    if (!c.recompile.empty())
      trace.add_event(row, lane_range(recompile, start, start, kNoArg, trace.intern(c.recompile)));
    for (const LaneGraphBreak& g : c.breaks)
      trace.add_event(row, lane_range(broke, start, start, g.line, trace.intern(g.file + "\n" + g.reason)));
    if (!c.failed.empty()) trace.add_event(row, lane_range(failed, start, start, kNoArg, trace.intern(c.failed)));
    for (const LaneKernel& k : c.kernels)
      if (!k.name.empty())
        trace.add_event(row, lane_range(kernel, start, start, kNoArg, trace.intern(kernel_marker_detail(k))));
    if (!c.id.empty()) trace.add_event(row, lane_range(id, start, start, kNoArg, trace.intern(c.id)));
  }
}

}  // namespace tb::prof
