// Why the engine's own loader is slow: `run --model M --data imagefolder:DIR --trace T` gives the verdict a
// script's traced run gives (client/loader_verdict.h), made from the engine loader's threads (Session::describe()'s
// `loader.parts`: each worker thread's samples, read, decode, augmentation and collate) against the measured steps.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "client/loader_verdict.h"
#include "engine/run_json.h"
#include "measure/noise.h"
#include "measure/tree_cpu.h"

namespace tb::cli {

// `describe`: the session's description at the run's end; `records`: its steps; `load`: the machine over the
// steps; `own`: the process's CPU since the steps began (its training threads' and its loader's). Not valid for
// a synthetic dataset (nothing is loaded).
client::LoaderVerdict engine_loader_verdict(const nlohmann::json& describe, const std::vector<engine::StepRecord>& records,
                                            const measure::SystemLoad& load, const measure::TreeCpuProbe& own);

}  // namespace tb::cli
