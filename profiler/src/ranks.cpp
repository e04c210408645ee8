#include "profiler/ranks.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "analysis_names.h"
#include "finding_json.h"
#include "json_writer.h"

namespace tb::prof {
namespace {

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string ms(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", double(ns) / 1e6);
  return b;
}

}  // namespace

std::vector<int64_t> processes_with_steps(const Trace& trace) {
  std::set<int64_t> pids;
  for (const Track& t : trace.tracks()) {
    if (t.kind() != TrackKind::CpuThread || t.pid() < 0 || pids.count(t.pid())) continue;
    for (const Event& e : t.events())
      if (e.kind == EventKind::Range && name_class::is_step(trace.name(e.name))) {
        pids.insert(t.pid());
        break;
      }
  }
  std::vector<int64_t> out(pids.begin(), pids.end());
  sort_processes(trace.meta(), out);
  return out;
}

std::string process_label(const TraceMetadata& meta, int64_t pid) {
  const std::string os = std::to_string(os_pid(pid));
  if (auto it = meta.process_names.find(pid); it != meta.process_names.end()) return it->second + " (pid " + os + ")";
  return "process " + os;
}

void sort_processes(const TraceMetadata& meta, std::vector<int64_t>& pids) {
  const auto rank_of = [&](int64_t pid) -> int64_t {
    auto it = meta.process_names.find(pid);
    if (it == meta.process_names.end() || it->second.rfind("rank ", 0) != 0) return INT64_MAX;
    return std::strtoll(it->second.c_str() + 5, nullptr, 10);
  };
  std::sort(pids.begin(), pids.end(),
            [&](int64_t a, int64_t b) { return std::make_pair(rank_of(a), a) < std::make_pair(rank_of(b), b); });
}

RankAnalysis analyze_ranks(const std::vector<AnalysisResult>& per_rank, const std::vector<std::string>& labels,
                           const AnalysisOptions& options) {
  RankAnalysis ra;
  const size_t n = per_rank.size();
  // Step numbers every rank has, and each rank's step by number.
  std::vector<std::map<int64_t, const StepBreakdown*>> by_index(n);
  for (size_t r = 0; r < n; ++r)
    for (const StepBreakdown& s : per_rank[r].steps) by_index[r].emplace(s.index, &s);
  std::vector<int64_t> common;
  if (n > 0)
    for (const auto& [i, s] : by_index[0]) {
      bool all = true;
      for (size_t r = 1; r < n && all; ++r) all = by_index[r].count(i) > 0;
      if (all) common.push_back(i);
    }
  ra.matched_steps = common.size();
  ra.ranks.resize(n);
  for (size_t r = 0; r < n; ++r) {
    RankStats& st = ra.ranks[r];
    st.pid = per_rank[r].pid;
    st.label = r < labels.size() && !labels[r].empty() ? labels[r] : "pid " + std::to_string(st.pid);
    st.steps = per_rank[r].steps.size();
    std::vector<int64_t> dur, work, wait, data;
    for (int64_t i : common) {
      const StepBreakdown& s = *by_index[r][i];
      dur.push_back(s.duration_ns());
      wait.push_back(s.comm_exposed_ns);
      work.push_back(s.duration_ns() - s.comm_exposed_ns);
      data.push_back(s.data_wait_ns);
    }
    st.step_median_ns = median(dur);
    st.work_median_ns = median(work);
    st.comm_wait_median_ns = median(wait);
    st.data_wait_median_ns = median(data);
  }
  if (n < 2) {
    ra.notes.push_back("one rank: nothing to compare");
    return ra;
  }
  if (common.size() < std::max<size_t>(3, options.min_trusted_steps)) {
    ra.notes.push_back("only " + std::to_string(common.size()) + " step numbers are common to every rank: too few to name a straggler");
    return ra;
  }
  // Each step's straggler (least communication wait) and the others' lost time to it.
  std::vector<std::vector<int64_t>> lost(n);
  int64_t step_total = 0;
  std::vector<int64_t> all_steps;
  for (int64_t i : common) {
    size_t s = 0;
    for (size_t r = 1; r < n; ++r)
      if (by_index[r][i]->comm_exposed_ns < by_index[s][i]->comm_exposed_ns) s = r;
    int64_t sum = 0;
    for (size_t r = 0; r < n; ++r) {
      all_steps.push_back(by_index[r][i]->duration_ns());
      if (r != s) sum += by_index[r][i]->comm_exposed_ns - by_index[s][i]->comm_exposed_ns;
    }
    ++ra.ranks[s].straggler_steps;
    lost[s].push_back(sum / int64_t(n - 1));
  }
  step_total = median(all_steps);
  size_t top = 0;
  for (size_t r = 1; r < n; ++r)
    if (ra.ranks[r].straggler_steps > ra.ranks[top].straggler_steps) top = r;
  const RankStats& s = ra.ranks[top];
  if (s.straggler_steps * 3 < common.size() * 2) {
    ra.notes.push_back("no steady straggler: the rank the others wait for changes from step to step (" + s.label +
                       " in " + std::to_string(s.straggler_steps) + " of " + std::to_string(common.size()) + ")");
    return ra;
  }
  ra.straggler = int(top);
  ra.wait_per_step_ns = median(lost[top]);
  ra.wait_share = step_total > 0 ? double(ra.wait_per_step_ns) / double(step_total) : 0;
  std::vector<int64_t> others_data;
  for (size_t r = 0; r < n; ++r)
    if (r != top) others_data.push_back(ra.ranks[r].data_wait_median_ns);
  const int64_t extra_data = s.data_wait_median_ns - median(others_data);
  ra.cause = extra_data * 2 >= ra.wait_per_step_ns && extra_data > 0 ? "loader" : "compute";
  if (ra.wait_share < options.finding_min_share) return ra;  // a straggler, but too small to act on
  Finding f;
  f.kind = FindingKind::Straggler;
  f.id = "straggler";
  f.share = ra.wait_share;
  f.max_speedup = ra.wait_share < 1 ? 1.0 / (1.0 - ra.wait_share) : 1;
  const std::string head = "the other ranks wait " + ms(ra.wait_per_step_ns) + " per step (" +
                           std::to_string(int(ra.wait_share * 100 + 0.5)) + "% of a step) for " + s.label + ", late in " +
                           std::to_string(s.straggler_steps) + " of " + std::to_string(common.size()) + " steps";
  if (ra.cause == "loader") {
    f.message = head + ": its loader waits " + ms(extra_data) + " per step longer than theirs; more loader workers on it";
    f.knob = "workers";  // no value: the rank's current count is not in its trace
    f.also = {"prefetch", "pin_memory"};
  } else {
    f.message = head + ": it computes longer (work " + ms(s.work_median_ns) +
                " per step); a slower device, other load on its machine, or a heavier shard";
  }
  ra.findings.push_back(f);
  return ra;
}

std::string to_json(const RankAnalysis& ra) {
  JsonWriter w;
  w.begin_object();
  w.key("matched_steps").value(uint64_t(ra.matched_steps));
  w.key("straggler");
  if (ra.straggler >= 0) w.value(ra.ranks[size_t(ra.straggler)].label);
  else w.null();
  w.key("wait_per_step_us").value(double(ra.wait_per_step_ns) / 1e3);
  w.key("wait_share").value(ra.wait_share);
  w.key("cause").value(ra.cause);
  w.key("ranks").begin_array();
  for (const RankStats& r : ra.ranks) {
    w.begin_object();
    w.key("label").value(r.label);
    w.key("pid").value(r.pid);
    w.key("steps").value(uint64_t(r.steps));
    w.key("step_median_us").value(double(r.step_median_ns) / 1e3);
    w.key("work_median_us").value(double(r.work_median_ns) / 1e3);
    w.key("comm_wait_median_us").value(double(r.comm_wait_median_ns) / 1e3);
    w.key("data_wait_median_us").value(double(r.data_wait_median_ns) / 1e3);
    w.key("straggler_steps").value(uint64_t(r.straggler_steps));
    w.end_object();
  }
  w.end_array();
  write_findings_and_notes(w, ra.findings, ra.notes);
  w.end_object();
  return w.take();
}

std::unique_ptr<Trace> merge_rank_traces(std::vector<std::unique_ptr<Trace>> traces) {
  if (traces.empty()) return nullptr;
  for (size_t i = 1; i < traces.size(); ++i) {
    if (traces[0]->shares_pids_with(*traces[i])) traces[i]->move_pids(int64_t(i) * kPidSpace);
    traces[0]->merge(*traces[i]);
  }
  traces[0]->finalize();
  return std::move(traces[0]);
}

}  // namespace tb::prof
