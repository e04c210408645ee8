// A stored baseline (docs/ci.md): for a CI where the baseline cannot be re-run beside the candidate (its
// revision is gone, or its processes cost too much to run on every change), `gate --save-baseline B.json` runs the
// baseline's processes once and stores their throughputs and the environment they ran in; `gate --against
// B.json` runs only the candidate and compares (measure/gate.h look_unpaired: Welch, not alternated), warning
// when the environment differs (torch, Python, the CUDA torch was built with, the NVIDIA driver, the device,
// the cores, the load).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "gate/runner.h"

namespace tb::gate {

struct StoredBaseline {
  std::string describe;              // what was stored: "3f2a9c1 Add dropout (v1.2)"
  std::vector<std::string> args;
  int64_t steps = 0;
  std::string unit;
  std::vector<measure::Window> windows;  // one per process
  nlohmann::json environment;       // environment_of()
  std::string stored_at;            // UTC, ISO 8601
};

// The environment a result ran in: torch, Python and CUDA versions, the NVIDIA driver (the hello's, else this
// machine's), the device (kind, name, cores), the load.
nlohmann::json environment_of(const GateResult& r);
// What differs between two environments, a line each ("torch 2.10.0 then, 2.11.0 now"); empty when alike.
std::vector<std::string> environment_differences(const nlohmann::json& stored, const nlohmann::json& now);

// The baseline side's counted processes of `r` (run with GateOptions::candidate unused) as a stored baseline.
nlohmann::json stored_baseline_json(const GateOptions& o, const GateResult& r);
Result<StoredBaseline> load_stored_baseline(const std::string& path);

// Runs `warmup_pairs` + as many candidate processes as the rule needs (looks at 3, 4, 6, ... processes), each
// compared with the stored ones; `o.baseline` is not run.
GateResult run_against(const GateOptions& o, const StoredBaseline& stored);
// Runs `runs` processes of `o.baseline` (after the warm-up) to be stored.
GateResult run_baseline_only(const GateOptions& o, int runs);

}  // namespace tb::gate
