// Data-parallel `run` (issue 12): `run --ranks N` starts N ranks of itself the way torchrun does, and every
// rank's results come together on rank 0. Declared here, defined in run_ranks.cpp; app/cli only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::cli {

// Parent of N local ranks: starts `argv` again N times (without --ranks) with torchrun's variables (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT on a free port, TUNEBENCH_DIST_TIMEOUT), waits
// for all of them, and when one fails gives the others `timeout_s` + 15 s before it stops them (SIGTERM,
// then SIGKILL): never a hang. Says which rank ended how, and records it under "exits" in rank 0's --json
// file when there is one. Returns 0 when every rank did, else the first failing rank's code (1 for a signal).
// The port is chosen free but released before rank 0 listens on it: when another process takes it in between,
// rank 0 exits with kExitPortInUse and the group is started again on another port (3 tries, each said).
// TUNEBENCH_RANKS_FIRST_PORT forces the first try's port (tests).
int launch_ranks(int argc, char** argv, int ranks, int timeout_s, const std::string& json_path);

// Rank 0's exit code when its rendezvous port is in use (EX_TEMPFAIL): the launcher retries on another.
inline constexpr int kExitPortInUse = 75;

// Rank 0: one run document from every rank's (rank order; "" = that rank never reported). The result is
// rank 0's document plus world_size, the global throughput (sum over the ranks that reported), ranks[]
// (each rank's throughput, window, steps, parameter digest, error) and missing_ranks.
nlohmann::json merge_rank_results(const std::vector<std::string>& per_rank);

}  // namespace tb::cli
