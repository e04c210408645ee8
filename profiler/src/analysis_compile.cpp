// The findings from the compile lane (profiler/compile_lane.h; docs/analysis.md, "Compiled training"): where
// torch.compile's time went over the run, the frames it compiled again and the guard that failed each time,
// and the graph breaks with the user's file:line. Read from the lane's own ranges and markers, so `analyze` of a
// written trace and the GUI's live view say the same.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analysis_findings.h"
#include "profiler/compile_lane.h"
#include "profiler/range_names.h"
#include "profiler/step_lane.h"

namespace tb::prof::detail {
namespace {

constexpr const char* kFromCompiles = "(from the compile lane) ";
constexpr double kCompileMinShare = 0.10;  // of the run: a compile is paid once; only a large share is a finding
constexpr int64_t kRecompilesMin = 2;     // one recompile is torch's own (a size seen changing becomes dynamic)

struct Break {
  std::string file, reason, frame;
  int64_t line = 0;
  int64_t compiles = 0;  // compiles that met it
};

struct FrameCompiles {
  std::string label;
  int64_t compiles = 0, recompiles = 0, ns = 0;
  std::vector<std::pair<std::string, int64_t>> reasons;  // guard -> times, in first-seen order
};

struct CompileView {
  std::vector<Interval> boxes;
  std::map<std::string, FrameCompiles> frames;  // by label
  std::vector<FrameCompiles*> order;            // frames in first-compiled order
  std::vector<Break> breaks;
  int64_t backward = 0, failed = 0;
  std::string first_failure;
};

std::string seconds(double ns) { return ns >= 1e9 ? fmt("%.1f s", ns / 1e9) : fmt_ms(ns); }

// The guard's kind, without the values that change from one recompile to the next ("expected 8, actual 12"),
// so that the same guard failing at every new length counts as one reason.
std::string guard_kind(const std::string& reason) {
  std::string s = reason.substr(0, reason.find('\n'));
  if (const size_t at = s.find(". expected "); at != std::string::npos) s.resize(at);
  if (const size_t at = s.find(" == "); at != std::string::npos && s.find("size mismatch") == std::string::npos) {
    // Dynamo's name for what was on the stack at a graph break: the value the unsupported call returned (an
    // .item()), which the code after the break was specialized on.
    const std::string what = s.substr(0, at);
    s = what.rfind("___stack", 0) == 0 ? "the value returned at its graph break changed"
                                       : "the value of " + what + " changed";
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

void read_row(const Trace& trace, const Track& t, CompileView& v) {
  FrameCompiles* cur = nullptr;
  Interval box;
  for (const Event& e : t.events()) {
    if (e.kind != EventKind::Range) continue;
    const std::string_view n = trace.name(e.name);
    const std::string detail = e.detail == kNoName ? std::string() : std::string(trace.name(e.detail));
    if (n == names::kLaneCompile) {
      box = {e.start_ns, e.end_ns};
      v.boxes.push_back(box);
      auto [it, fresh] = v.frames.try_emplace(detail);
      cur = &it->second;
      if (fresh) cur->label = detail, v.order.push_back(cur);
      ++cur->compiles;
      cur->ns += e.duration_ns();
      if (detail.find(" (backward)") != std::string::npos) ++v.backward;
    } else if (!cur || e.start_ns < box.t0 || e.start_ns > box.t1) {
      continue;
    } else if (n == names::kLaneRecompile) {
      ++cur->recompiles;
      const std::string kind = guard_kind(detail);
      auto r = std::find_if(cur->reasons.begin(), cur->reasons.end(), [&](const auto& p) { return p.first == kind; });
      if (r == cur->reasons.end()) cur->reasons.push_back({kind, 1});
      else ++r->second;
    } else if (n == names::kLaneGraphBreak) {
      const size_t nl = detail.find('\n');
      Break b{detail.substr(0, nl), nl == std::string::npos ? "" : detail.substr(nl + 1), cur->label, e.arg, 1};
      b.reason = b.reason.substr(0, b.reason.find('\n'));
      auto same = std::find_if(v.breaks.begin(), v.breaks.end(),
                               [&](const Break& x) { return x.file == b.file && x.line == b.line; });
      if (same == v.breaks.end()) v.breaks.push_back(std::move(b));
      else ++same->compiles;
    } else if (n == names::kLaneCompileFailed) {
      if (v.failed++ == 0) v.first_failure = detail;
    }
  }
}

CompileView read_compiles(const Trace& trace) {
  CompileView v;
  for (const Track& t : trace.tracks())
    if (is_step_lane(t) && t.kind() == TrackKind::CpuThread && t.name() == kCompileLaneTrackName) read_row(trace, t, v);
  return v;
}

// The run's span on the step lane: from the first step's start (or compile's) to the last step's end.
Interval run_span(const Trace& trace, const CompileView& v) {
  Interval span{INT64_MAX, INT64_MIN};
  for (const Track& t : trace.tracks()) {
    if (!is_step_lane(t) || t.kind() != TrackKind::CpuThread) continue;
    for (const Event& e : t.events())
      if (e.kind == EventKind::Range) span.t0 = std::min(span.t0, e.start_ns), span.t1 = std::max(span.t1, e.end_ns);
  }
  for (const Interval& b : v.boxes) span.t0 = std::min(span.t0, b.t0), span.t1 = std::max(span.t1, b.t1);
  return span.t0 < span.t1 ? span : Interval{};
}

// A compile is paid once: its share is of the run's time, and it bounds no step's speed (max_speedup 1: the
// findings panel shows no "up to" for it; a run of 55x "up to" for a 98% share read as a per-step promise).
Finding finding(FindingKind kind, const std::string& id, double share, Interval evidence) {
  Finding f;
  f.kind = kind;
  f.id = id;
  f.share = share;
  f.max_speedup = 1;
  f.evidence = evidence;
  return f;
}

// What to change for a frame compiled again and again, by the guard that failed most.
std::string recompile_advice(const std::string& kind) {
  const size_t at = kind.find("size mismatch at index ");
  if (at != std::string::npos) {
    const size_t q1 = kind.find('\''), q2 = q1 == std::string::npos ? q1 : kind.find('\'', q1 + 1);
    const std::string tensor = q2 == std::string::npos ? "the tensor" : kind.substr(q1 + 1, q2 - q1 - 1);
    const std::string dim = kind.substr(at + 23);
    return "mark that dimension dynamic (torch._dynamo.mark_dynamic(" + tensor + ", " + dim +
           ") before the call) or compile with dynamic=True; or pad to a few fixed lengths";
  }
  if (kind == "the value returned at its graph break changed")
    return "each new value compiles that code again, until torch's recompile limit (8) makes it run eagerly: keep "
           "the value a tensor (no .item() in the compiled code), or mark the function torch.compiler.disable";
  if (kind.rfind("the value of ", 0) == 0)
    return "the frame reads a Python number that changes between calls: pass it as a tensor, or keep it out of "
           "the compiled code";
  return "torch._dynamo.explain() and TORCH_LOGS=recompiles show each guard; make what it checks stay the same";
}

std::string break_advice(const std::string& reason) {
  if (reason.find("item()") != std::string::npos)
    return "keep the value on the device (torch.where instead of an if on .item()), or set "
           "torch._dynamo.config.capture_scalar_outputs = True";
  if (reason.find("print") != std::string::npos || reason.find("builtin") != std::string::npos)
    return "move the Python call (a print, a log) out of the compiled function";
  return "the code after it runs eagerly between compiled pieces: rewrite that line in tensor operations, or "
         "move it out of the compiled function";
}

void compile_time(const CompileView& v, Interval span, std::vector<Finding>& out) {
  int64_t total = 0, recompiles = 0;
  Interval longest;
  for (const Interval& b : v.boxes) {
    total += b.length();
    if (b.length() > longest.length()) longest = b;
  }
  for (const FrameCompiles* f : v.order) recompiles += f->recompiles;
  const double share = span.length() > 0 ? std::min(1.0, double(total) / double(span.length())) : 0;
  if (share < kCompileMinShare) return;
  Finding f = finding(FindingKind::CompileTime, "compile_time", share, longest);
  f.message = std::string(kFromCompiles) + "torch.compile took " + seconds(double(total)) + " in " +
              std::to_string(v.boxes.size()) + " compile" + (v.boxes.size() == 1 ? "" : "s") + " of " +
              std::to_string(v.order.size()) + " frame" + (v.order.size() == 1 ? "" : "s") + " (" +
              std::to_string(recompiles) + " recompile" + (recompiles == 1 ? "" : "s") +
              (v.backward ? ", " + std::to_string(v.backward) + " backward" : "") + "), " + fmt_pct(share) +
              " of the run's " + seconds(double(span.length())) + " (the rest: " +
              seconds(double(span.length() - std::min(total, span.length()))) +
              ") -> it is paid once per compile, not per step: a longer run pays it back; fewer recompiles (see "
              "them) cost less";
  out.push_back(std::move(f));
}

void recompile_findings(const CompileView& v, Interval span, std::vector<Finding>& out) {
  for (const FrameCompiles* fr : v.order) {
    if (fr->recompiles < kRecompilesMin) continue;
    std::string why;
    const auto top = std::max_element(fr->reasons.begin(), fr->reasons.end(),
                                      [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [kind, times] : fr->reasons)
      why += (why.empty() ? "" : "; ") + kind + (times > 1 ? " (" + std::to_string(times) + " times)" : "");
    const double share = span.length() > 0 ? std::min(1.0, double(fr->ns) / double(span.length())) : 0;
    Finding f = finding(FindingKind::Recompiles, "recompiles", share, span);
    f.message = std::string(kFromCompiles) + fr->label + " was compiled " + std::to_string(fr->compiles) + " times (" +
                std::to_string(fr->recompiles) + " recompiles, " + seconds(double(fr->ns)) + "): " +
                (why.empty() ? "no guard named" : why) + " -> " +
                recompile_advice(top == fr->reasons.end() ? "" : top->first);
    out.push_back(std::move(f));
  }
}

// The forward's time outside its compiled graphs over the traced steps that compiled nothing: Dynamo's guard
// checks and cache lookups, the glue between graphs, and the eager code at a graph break. torch.profiler draws a
// compiled graph's run as `CompiledFunction` (training) around `## Call CompiledFxGraph <key> ##`; the model's
// forward is the launcher's `## forward ##` range.
struct OutsideGraphs {
  int64_t forward = 0, outside = 0, step = 0;
  size_t steps = 0;
};

bool is_graph_run(std::string_view n) { return n == "CompiledFunction" || n.rfind("## Call CompiledFxGraph", 0) == 0; }

OutsideGraphs outside_graphs(const Trace& trace, const AnalysisResult& r, const std::vector<Interval>& compiles) {
  OutsideGraphs o;
  if (r.training_track < 0 || size_t(r.training_track) >= trace.tracks().size()) return o;
  const auto& ev = trace.tracks()[size_t(r.training_track)].events();
  for (const StepBreakdown& s : r.steps) {
    auto compiled = [&](const Interval& c) { return c.t0 < s.end_ns && c.t1 > s.start_ns; };
    if (std::any_of(compiles.begin(), compiles.end(), compiled)) continue;  // its forward is the compile's
    auto it = std::lower_bound(ev.begin(), ev.end(), s.start_ns,
                               [](const Event& e, int64_t t) { return e.start_ns < t; });
    int64_t forward = 0, graphs = 0;
    for (; it != ev.end() && it->start_ns < s.end_ns; ++it) {
      if (it->kind != EventKind::Range || trace.name(it->name) != "## forward ##") continue;
      const Interval fw{it->start_ns, std::min(it->end_ns, s.end_ns)};
      forward += fw.length();
      int64_t covered_to = fw.t0;  // graph runs nest (CompiledFunction around its call): counted once
      for (auto g = it + 1; g != ev.end() && g->start_ns < fw.t1; ++g) {
        if (g->kind != EventKind::Range || !is_graph_run(trace.name(g->name))) continue;
        const int64_t a = std::max(g->start_ns, covered_to), b = std::min(g->end_ns, fw.t1);
        if (b > a) graphs += b - a, covered_to = b;
      }
    }
    if (forward <= 0 || graphs <= 0) continue;  // no compiled graph ran in it: not a compiled step
    o.forward += forward;
    o.outside += forward - graphs;
    o.step += s.duration_ns();
    ++o.steps;
  }
  return o;
}

void break_findings(const CompileView& v, const OutsideGraphs& og, std::vector<Finding>& out) {
  for (const Break& b : v.breaks) {
    const double share = og.step > 0 ? double(og.outside) / double(og.step) : 0;
    Finding f = finding(FindingKind::GraphBreak, "graph_break", share, {});
    f.message = std::string(kFromCompiles) + "graph break at " + b.file + ":" + std::to_string(b.line) + ": " +
                (b.reason.empty() ? "no reason given" : b.reason);
    if (og.steps > 0)
      f.message += "; over " + std::to_string(og.steps) + " traced step" + (og.steps == 1 ? "" : "s") +
                   " the forward ran " + fmt_ms(double(og.outside) / double(og.steps)) +
                   " a step outside its compiled graphs (guards, cache lookups, the eager code at the break: " +
                   fmt_pct(double(og.outside) / double(og.forward)) + " of the forward, " + fmt_pct(share) +
                   " of the step)";
    f.message += " -> " + break_advice(b.reason);
    out.push_back(std::move(f));
  }
}

}  // namespace

void add_compile_findings(const Trace& trace, AnalysisResult& r) {
  const CompileView v = read_compiles(trace);
  if (v.boxes.empty()) return;
  const Interval span = run_span(trace, v);
  std::vector<Finding> found;
  compile_time(v, span, found);
  recompile_findings(v, span, found);
  break_findings(v, v.breaks.empty() ? OutsideGraphs{} : outside_graphs(trace, r, v.boxes), found);
  if (v.failed > 0) {
    Finding f = finding(FindingKind::CompileTime, "compile_failed", 0, {});
    f.message = std::string(kFromCompiles) + std::to_string(v.failed) + " compile" + (v.failed == 1 ? "" : "s") +
                " failed (" + v.first_failure + ") -> that code ran eagerly: the compile's error says what to change";
    found.push_back(std::move(f));
  }
  for (Finding& f : found) r.findings.push_back(std::move(f));
}

std::vector<Interval> compile_intervals(const Trace& trace) { return read_compiles(trace).boxes; }

}  // namespace tb::prof::detail
