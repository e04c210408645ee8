// Trace diff: what changed between two runs of the same job (before/after a knob, two commits, two
// machines). Compares the analyses of A and B per step (totals when either has no steps): step time, each
// class of GPU time, the kernels and CPU ops added, removed and changed most, and the findings that
// appeared or disappeared. Pure function of its inputs, like analyze().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/analysis.h"
#include "profiler/trace.h"

namespace tb::prof {

struct ClassDelta {
  std::string name;   // "step", "gpu_busy", "compute", "comm_exposed", "loader_stall", "launch_gap", ...
  double a_ns = 0;    // per step (or total, see TraceDiff::per_step)
  double b_ns = 0;
  double delta_ns() const { return b_ns - a_ns; }
};

struct NameDelta {
  std::string name;
  bool kernel = true;  // false: a CPU op / range
  double a_count = 0, b_count = 0;  // per step (or total)
  double a_ns = 0, b_ns = 0;        // total time per step (or total): count x mean
  double delta_ns() const { return b_ns - a_ns; }
};

struct TraceDiff {
  bool per_step = false;        // both traces have steps: figures are per step, else whole-window totals
  size_t a_steps = 0, b_steps = 0;
  double a_step_ns = 0, b_step_ns = 0;  // median step (or window) time
  double speedup = 0;                   // a_step / b_step (> 1: B is faster); 0 when unknown
  std::vector<ClassDelta> classes;      // fixed order, every class
  std::vector<NameDelta> added;         // in B only, by B time
  std::vector<NameDelta> removed;       // in A only, by A time
  std::vector<NameDelta> changed;       // in both, by |delta| (largest first)
  std::vector<std::string> findings_appeared;     // finding ids in B not in A
  std::vector<std::string> findings_disappeared;  // in A not in B
  std::vector<std::string> notes;
};

struct DiffOptions {
  size_t top = 15;  // rows kept per list
};

TraceDiff diff_traces(const Trace& a, const AnalysisResult& ra, const Trace& b, const AnalysisResult& rb,
                      const DiffOptions& options = {});

std::string to_json(const TraceDiff& d);

}  // namespace tb::prof
