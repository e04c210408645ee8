// Data-parallel `run` and `serve`: `run --ranks N` starts N ranks of itself the way torchrun does, and every
// rank's results come together on rank 0. Declared here, defined in run_ranks.cpp; app/engine only.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/distributed.h"
#include "engine/rank_group.h"
#include "engine/session.h"
#include "profiler/trace.h"

namespace tb::cli {

// What a group agrees on (resolve_group, join_group, merge_rank_results) is the engine's: engine/rank_group.h.
using engine::join_group;
using engine::merge_rank_results;
using engine::resolve_group;

// Parent of N local ranks: starts `argv` again N times (without --ranks) with torchrun's variables (RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT on a free port, TUNEBENCH_DIST_TIMEOUT), waits
// for all of them, and when one fails gives the others `timeout_s` + 15 s before it stops them (SIGTERM,
// then SIGKILL): never a hang. Says which rank ended how, and records it under "exits" in rank 0's --json
// file when there is one. Returns 0 when every rank did, else the first failing rank's code (1 for a signal).
// The port is chosen free but released before rank 0 listens on it: when another process takes it in between,
// rank 0 exits with kExitPortInUse and the group is started again on another port (3 tries, each said).
// TUNEBENCH_RANKS_FIRST_PORT forces the first try's port (tests).
int launch_ranks(int argc, char** argv, int ranks, int timeout_s, const std::string& json_path);

// `serve --ranks N` and `tune --ranks N`: the same start, but the group is led (engine/live_group.h): rank 0 is the
// command and has this process's stdin/stdout; the other ranks get /dev/null for stdin, stderr for stdout,
// and follow rank 0's orders (as under torchrun: a rank of serve or tune follows unless it is rank 0). When a
// rank dies the launcher says so on stderr; when rank 0 dies without a word it says why for it (serve: an
// error and `done` on the protocol); the other ranks get 10 s after rank 0 ends. Returns rank 0's exit code.
int launch_led_group(int argc, char** argv, const char* verb, int ranks, int timeout_s);

// Rank 0's exit code when its rendezvous port is in use (EX_TEMPFAIL): the launcher retries on another.
inline constexpr int kExitPortInUse = 75;
// Whether a store error says the port was taken: the classic TCP store says "Address already in use", the
// libuv one (PyTorch 2.4+) "... code: -98, name: EADDRINUSE, message: address already in use".
inline bool port_in_use_error(const char* what) {
  return std::strstr(what, "Address already in use") || std::strstr(what, "EADDRINUSE");
}

}  // namespace tb::cli
