// The parts of `run --script` (cmd_run_script.cpp) that work on what the run collected: its trace chunks made
// one trace, the steps its figures come from, and the lines it prints.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/loader_verdict.h"
#include "profiler/compile_lane.h"
#include "profiler/step_lane.h"
#include "measure/noise.h"
#include "engine/run_json.h"

namespace tb::cli {

// A folder removed with this object, however the run ends (the launcher's trace chunks).
struct RemoveDir {
  std::filesystem::path p;
  ~RemoveDir() {
    std::error_code ec;
    if (!p.empty()) std::filesystem::remove_all(p, ec);
  }
};

// The launcher's torch.profiler chunks, in order, as one trace at `path` (TuneBench's Chrome trace JSON,
// what `run --trace` writes for the engine), carrying the loader's verdict when it has one (the "loader"
// document, prof::TraceMetadata): `analyze` and the GUI show what the run printed. On a GPU the launcher's
// hooks see no copy to the device: the verdict gets its transfer from the trace's (the steps' HtoD copies, the
// figure the loader-stall finding states). With the run's steps (and the time outside them) the trace carries
// the step lane (profiler/step_lane.h): every step, the untraced ones too. "" or the error.
std::string merge_chunks(const std::vector<std::string>& chunks, const std::string& path,
                         client::LoaderVerdict& loader, const std::vector<prof::LaneStep>& steps = {},
                         const std::vector<prof::LaneOutside>& outside = {},
                         const std::vector<prof::LaneCompile>& compiles = {},
                         std::unique_ptr<prof::Trace>* merged_out = nullptr);

// The step lane's steps from the run's step records, what the launcher's steps added to each (`extras`:
// forward_ns, backward_ns, optim_ns) and the steps each trace chunk covers (`traced`: a step inside one ran
// traced).
std::vector<prof::LaneStep> lane_steps(const std::vector<engine::StepRecord>& records,
                                       const std::vector<nlohmann::json>& extras,
                                       const std::vector<std::pair<int64_t, int64_t>>& traced);
// The step lane's outside intervals from the launcher's `outside` messages (a JSON array).
std::vector<prof::LaneOutside> lane_outside(const nlohmann::json& outside);

// The measured (not warm-up) steps among `records`.
int64_t measured_steps_of(const std::vector<engine::StepRecord>& records);

// The measured steps of `figures` as one window: steps, samples, wall_s, samples_per_s (no device sync from
// outside the script: the launcher's step times).
nlohmann::json window_json(const std::vector<engine::StepRecord>& figures);

// The steps a run's figures are of, and what was left out of them: the steps that compiled (torch.compile's
// time inside them is paid once, not every step: `compiling`, one flag per record) and, in a traced run, the
// traced steps (recording slows them; tracing_cost says how much), each only while at least 10 measured steps
// remain.
struct Figures {
  std::vector<engine::StepRecord> steps;
  size_t traced_out = 0, compiling_out = 0;
};
Figures steady_figures(const std::vector<engine::StepRecord>& records, const std::vector<bool>& compiling,
                       const std::vector<std::pair<int64_t, int64_t>>& traced);

// Why a run measured nothing, in one line (never "0.0 samples/s"): the launcher's word, the failure, a warm-up
// that never settled, or no step at all.
std::string nothing_measured_text(const nlohmann::json& done, const std::string& failure, size_t steps,
                                  int warmup_steps);

// What the figures' rate counts when a step(closure) call evaluated its closure (LBFGS), else "".
std::string rate_text(const std::vector<engine::StepRecord>& figures);

// The run's one line on stdout: its throughput over the steps `figures` (steps/s when no batch was told).
void print_script_throughput(const std::string& script, const nlohmann::json& throughput, const std::string& unit,
                             size_t all_steps, const Figures& figures, const std::string& not_measured);

// Why the loader is slow (client/loader_verdict.h): a traced run's loader parts (`out["done"]["loader_parts"]`)
// against its measured steps `figures`, on the cores of this machine that other work left free over the run: its
// busy share (`load`) less the run's own CPU (`own_cores`: measure::TreeCpuProbe; NaN: not read). The caller
// writes it as `out["loader"]` once the trace, which may add its transfer, is written.
client::LoaderVerdict script_loader_verdict(const nlohmann::json& out, const std::vector<engine::StepRecord>& figures,
                                            const measure::SystemLoad& load, double own_cores, int64_t run_wall_ns);

// The script's arguments as one line (the run JSON's "data").
std::string joined_args(const std::vector<std::string>& args);

}  // namespace tb::cli
