// What applies on this device and LibTorch build (knob applicability without a model, the session's device),
// and the environment a run or a report describes.
#include <unistd.h>

#include "compat.h"
#include "engine/cpu_allocator.h"
#include "engine/session.h"
#include "session_impl.h"

namespace tb::engine {
namespace {

constexpr const char* kTuneBenchVersion = "0.1.0";

std::string cuda_reason(bool session_on_cuda) {
#if TUNEBENCH_TORCH_CUDA
  if (!compat::cuda_available()) return "no CUDA device: " + compat::cuda_unavailable_reason();
  if (!session_on_cuda) return "the session runs on the CPU";
  return "";
#else
  (void)session_on_cuda;
  return "needs CUDA: this LibTorch build is CPU-only";
#endif
}

}  // namespace

namespace session_detail {

// Applicability that the device and build decide (no model/dataset).
Applicability base_applicability(const std::string& id, bool on_cuda) {
  Applicability a;
  auto no = [&](std::string why) {
    a.applicable = false;
    a.reason = std::move(why);
  };
  if (id == "pin_memory" || id == "non_blocking" || id == "cudnn_benchmark") {
    if (auto r = cuda_reason(on_cuda); !r.empty()) no(r);
    else if (id == "cudnn_benchmark" && !compat::cudnn_available()) no("cuDNN is not available");
  } else if (id == "tf32") {
    if (auto r = cuda_reason(on_cuda); !r.empty()) no(r);
    else if (compat::cuda_capability_major() < 8)
      no("TF32 needs an Ampere or newer GPU (sm >= 80); this one is sm " + std::to_string(compat::cuda_capability_major()) + "x");
  } else if (id == "cuda_graphs") {
    if (auto r = cuda_reason(on_cuda); !r.empty()) no(r);
  } else if (id == "amp") {
    // The knob applies (bf16 autocast works everywhere); the fp16 value may not: say so.
    if (!compat::amp_fp16_supported(on_cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU))) {
      a.reason = "fp16 is not available here: its loss-scaling kernels are CUDA-only in LibTorch " +
                 compat::libtorch_version() + " (bf16 autocast applies on the CPU)";
      a.unavailable_values = {"fp16"};
    }
  } else if (id == "cpu_allocator") {
    for (const auto& v : cpu_allocator_values()) {
      const std::string why = cpu_allocator_unavailable(v);
      if (why.empty()) continue;
      a.unavailable_values.push_back(v);
      a.reason += (a.reason.empty() ? "" : "; ") + why;
    }
  } else if (id == "ranks") {
    // The tuner tries ranks where each rank gets a device of its own: its cores on a CPU, a GPU with NCCL.
    if (on_cuda && !nccl_built()) no("data parallel on a GPU needs NCCL, which this build does not have");
    else if (on_cuda && compat::cuda_device_count() < 2) no("one GPU: NCCL needs a GPU per rank");
    else if (!on_cuda && compat::cpu_cores() < 2) no("one CPU core: the ranks would share it");
  } else if (is_ddp_knob(id)) {
    // The session says yes when it is one rank of several (SessionImpl::applicability).
    no("acts only with several ranks: run --ranks N, or start the run under torchrun");
  } else if (id == "fused_optimizer") {
    if (!compat::has_foreach_ops(on_cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU)))
      no("this LibTorch has no multi-tensor (_foreach) kernels for the device");
  }
  return a;
}

torch::Device resolve_device(const std::string& d) {
  if (d == "auto") return compat::cuda_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  if (d == "cpu") return torch::kCPU;
  if (d == "cuda") {
    if (!compat::cuda_available()) throw EngineError("device 'cuda' requested but " + cuda_reason(false));
    return torch::kCUDA;
  }
  throw EngineError("unknown device '" + d + "' (auto, cpu, cuda)");
}

}  // namespace session_detail

std::vector<KnobState> knob_states_here(const std::string& device) {
  bool on_cuda = false;
  if (device == "auto") on_cuda = compat::cuda_available();
  else if (device == "cuda") on_cuda = compat::cuda_available();
  std::vector<KnobState> out;
  for (const auto& k : knob_catalog()) {
    KnobState s;
    s.info = k;
    s.value = k.default_value;
    s.applicability = session_detail::base_applicability(k.id, on_cuda);
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::json environment_info() {
  nlohmann::json j;
  j["versions"] = {{"tunebench", kTuneBenchVersion},
                   {"libtorch", compat::libtorch_version()},
                   {"cuda", compat::cuda_version()},
                   {"cudnn", compat::cudnn_version()}};
  if (compat::cuda_available()) {
    j["device"] = {{"kind", "cuda"},
                   {"name", compat::cuda_device_name()},
                   {"sm", compat::cuda_capability_major()},
                   {"memory_bytes", compat::cuda_memory_bytes()}};
  } else {
    j["device"] = {{"kind", "cpu"}, {"name", compat::cpu_name()}, {"cores", compat::cpu_cores()},
                   {"memory_bytes", static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE)},
                   {"no_cuda", compat::cuda_unavailable_reason()}};
  }
  return j;
}

}  // namespace tb::engine
