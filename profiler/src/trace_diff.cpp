#include "profiler/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "json_writer.h"
#include "profiler/step_lane.h"

namespace tb::prof {
namespace {

struct Totals {
  double count = 0, ns = 0;
};

// Kernels on the analysed device and CPU ranges of the analysed process, inside the window, by name.
std::map<std::pair<bool, std::string>, Totals> totals(const Trace& t, const AnalysisResult& r) {
  std::map<std::pair<bool, std::string>, Totals> out;
  const int64_t w0 = r.window.t0, w1 = r.window.t1;
  for (const Track& tr : t.tracks()) {
    const bool gpu = tr.kind() == TrackKind::GpuStream;
    if (gpu ? tr.pid() != r.device : tr.kind() != TrackKind::CpuThread || (r.pid >= 0 && tr.pid() != r.pid)) continue;
    if (is_step_lane(tr)) continue;  // the step stream's boxes, not the job's ranges
    tr.for_each_in(w0, w1, [&](const Event& e, uint32_t) {
      if (e.start_ns < w0 || e.start_ns >= w1) return;  // counted where it starts
      if (gpu ? e.kind != EventKind::Kernel : e.kind != EventKind::Range) return;
      Totals& x = out[{gpu, std::string(t.name(e.name))}];
      x.count += 1;
      x.ns += static_cast<double>(e.duration_ns());
    });
  }
  return out;
}

double median_or_window(const AnalysisResult& r) {
  return r.steps.empty() ? static_cast<double>(r.window.length()) : static_cast<double>(r.step_median_ns);
}

}  // namespace

TraceDiff diff_traces(const Trace& a, const AnalysisResult& ra, const Trace& b, const AnalysisResult& rb,
                      const DiffOptions& opt) {
  TraceDiff d;
  d.a_steps = ra.steps.size();
  d.b_steps = rb.steps.size();
  d.per_step = d.a_steps > 0 && d.b_steps > 0;
  if (!d.per_step) d.notes.push_back("one of the traces has no steps: figures are whole-window totals, not per step");
  if (ra.has_gpu != rb.has_gpu) d.notes.push_back("only one of the traces has GPU activity");
  // Sum of the steps' figures / steps when per step; the whole window's otherwise.
  const double na = d.per_step ? static_cast<double>(d.a_steps) : 1.0;
  const double nb = d.per_step ? static_cast<double>(d.b_steps) : 1.0;
  d.a_step_ns = median_or_window(ra);
  d.b_step_ns = median_or_window(rb);
  d.speedup = d.b_step_ns > 0 ? d.a_step_ns / d.b_step_ns : 0;
  auto cls = [&](const char* name, int64_t va, int64_t vb) {
    d.classes.push_back({name, static_cast<double>(va) / na, static_cast<double>(vb) / nb});
  };
  cls("window", ra.window.length(), rb.window.length());
  cls("gpu_busy", ra.gpu_busy_ns, rb.gpu_busy_ns);
  cls("compute", ra.compute_ns, rb.compute_ns);
  cls("comm_exposed", ra.comm_exposed_ns, rb.comm_exposed_ns);
  cls("gpu_idle", ra.gpu_idle_ns, rb.gpu_idle_ns);
  cls("loader_stall", ra.loader_stall_ns, rb.loader_stall_ns);
  cls("sync_idle", ra.sync_idle_ns, rb.sync_idle_ns);
  cls("runtime_idle", ra.runtime_idle_ns, rb.runtime_idle_ns);
  cls("launch_gap", ra.launch_gap_ns, rb.launch_gap_ns);
  cls("launch_overhead", ra.launch_overhead_ns, rb.launch_overhead_ns);
  cls("other_idle", ra.other_idle_ns, rb.other_idle_ns);
  cls("host_sync", ra.sync_ns, rb.sync_ns);

  const auto ta = totals(a, ra), tb = totals(b, rb);
  for (const auto& [key, x] : ta) {
    auto it = tb.find(key);
    NameDelta n{key.second, key.first, x.count / na, 0, x.ns / na, 0};
    if (it == tb.end()) {
      d.removed.push_back(n);
    } else {
      n.b_count = it->second.count / nb;
      n.b_ns = it->second.ns / nb;
      d.changed.push_back(n);
    }
  }
  for (const auto& [key, x] : tb)
    if (!ta.count(key)) d.added.push_back({key.second, key.first, 0, x.count / nb, 0, x.ns / nb});
  auto by = [](auto f) { return [f](const NameDelta& x, const NameDelta& y) { return f(x) > f(y); }; };
  std::sort(d.removed.begin(), d.removed.end(), by([](const NameDelta& n) { return n.a_ns; }));
  std::sort(d.added.begin(), d.added.end(), by([](const NameDelta& n) { return n.b_ns; }));
  std::sort(d.changed.begin(), d.changed.end(), by([](const NameDelta& n) { return std::abs(n.delta_ns()); }));
  for (auto* v : {&d.removed, &d.added, &d.changed})
    if (v->size() > opt.top) v->resize(opt.top);

  std::set<std::string> fa, fb;
  for (const auto& f : ra.findings) fa.insert(f.id);
  for (const auto& f : rb.findings) fb.insert(f.id);
  for (const auto& id : fb)
    if (!fa.count(id)) d.findings_appeared.push_back(id);
  for (const auto& id : fa)
    if (!fb.count(id)) d.findings_disappeared.push_back(id);
  return d;
}

std::string to_json(const TraceDiff& d) {
  JsonWriter w;
  auto us = [](double ns) { return ns / 1000.0; };
  w.begin_object();
  w.key("version").value(int64_t{1});
  w.key("per_step").value(d.per_step);
  w.key("steps").begin_array().value(static_cast<int64_t>(d.a_steps)).value(static_cast<int64_t>(d.b_steps)).end_array();
  w.key("step_us").begin_array().value(us(d.a_step_ns)).value(us(d.b_step_ns)).end_array();
  w.key("speedup").value(d.speedup);
  w.key("classes").begin_array();
  for (const auto& c : d.classes) {
    w.begin_object().key("name").value(c.name).key("a_us").value(us(c.a_ns)).key("b_us").value(us(c.b_ns));
    w.key("delta_us").value(us(c.delta_ns())).end_object();
  }
  w.end_array();
  auto names = [&](const char* key, const std::vector<NameDelta>& v) {
    w.key(key).begin_array();
    for (const auto& n : v) {
      w.begin_object().key("name").value(n.name).key("kind").value(n.kernel ? "kernel" : "op");
      w.key("a_count").value(n.a_count).key("b_count").value(n.b_count);
      w.key("a_us").value(us(n.a_ns)).key("b_us").value(us(n.b_ns)).key("delta_us").value(us(n.delta_ns()));
      w.end_object();
    }
    w.end_array();
  };
  names("added", d.added);
  names("removed", d.removed);
  names("changed", d.changed);
  w.key("findings_appeared").strings(d.findings_appeared);
  w.key("findings_disappeared").strings(d.findings_disappeared);
  w.key("notes").strings(d.notes);
  w.end_object();
  return w.take();
}

}  // namespace tb::prof
