// Across the ranks of a data-parallel job (docs/analysis.md, "Ranks"): each rank's step time, and the straggler, the rank the
// others wait for at the collectives, with how long they wait and what made it late.
//
// Input: one AnalysisResult per rank (one process of a merged trace, AnalysisOptions::pid, or one file per
// rank). Steps are matched by step number; only numbers every rank has count.
//
// Definitions (docs/analysis.md, "Ranks"):
// - A rank's communication wait in a step is its exposed communication (StepBreakdown::comm_exposed_ns): on
//   a GPU, collective kernels not overlapped by compute; on the CPU (Gloo), the training thread waiting for
//   its all-reduces. In a synchronous collective the ranks that arrive early wait for the last one, so
//   the last one waits least: the straggler of a step is the rank with the least wait, and the time the
//   others lost to it is the mean over them of (their wait - its wait).
// - Work = step time - communication wait.
// - The job's straggler is the rank that is the step's straggler in at least 2/3 of the matched steps (at
//   least 3 of them); the wait per step is the median over those steps of the others' lost time. Balanced
//   ranks, where the straggler changes from step to step, have none.
// - Cause: "loader" when the straggler's data wait exceeds the other ranks' (medians) by at least half the
//   wait it causes (a finding: more loader workers on that rank, `workers`); else "compute" (a slower
//   device or a heavier shard: no knob fixes it; the finding says where to look).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/analysis.h"
#include "profiler/trace.h"

namespace tb::prof {

struct RankStats {
  std::string label;             // "rank 0", "pid 4242", a file name
  int64_t pid = -1;
  size_t steps = 0;              // its steps (matched or not)
  int64_t step_median_ns = 0;    // over the matched steps
  int64_t work_median_ns = 0;
  int64_t comm_wait_median_ns = 0;
  int64_t data_wait_median_ns = 0;
  size_t straggler_steps = 0;    // matched steps in which the others waited for this rank
};

struct RankAnalysis {
  std::vector<RankStats> ranks;
  size_t matched_steps = 0;
  int straggler = -1;               // index into ranks; -1: none (balanced, or too few steps)
  int64_t wait_per_step_ns = 0;     // the others' lost time per step to the straggler (median)
  double wait_share = 0;            // of the median step of the job
  std::string cause;                // "loader" / "compute" / ""
  std::vector<Finding> findings;    // a Straggler finding when there is one
  std::vector<std::string> notes;
};

// `labels` names each rank (same order); empty: "pid N".
RankAnalysis analyze_ranks(const std::vector<AnalysisResult>& per_rank, const std::vector<std::string>& labels = {},
                           const AnalysisOptions& options = {});

// The processes of one trace that hold steps (the ranks of a merged trace; Kineto's pseudo processes with
// negative pids left out), in the order of sort_processes.
std::vector<int64_t> processes_with_steps(const Trace& trace);

// A process's label: its name with the pid it had on its host ("rank 1 on node2 (pid 4242)"), or
// "process 4242".
std::string process_label(const TraceMetadata& meta, int64_t pid);
// Processes that named themselves "rank R ..." first, by R (ranks on several hosts have pids in no order),
// then the others by pid.
void sort_processes(const TraceMetadata& meta, std::vector<int64_t>& pids);

// The ranks' traces as one, in rank order (the first one's clock): each rank keeps its own process, so the
// analysis can scope to one rank and name the others; pids two ranks share (ranks on different hosts, each
// one's GPU 0) are moved apart by kPidSpace per rank. Null when there are none.
std::unique_ptr<Trace> merge_rank_traces(std::vector<std::unique_ptr<Trace>> traces);

// JSON object: {"matched_steps", "straggler": label|null, "wait_per_step_us", "wait_share", "cause",
// "ranks": [{label, pid, steps, step_median_us, work_median_us, comm_wait_median_us, data_wait_median_us,
// straggler_steps}], "findings": [as in the analysis's findings], "notes": [...]}.
std::string to_json(const RankAnalysis& ranks);

}  // namespace tb::prof
