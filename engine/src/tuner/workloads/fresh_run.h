// A `tunebench-cli run` of a session's model and data in a fresh process, or in a fresh group of ranks
// (`run --ranks N`): the tuner's fresh-process windows (process knobs, the headline), and every window,
// loss probe and snapshot of a multi-rank tune (group_workload.cpp). Torch-free, private to the engine.
//
// Why a child and not this process: a process knob takes effect at start, and a data-parallel group is N
// processes that must all change together; a fresh group per window gives both by construction.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"
#include "measure/window.h"

namespace tb::engine {

// The program that can run `run`: $TUNEBENCH_CLI, else this program when it is tunebench-cli or the
// tunebench-engine it execs. "" when neither (a test binary embedding the engine cannot start processes).
std::string tunebench_cli_path();

struct FreshRun {
  int ranks = 1;           // > 1: run --ranks N (a group on this machine)
  int warmup = -1;         // warm-up steps; -1: the options' warmup_steps
  int measured_steps = 0;  // > 0: --measured-steps (a timed window after the warm-up); else --steps `steps`
  int steps = 0;
  std::string trace_path;  // --trace (a group writes one file with every rank as its own process)
  int dist_timeout_s = 0;  // --dist-timeout (0: the CLI's default)
  double timeout_s = 120;  // the child's deadline: killed after it (a group's ranks die with their launcher)
};

// Runs `cli run` with `options`' model, data, device, seed and input, the knobs of `config`, and `spec`.
// Returns the run's --json document (rank 0's merged one for a group) and sets `seconds` to the child's wall
// time. Throws TrialFailure with the child's last error line (oom set when it ran out of memory).
nlohmann::json run_fresh(const std::string& cli, const SessionOptions& options, const Config& config,
                         const FreshRun& spec, double* seconds = nullptr);

// The timed window of a run document. A group's window holds every rank's samples over the longest rank's
// wall time: the ranks step together, so that is the group's throughput (the sum of the ranks' rates).
// Throws TrialFailure when the document has no window (the run failed before its measured steps).
measure::Window window_of_run(const nlohmann::json& doc);

// A loss probe's configuration (Workload::loss_probe): the baseline's loader settings (a seeded order) with
// the numerics-changing knobs of `config`, the loss read every step.
Config loss_probe_config(const Config& baseline, const Config& config);

// "k=v,k=v" for --set.
std::string config_arg(const Config& c);

// The report's environment from a session's or a run's description: one readable "device" line (the
// details under device_info), and the per-run counters dropped.
nlohmann::json report_environment(nlohmann::json describe);

bool mentions_oom(const std::string& s);

// What a data-parallel tune is about, screened first (Workload::first_knobs): the communication knobs, the
// bucket size before the rest.
inline std::vector<std::string> ddp_knobs_first() {
  return {"bucket_cap_mb", "comm_hook", "static_graph", "gradient_as_bucket_view", "broadcast_buffers"};
}

}  // namespace tb::engine
