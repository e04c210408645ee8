// The "toy" simulated job (sim_model.h): a queue of three resources with knob-dependent costs, chosen so that
// the search has to discover interactions the way real tuning meets them (the loader only mattered once fp16
// made the GPU fast):
//   gpu     = (20 + 1.5*B) ms * amp factor (off 1, fp16 0.5, bf16 0.35) * 1.5 with anomaly_detection on
//             * 0.8 with tf32 on
//   launch  = 45 ms of host launch work per step, 3 ms with cuda_graphs on;  device = max(gpu, launch)
//   h2d     = 0.1 ms per sample pageable, 0.03 with pin_memory on (on the training thread)
//   load    = 1.2 ms per sample on one core; workers W>0 load in parallel on min(W, cores=4) cores
//   step    = load + h2d + device               (workers = 0: loading on the training thread)
//           = max(load / W', h2d + device) + 0.5 (workers > 0)
//   batch_size >= 128 runs out of memory; tf32 makes the loss 25% worse (to exercise the drift guard).
// From the naive baseline (workers 0, batch 32, amp off, anomaly on) cuda_graphs alone does nothing and more
// than one worker does nothing; both pay once amp made the GPU fast.
#include <algorithm>

#include "tuner/workloads/sim_model.h"

namespace tb::engine {
namespace {

KnobInfo info(std::string id, std::string title, KnobType type, std::string def, std::string rec,
              std::vector<std::string> choices, bool numerics, std::string py, std::string cpp) {
  KnobInfo k = sim_knob(std::move(id), std::move(title), type, std::move(def), std::move(rec), std::move(choices),
                        numerics, std::move(py));
  k.libtorch_snippet = std::move(cpp);
  k.applies_to = "cuda";
  if (k.type == KnobType::Int) {
    k.min = 0;
    k.max = 4096;
  }
  return k;
}

int to_int(const Config& c, const char* k) { return std::stoi(c.at(k)); }
bool on(const Config& c, const char* k) { return c.at(k) == "on"; }

class ToyModel : public SimModel {
 public:
  std::string name() const override { return "toy"; }
  std::string device() const override { return "simulated GPU (deterministic model, not a measurement)"; }
  const std::vector<KnobInfo>& catalog() const override {
    static const std::vector<KnobInfo> c = {
        info("workers", "Loader worker threads", KnobType::Int, "0", "4", {}, false,
             "DataLoader(ds, num_workers={value})", "options.workers = {value};"),
        info("pin_memory", "Pinned host buffers", KnobType::Bool, "off", "on", {"off", "on"}, false,
             "DataLoader(ds, pin_memory=True)", "options.pin_memory = true;"),
        info("prefetch", "Batches in flight", KnobType::Int, "2", "4", {}, false,
             "DataLoader(ds, prefetch_factor={value})", "options.prefetch = {value};"),
        info("amp", "Mixed precision", KnobType::Enum, "off", "bf16", {"off", "fp16", "bf16"}, true,
             "with torch.autocast('cuda', dtype=torch.{value}):", "at::autocast::set_enabled(true);"),
        info("tf32", "TF32 math", KnobType::Bool, "off", "on", {"off", "on"}, true,
             "torch.backends.cuda.matmul.allow_tf32 = True", "at::globalContext().setAllowTF32CuBLAS(true);"),
        info("channels_last", "Channels-last layout", KnobType::Bool, "off", "on", {"off", "on"}, false,
             "model = model.to(memory_format=torch.channels_last)", "model->to(torch::MemoryFormat::ChannelsLast);"),
        info("batch_size", "Batch size", KnobType::Int, "32", "64", {}, true, "DataLoader(ds, batch_size={value})",
             "options.batch_size = {value};"),
        info("zero_grad_none", "Grads to None", KnobType::Bool, "off", "on", {"off", "on"}, false,
             "optimizer.zero_grad(set_to_none=True)", "optimizer.zero_grad(/*set_to_none=*/true);"),
        info("anomaly_detection", "Anomaly detection", KnobType::Bool, "on", "off", {"off", "on"}, false,
             "torch.autograd.set_detect_anomaly(False)", "torch::autograd::AnomalyMode::set_enabled(false);"),
        info("cuda_graphs", "CUDA graphs", KnobType::Bool, "off", "on", {"off", "on"}, false,
             "g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): step()", "at::cuda::CUDAGraph graph;"),
        [] {
          KnobInfo k = info("cpu_allocator", "CPU memory allocator", KnobType::Enum, "glibc", "glibc_tuned",
                            {"glibc", "glibc_tuned"}, false, "GLIBC_TUNABLES=... python train.py",
                            "mallopt(M_MMAP_THRESHOLD, 256 << 20);");
          k.process_scope = true;
          return k;
        }(),
    };
    return c;
  }
  Applicability applicability(const KnobInfo& k) const override {
    if (k.id == "channels_last") return {false, "the simulated model has no convolutions", {}};
    return {};
  }
  SimStep step(const Config& c, double loader_slowdown) const override {
    SimStep p;
    const int b = to_int(c, "batch_size");
    const int workers = to_int(c, "workers");
    p.gpu = (20 + 1.5 * b) * amp_factor(c.at("amp")) * (on(c, "anomaly_detection") ? 1.5 : 1.0) *
            (on(c, "tf32") ? 0.8 : 1.0);
    p.launch = on(c, "cuda_graphs") ? 3 : 45;
    const double device = std::max(p.gpu, p.launch) * (on(c, "zero_grad_none") ? 0.998 : 1.0);
    p.h2d = b * (on(c, "pin_memory") ? 0.03 : 0.1);
    const double load = 1.2 * b;
    if (workers <= 0) {
      p.data_wait = load;
      p.step = load + p.h2d + device;
    } else {
      const double per_worker = load / std::min(workers, 4) * loader_slowdown;
      p.data_wait = std::max(0.0, per_worker - (p.h2d + device));
      p.step = std::max(per_worker, p.h2d + device) + 0.5;
    }
    p.held_mb = 2000;
    p.peak_mb = 2000 + 1000.0 * b * (c.at("amp") == "off" ? 1.0 : 0.75);  // batch 128 needs more than 80 GiB
    return p;
  }
  double loss_penalty(const Config& c) const override {
    return (on(c, "tf32") ? 0.25 : 0.0) + (c.at("amp") == "fp16" ? 0.01 : c.at("amp") == "bf16" ? 0.02 : 0.0);
  }
  std::optional<std::string> out_of_memory(const Config& c) const override {
    if (to_int(c, "batch_size") >= 128)
      return "CUDA out of memory (simulated: batch " + c.at("batch_size") + " needs more than 80 GiB)";
    return std::nullopt;
  }
  int cores() const override { return 4; }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override {
    return {{"workers", {"0", "1", "2", "4"}}, {"batch_size", {"32", "64"}},    {"amp", {"off", "fp16", "bf16"}},
            {"tf32", {"off", "on"}},          {"anomaly_detection", {"on", "off"}}, {"cuda_graphs", {"off", "on"}},
            {"pin_memory", {"off", "on"}},    {"zero_grad_none", {"off", "on"}}};
  }

 private:
  static double amp_factor(const std::string& a) { return a == "bf16" ? 0.35 : a == "fp16" ? 0.5 : 1.0; }
};

}  // namespace

std::unique_ptr<SimModel> make_toy_sim_model() { return std::make_unique<ToyModel>(); }

}  // namespace tb::engine
