// What the ranks of a data-parallel `run` or `serve` agree on, whoever started them (`--ranks N`, torchrun,
// the GUI's ranks knob): how many ranks a command asks for, this process as one of them, and rank 0's one
// run document from every rank's. The launcher that starts local ranks is app/engine/run_ranks.h's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/distributed.h"
#include "engine/session.h"
#include "profiler/trace.h"

namespace tb::engine {

// How many ranks `run`/`serve` asks for and whether this process already is one: `ranks` from --ranks (0 when
// not given) reconciled with --set ranks=N (the tuner's and the GUI's way to say it) and torchrun's
// environment (`env`, set when WORLD_SIZE is). Or a one-line usage error.
struct GroupAsk {
  int64_t ranks = 0;
  std::optional<DistOptions> env;
};
Result<GroupAsk> resolve_group(const SessionOptions& opts, int64_t ranks);
// This process as the rank `env` says, with the collective timeout (0: the environment's) and the same
// warm-up on every rank (an until-stable rule could end it at different steps).
void join_group(SessionOptions& opts, const DistOptions& env, int64_t dist_timeout_s);

// Rank 0: one run document from every rank's (rank order; "" = that rank never reported). The result is
// rank 0's document plus world_size, the global throughput (sum over the ranks that reported), ranks[]
// (each rank's throughput, window, steps, parameter digest, error) and missing_ranks.
nlohmann::json merge_rank_results(const std::vector<std::string>& per_rank);

// Every rank posts its run document `mine` (with its trace when `with_trace`) through the rendezvous store,
// which outlives a failed collective; rank 0 gets them all, merged (merge_rank_results), and the traces it
// could parse, in rank order. A rank that never posts is named, not waited for beyond the timeout. On other
// ranks the document is `mine` and there are no traces.
struct GatheredRun {
  nlohmann::json doc;
  std::vector<std::unique_ptr<prof::Trace>> traces;
  size_t ranks = 0;  // documents gathered (the world size)
};
GatheredRun gather_run(Session& session, int rank, nlohmann::json mine, bool with_trace, const nlohmann::json& describe);

}  // namespace tb::engine
