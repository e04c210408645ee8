// The launcher's `compile` messages (client/compile_events.h).
#include "client/compile_events.h"

#include <algorithm>
#include <cstdio>

#include "profiler/analysis.h"

namespace tb::client {
namespace {

std::string str(const nlohmann::json& m, const char* key) {
  return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : std::string();
}
int64_t num(const nlohmann::json& m, const char* key) {
  return m.contains(key) && m[key].is_number() ? m[key].get<int64_t>() : int64_t(0);
}

}  // namespace

prof::LaneCompile lane_compile_of(const nlohmann::json& m) {
  prof::LaneCompile c;
  if (!m.is_object()) return c;
  c.id = str(m, "id");
  c.frame = str(m, "frame");
  c.file = str(m, "file");
  c.line = num(m, "line");
  c.t_ns = num(m, "t_ns");
  c.dur_ns = num(m, "dur_ns");
  c.backward = m.contains("backward") && m["backward"].is_boolean() && m["backward"].get<bool>();
  c.recompile = str(m, "recompile");
  c.failed = str(m, "failed");
  if (m.contains("phases") && m["phases"].is_array())
    for (const nlohmann::json& p : m["phases"])
      if (p.is_object()) c.phases.push_back({str(p, "name"), num(p, "t_ns"), num(p, "dur_ns")});
  if (m.contains("graph_breaks") && m["graph_breaks"].is_array())
    for (const nlohmann::json& g : m["graph_breaks"])
      if (g.is_object()) c.breaks.push_back({str(g, "reason"), str(g, "file"), num(g, "line")});
  if (m.contains("kernels") && m["kernels"].is_array())
    for (const nlohmann::json& k : m["kernels"]) {
      if (!k.is_object() || str(k, "name").empty()) continue;
      prof::LaneKernel& x = c.kernels.emplace_back();
      x.name = str(k, "name");
      x.range = str(k, "range");
      if (k.contains("ops") && k["ops"].is_array())
        for (const nlohmann::json& op : k["ops"])
          if (op.is_string()) x.ops.push_back(op.get<std::string>());
      if (k.contains("lines") && k["lines"].is_array())
        for (const nlohmann::json& l : k["lines"])
          if (l.is_object()) x.lines.push_back({str(l, "file"), num(l, "line"), str(l, "code")});
    }
  return c;
}

std::vector<prof::LaneCompile> lane_compiles(const nlohmann::json& compiles) {
  std::vector<prof::LaneCompile> out;
  if (!compiles.is_array()) return out;
  for (const nlohmann::json& m : compiles)
    if (m.is_object()) out.push_back(lane_compile_of(m));
  return out;
}

std::unique_ptr<prof::Trace> lanes_trace(const std::vector<prof::LaneStep>& steps,
                                         const std::vector<prof::LaneCompile>& compiles) {
  auto lanes = std::make_unique<prof::Trace>();
  lanes->meta().extra["tunebench_run"] = "script";
  prof::add_step_lane(*lanes, steps, {}, 0);
  prof::add_compile_lane(*lanes, compiles, 0);
  lanes->finalize();
  return lanes;
}

std::vector<std::string> compile_lines(const prof::Trace& trace, const std::vector<prof::LaneCompile>& compiles,
                                       size_t compiling_out) {
  if (compiles.empty()) return {};
  int64_t total = 0;
  std::vector<std::string> frames;
  for (const prof::LaneCompile& c : compiles) {
    total += std::max<int64_t>(0, c.dur_ns);
    if (std::find(frames.begin(), frames.end(), c.frame_label()) == frames.end()) frames.push_back(c.frame_label());
  }
  char head[256];
  std::snprintf(head, sizeof head, "compile: torch.compile took %.1f s in %zu compile%s of %zu frame%s", total / 1e9,
                compiles.size(), compiles.size() == 1 ? "" : "s", frames.size(), frames.size() == 1 ? "" : "s");
  std::vector<std::string> lines{head};
  if (compiling_out > 0)
    lines.back() += "; the " + std::to_string(compiling_out) + " step" + (compiling_out == 1 ? "" : "s") +
                    " that compiled " + (compiling_out == 1 ? "is" : "are") +
                    " left out of the figures (a one-time cost)";
  // The compile lane's findings, as `analyze` of the run's trace gives them.
  for (const prof::Finding& f : prof::analyze(trace).findings)
    if (f.kind == prof::FindingKind::CompileTime || f.kind == prof::FindingKind::Recompiles ||
        f.kind == prof::FindingKind::GraphBreak)
      lines.push_back("  " + f.message);
  return lines;
}

}  // namespace tb::client
