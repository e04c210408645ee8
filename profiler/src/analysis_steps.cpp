#include "analysis_steps.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "analysis_names.h"

namespace tb::prof::detail {
namespace {

std::string ms(int64_t ns) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

}  // namespace

Scope pick_scope(const Trace& trace, int64_t wanted_device, int64_t wanted_pid, std::vector<std::string>& notes) {
  Scope sc;
  const auto& tracks = trace.tracks();
  std::map<int64_t, size_t> activity_per_device;
  std::vector<size_t> steps_of(tracks.size(), 0);
  for (uint32_t ti = 0; ti < tracks.size(); ++ti) {
    const Track& t = tracks[ti];
    if (t.kind() == TrackKind::GpuStream) {
      size_t n = 0;
      for (const Event& e : t.events()) n += is_gpu_activity(e.kind);
      if (n) activity_per_device[t.pid()] += n;
    } else if (t.kind() == TrackKind::CpuThread && !is_step_lane(t)) {
      // Kineto writes pseudo-processes with negative pids (span and metadata rows): not a process of the job.
      if (!t.empty() && t.pid() >= 0 && std::find(sc.pids.begin(), sc.pids.end(), t.pid()) == sc.pids.end())
        sc.pids.push_back(t.pid());
      for (const Event& e : t.events())
        if (e.kind == EventKind::Range && name_class::is_step(trace.name(e.name))) ++steps_of[ti];
    }
  }
  std::sort(sc.pids.begin(), sc.pids.end());
  for (const auto& [d, n] : activity_per_device) sc.devices.push_back(d);
  // The step track: the most steps, within the process that launches to the wanted device if one is given.
  int64_t want_pid = -1;
  if (wanted_pid >= 0) {  // one rank of a merged trace, asked for by pid
    if (std::find(sc.pids.begin(), sc.pids.end(), wanted_pid) != sc.pids.end()) want_pid = wanted_pid;
    else notes.push_back("pid " + std::to_string(wanted_pid) + " is not in this trace (pids " + join(sc.pids) + ")");
  } else if (wanted_device >= 0) {
    std::map<int64_t, size_t> launches;
    for (const Flow& f : trace.flows())
      if (tracks[f.dst_track].pid() == wanted_device) ++launches[tracks[f.src_track].pid()];
    size_t best = 0;
    for (const auto& [p, n] : launches)
      if (n > best) best = n, want_pid = p;
  }
  size_t best_steps = 0;
  for (uint32_t ti = 0; ti < tracks.size(); ++ti)
    if (steps_of[ti] > best_steps && (want_pid < 0 || tracks[ti].pid() == want_pid))
      best_steps = steps_of[ti], sc.step_track = static_cast<int32_t>(ti);
  if (want_pid >= 0) {
    sc.pid = want_pid;
  } else if (sc.step_track >= 0) {
    sc.pid = tracks[sc.step_track].pid();
  } else if (sc.pids.size() == 1) {
    sc.pid = sc.pids.front();
  } else if (!sc.pids.empty()) {
    // No steps: the process with the most kernel launches.
    std::map<int64_t, size_t> launches;
    for (const Track& t : tracks)
      if (t.kind() == TrackKind::CpuThread)
        for (const Event& e : t.events())
          if ((e.kind == EventKind::Runtime || e.kind == EventKind::Driver) && e.correlation) ++launches[t.pid()];
    size_t best = 0;
    sc.pid = sc.pids.front();
    for (const auto& [p, n] : launches)
      if (n > best) best = n, sc.pid = p;
  }

  if (wanted_device >= 0) {
    sc.device = wanted_device;
    if (!activity_per_device.count(wanted_device))
      notes.push_back("device " + std::to_string(wanted_device) + " has no GPU activity in this trace (devices: " +
                      (sc.devices.empty() ? std::string("none") : join(sc.devices)) + ")");
  } else if (sc.devices.size() == 1) {
    sc.device = sc.devices.front();
  } else if (!sc.devices.empty()) {
    // The device the analysed process launches most work to; without launches, the busiest device.
    std::map<int64_t, size_t> launched;
    for (const Flow& f : trace.flows())
      if (sc.pid < 0 || tracks[f.src_track].pid() == sc.pid) ++launched[tracks[f.dst_track].pid()];
    size_t best = 0;
    for (const auto& [d, n] : launched)
      if (n > best) best = n, sc.device = d;
    if (sc.device < 0)
      for (const auto& [d, n] : activity_per_device)
        if (n > best) best = n, sc.device = d;
  }
  if (sc.devices.size() > 1)
    notes.push_back("this trace holds " + std::to_string(sc.devices.size()) + " GPUs (devices " + join(sc.devices) +
                    "): analysed device " + std::to_string(sc.device) + " only; --device N picks another");
  if (sc.pids.size() > 1)
    notes.push_back("this trace holds " + std::to_string(sc.pids.size()) + " processes (pids " + join(sc.pids) +
                    "): analysed pid " + std::to_string(sc.pid) +
                    (wanted_pid >= 0 && want_pid >= 0 ? ", as asked"
                     : want_pid >= 0                   ? ", the one launching to that device"
                                                       : ", the one holding the steps"));
  return sc;
}

std::vector<StepBreakdown> reconstruct_steps(const Trace& trace, uint32_t track, int64_t tolerance_ns,
                                             std::vector<std::string>& notes) {
  std::vector<StepBreakdown> steps;
  int64_t last_end = INT64_MIN;
  int64_t ordinal = 0;
  size_t nested = 0, clamped = 0, unclosed = 0;
  int64_t worst_overlap = 0;
  // Events are sorted by start, then end descending: an outer step comes before the steps it contains.
  for (const Event& e : trace.track(track).events()) {
    if (e.kind != EventKind::Range) continue;
    const std::string_view n = trace.name(e.name);
    if (!name_class::is_step(n)) continue;
    if (e.end_ns <= last_end) {
      ++nested;  // inside the previous step: fold it into that one
      continue;
    }
    StepBreakdown s;
    s.index = name_class::step_number(n, e.arg, ordinal++);
    s.start_ns = e.start_ns;
    s.end_ns = e.end_ns;
    if (e.start_ns < last_end) {
      // Overlaps the previous step without being inside it: rounding (1 ns) or a step that began before
      // the last one ended. The previous one keeps the overlap.
      ++clamped;
      worst_overlap = std::max(worst_overlap, last_end - e.start_ns);
      s.start_ns = last_end;
    }
    if (e.flags & kFlagUnclosed) ++unclosed;
    steps.push_back(s);
    last_end = e.end_ns;
  }
  if (clamped)
    notes.push_back(std::to_string(clamped) + " step(s) began before the previous one ended (by at most " +
                    ms(worst_overlap) + "): each starts where the previous ends" +
                    (worst_overlap > tolerance_ns ? " - more than rounding: check the step markers" : ""));
  if (nested)
    notes.push_back(std::to_string(nested) + " step range(s) nested inside another step were folded into it");
  if (unclosed) notes.push_back(std::to_string(unclosed) + " step(s) never ended: their end is where the recording stopped");
  // Other threads of the same process holding steps too.
  size_t others = 0;
  for (uint32_t ti = 0; ti < trace.tracks().size(); ++ti) {
    const Track& t = trace.track(ti);
    if (ti == track || t.kind() != TrackKind::CpuThread || t.pid() != trace.track(track).pid()) continue;
    for (const Event& e : t.events())
      if (e.kind == EventKind::Range && name_class::is_step(trace.name(e.name))) {
        ++others;
        break;
      }
  }
  if (others)
    notes.push_back(std::to_string(others) + " other thread(s) also mark steps: the steps of '" +
                    trace.track(track).name() + "' (the most) are used");
  return steps;
}

int32_t infer_steps(const Trace& trace, int64_t pid, std::vector<StepBreakdown>& steps, std::vector<std::string>& notes) {
  int32_t best = -1;
  std::vector<int64_t> best_ends;
  for (uint32_t ti = 0; ti < trace.tracks().size(); ++ti) {
    const Track& t = trace.track(ti);
    if (t.kind() != TrackKind::CpuThread || is_step_lane(t) || (pid >= 0 && t.pid() != pid)) continue;
    std::vector<int64_t> ends;
    int64_t last_end = INT64_MIN;
    for (const Event& e : t.events()) {
      if (e.kind != EventKind::Range || e.start_ns < last_end) continue;  // nested calls count once
      const std::string_view n = trace.name(e.name);
      if (n.substr(0, 15) != "Optimizer.step#") continue;
      ends.push_back(e.end_ns);
      last_end = e.end_ns;
    }
    if (ends.size() > best_ends.size()) best_ends = std::move(ends), best = static_cast<int32_t>(ti);
  }
  if (best_ends.size() < 3) return -1;
  for (size_t i = 1; i < best_ends.size(); ++i) {
    StepBreakdown s;
    s.index = static_cast<int64_t>(i);
    s.start_ns = best_ends[i - 1];
    s.end_ns = best_ends[i];
    steps.push_back(s);
  }
  notes.push_back("no step ranges (ProfilerStep#N or ours): " + std::to_string(steps.size()) +
                  " steps inferred from the optimizer's step calls, each from the end of one Optimizer.step to the "
                  "end of the next");
  return best;
}

}  // namespace tb::prof::detail
