// torchrun's environment contract (engine/distributed.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "engine/distributed.h"

#include <nlohmann/json.hpp>

#ifndef TUNEBENCH_NCCL
#define TUNEBENCH_NCCL 0
#endif

namespace tb::engine {
namespace {

bool read_int(const char* name, int& out, std::string& error, bool required) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (required) error = std::string(name) + " is not set (torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)";
    return !required;
  }
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 20) {
    error = std::string(name) + "='" + v + "' is not a non-negative integer";
    return false;
  }
  out = int(n);
  return true;
}



// dist_from_env's reading, with the error in `error` (read_int's shape).
std::optional<DistOptions> read_torchrun_env(std::string& error) {
  const char* ws = std::getenv("WORLD_SIZE");
  if (!ws || !*ws) return std::nullopt;
  DistOptions d;
  if (!read_int("WORLD_SIZE", d.world_size, error, true)) return std::nullopt;
  if (d.world_size < 1) {
    error = "WORLD_SIZE=0: at least one rank is needed";
    return std::nullopt;
  }
  if (const char* b = std::getenv("TUNEBENCH_DIST_BACKEND"); b && *b) {
    d.backend = b;
    if (d.backend != "auto" && d.backend != "gloo" && d.backend != "nccl") {
      error = "TUNEBENCH_DIST_BACKEND='" + d.backend + "' is not auto, gloo or nccl";
      return std::nullopt;
    }
  }
  if (d.world_size == 1) return d;  // torchrun --nproc-per-node 1: a single process
  if (!read_int("RANK", d.rank, error, true)) return std::nullopt;
  if (d.rank >= d.world_size) {
    error = "RANK=" + std::to_string(d.rank) + " is outside WORLD_SIZE=" + std::to_string(d.world_size);
    return std::nullopt;
  }
  d.local_rank = d.rank;
  if (!read_int("LOCAL_RANK", d.local_rank, error, false)) return std::nullopt;
  d.local_world_size = d.world_size;
  if (!read_int("LOCAL_WORLD_SIZE", d.local_world_size, error, false)) return std::nullopt;
  if (d.local_world_size < 1) d.local_world_size = 1;
  if (!read_int("MASTER_PORT", d.master_port, error, true)) return std::nullopt;
  if (d.master_port <= 0 || d.master_port > 65535) {
    error = "MASTER_PORT=" + std::to_string(d.master_port) + " is not a TCP port";
    return std::nullopt;
  }
  if (const char* a = std::getenv("MASTER_ADDR"); a && *a) d.master_addr = a;
  if (const char* s = std::getenv("TORCHELASTIC_USE_AGENT_STORE"); s && std::string(s) == "True") {
    d.agent_store = true;
    if (!read_int("TORCHELASTIC_RESTART_COUNT", d.restart_count, error, false)) return std::nullopt;
  }
  if (!read_int("TUNEBENCH_DIST_TIMEOUT", d.timeout_s, error, false)) return std::nullopt;
  if (d.timeout_s < 1) d.timeout_s = 1;
  return d;
}

}  // namespace

Result<std::optional<DistOptions>> dist_from_env() {
  std::string error;
  std::optional<DistOptions> d = read_torchrun_env(error);
  if (!error.empty()) return Error{error};
  return d;
}

bool nccl_built() { return TUNEBENCH_NCCL; }

DistBackend choose_dist_backend(const std::string& requested, bool on_cuda, bool nccl_built, int64_t gpus,
                                int local_ranks) {
  DistBackend b{"gloo", "", ""};
  const std::string share = std::to_string(local_ranks) + " ranks on this machine and " + std::to_string(gpus) +
                            (gpus == 1 ? " GPU" : " GPUs");
  if (!on_cuda) {
    if (requested == "nccl") b.error = "TUNEBENCH_DIST_BACKEND=nccl needs --device cuda: NCCL reduces CUDA tensors only";
    return b;
  }
  const std::string via_host = "Gloo all-reduces the CUDA gradients through host memory";
  if (requested == "gloo") {
    b.note = "TUNEBENCH_DIST_BACKEND=gloo: " + via_host;
    return b;
  }
  if (!nccl_built) {
    if (requested == "nccl")
      b.error = "TUNEBENCH_DIST_BACKEND=nccl, but this build has no NCCL (its LibTorch is CPU-only, older than 2.0, or "
                "nccl.h was not found when it was configured: docs/distributed.md)";
    else
      b.note = "this build has no NCCL: " + via_host;
    return b;
  }
  if (gpus < local_ranks) {
    if (requested == "nccl")
      b.error = "TUNEBENCH_DIST_BACKEND=nccl, but " + share + ": NCCL needs a GPU per rank (Gloo lets ranks share one)";
    else
      b.note = share + ": NCCL needs a GPU per rank, so " + via_host;
    return b;
  }
  b.name = "nccl";
  return b;
}

int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  int port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

std::string rank_process_name(const nlohmann::json& distributed) {
  std::string name = "rank " + std::to_string(distributed.value("rank", 0));
  if (distributed.value("hosts", 1) > 1) name += " on " + distributed.value("host", std::string("?"));
  return name;
}

}  // namespace tb::engine
