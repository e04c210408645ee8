// Distributed data parallel (DDP) over PyTorch's c10d: which rank this process is, as torchrun says it.
// Torch-free: the CLI's launcher (`run --ranks N`) and the session both read it; the process group and the
// gradient Reducer live in engine/src/dist/.
//
// The environment contract is torchrun's (torch.distributed.run / env:// rendezvous): RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT, and TORCHELASTIC_USE_AGENT_STORE / TORCHELASTIC_RESTART_COUNT when
// the elastic agent hosts the store. `run --ranks N` sets exactly these for its children, so one code path
// serves both launchers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "base/result.h"

namespace tb::engine {

struct DistOptions {
  int rank = 0;
  int world_size = 1;  // 1: a single process, no process group
  int local_rank = 0;
  int local_world_size = 1;  // ranks on this machine (LOCAL_WORLD_SIZE): they share its cores
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // torchrun's agent hosts the TCPStore (TORCHELASTIC_USE_AGENT_STORE=True): every rank connects as a client
  // under the prefix /worker/attempt_<restart count>. Otherwise rank 0 hosts it, as env:// does.
  bool agent_store = false;
  int restart_count = 0;
  // Every collective and every store wait gives up after this: a dead rank ends the others, never a hang.
  int timeout_s = 60;
  // TUNEBENCH_DIST_BACKEND: auto (NCCL for a GPU run when there is a GPU per rank and the build has it, else
  // Gloo), gloo or nccl. choose_dist_backend() turns it into the backend a rank uses.
  std::string backend = "auto";
  bool enabled() const { return world_size > 1; }
};

// The collective backend of one rank, or why the group cannot run. `note`: what a user should know about an
// automatic choice (Gloo on a GPU moves every gradient through host memory), for the run's warnings.
struct DistBackend {
  std::string name;  // "gloo" | "nccl"
  std::string error;
  std::string note;
};
// As PyTorch's init_process_group("cpu:gloo,cuda:nccl") would have it: CPU tensors always go through Gloo; a
// GPU run's gradients through NCCL when `nccl_built` (this build has c10d's ProcessGroupNCCL) and each of the
// `local_ranks` ranks on this machine has a GPU of its own (NCCL refuses two ranks on one GPU). `requested`
// "gloo" or "nccl" is obeyed, or refused with the reason.
DistBackend choose_dist_backend(const std::string& requested, bool on_cuda, bool nccl_built, int64_t gpus,
                                int local_ranks);
// This build's LibTorch has NCCL (CMake's TUNEBENCH_NCCL: a CUDA LibTorch >= 2.0 whose headers have
// ProcessGroupNCCL, and nccl.h).
bool nccl_built();

// Reads torchrun's variables. nullopt when WORLD_SIZE is unset (not launched as a rank); an error when they
// are present but inconsistent: RANK outside [0, WORLD_SIZE), a missing MASTER_PORT, a non-numeric value.
// TUNEBENCH_DIST_TIMEOUT (seconds) overrides the collective timeout; TUNEBENCH_DIST_BACKEND (auto, gloo,
// nccl) picks the backend.
Result<std::optional<DistOptions>> dist_from_env();

// The name a rank gives its process in traces: "rank 1", or "rank 1 on node2" when the group spans hosts.
// `distributed`: a session's describe()["distributed"].
std::string rank_process_name(const nlohmann::json& distributed);

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released). 0 when none.
int free_tcp_port();

}  // namespace tb::engine
