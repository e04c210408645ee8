// The GPU-calibrated simulated jobs (sim_model.h): "gpu" (the engine's ResNet-50 on a JPEG folder) and
// "script-gpu" (a public ImageNet training script), both on an H100 with 16 cores. A step is a host path and a
// device path that overlap, and a loader beside them:
//   host    = the step's ops issued one by one (13.3 us each in LibTorch, 20 us in Python) + the optimizer's
//             per-parameter loop (150 us a parameter unfused, 4 us with multi-tensor kernels) + zero_grad's
//             fill and accumulate (2 ops a parameter, none when grads go to None); 0.8 ms with CUDA graphs;
//   gpu     = per sample (fp32 0.68 ms, bf16 NCHW 0.53 (layout transposes), bf16 NHWC 0.31; cuDNN's autotuner
//             x0.9) x batch + 0.7 ms + 1.5 us a kernel (+ 1.5 ms under channels_last) + the conv biases' add and
//             reduction (1 ms per 32 samples);
//   device  = max(host, gpu), plus 0.5 ms when the host reads the loss every step;
//   loader  = 1.25 ms an image (libjpeg-turbo; 2.57 ms in the script's PIL transforms) over W workers that
//             contend (W / (1 + 0.04 (W-1)); 0.14 for worker processes), x (1 + 0.15 / prefetch);
//   h2d     = the fp32 batch at 8 GB/s pageable, 22 GB/s pinned, off the training thread with non_blocking;
//   step    = load + h2d + device (no workers) or max(loader, h2d + device) (workers).
// Calibrated to what was measured on the H100 (docs/gpu-results.md, 2026-11-26; sim_calibration tests hold
// it there): naive 360 samples/s (here 355), the hand sequence 1396 (1394, 3.93x of 3.88x), one worker 1.80x
// (1.79x); synthetic data with bf16 + channels_last + cuDNN autotune 622 (639), with conv bias off and grads
// to None 971-1123 (913), the same at batch 128 2333 (2555) and 3285-3322 (3081). Round 4 (2026-11-28) measured
// what had been extrapolated: channels_last on top of the hand sequence (x1.29 at batch 32, 2709 samples/s at
// batch 128), batches 64 and 128 (1646, 1781), the loader at 4, 8 and 16 workers (not the bound at batch 128:
// within 0.4%, 97.6% of synthetic data); here 1783, 1630, 1780, 2701, and the loader not the bound either.
// tests/engine/test_tuner_gpu_sim.cpp holds the profile to them, and its best configuration (3248 samples/s,
// once 3730) under the fastest ResNet-50 the H100 ever ran (3322, synthetic). The script: 1021 samples/s
// with its 4 workers (1022), 8 workers 1.32x (1.32x), then amp=bf16 1.09x (1.09x). What was not measured
// there is modelled, not invented: the split of host time between the optimizer loop and the model's ops
// comes from the conv-bias measurement (53 more parameters and 106 ops cost ~15 ms), the memory from
// ResNet-50's activations (75 MB a sample in fp32, 42 in bf16; 80 GB on the device).
#include <algorithm>
#include <cmath>

#include "tuner/workloads/sim_model.h"

namespace tb::engine {
namespace {

bool is_on(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it != c.end() && it->second == "on";
}
std::string text(const Config& c, const std::string& k) {
  auto it = c.find(k);
  return it == c.end() ? std::string() : it->second;
}

// Milliseconds of device time per sample for ResNet-50 at 224x224. bf16's two layouts are round 4's slopes
// (docs/gpu-results.md, 2026-11-28: the hand sequence at batch 32, 64 and 128, NCHW 0.51 ms a sample with the
// conv biases' share, NHWC 0.31); fp32 the first H100 session's naive figures.
double ms_per_sample(const std::string& amp, bool channels_last, bool cudnn_benchmark) {
  double v = amp == "off" ? (channels_last ? 0.66 : 0.68) : (channels_last ? 0.306 : 0.532);
  return v * (cudnn_benchmark ? 0.9 : 1.0);
}
// Device time a step pays whatever its batch (round 4's intercepts: 6.6 ms NCHW, 8.0 ms NHWC at the hand
// sequence): a fixed 0.7 ms, 1.5 us a kernel, and under channels_last 1.5 ms of layout conversions.
constexpr double kFixedMs = 0.7, kKernelMs = 0.0015, kChannelsLastMs = 1.5;

// The parts of both models: ResNet-50 with `params` parameter tensors, `model_ops` ops a step.
struct JobShape {
  bool python = false;        // a script: 20 us an op, PIL loading
  double load_img_ms = 1.25;  // one image, one core
  double contention = 0.04;   // loader workers' mutual slowdown
  int conv_biases = 53;       // parameters a conv bias before BN adds (engine only)
};

class GpuModelBase : public SimModel {
 public:
  int cores() const override { return 16; }
  std::string device() const override {
    return "simulated H100 80GB, 16 cores (calibrated to the figures measured on one; not a measurement)";
  }

 protected:
  // One step of ResNet-50 on the simulated H100.
  SimStep resnet_step(const Config& c, const JobShape& s, double loader_slowdown) const {
    SimStep p;
    const int batch = sim_int(c, "batch_size", s.python ? 64 : 32);
    const std::string amp = text(c, "amp").empty() ? "off" : text(c, "amp");
    const bool amp_on = amp != "off";
    const bool cl = is_on(c, "channels_last");
    const bool bias = !s.python && is_on(c, "conv_bias_before_bn");
    const bool zero_none = s.python ? text(c, "zero_grad_none") != "off" : is_on(c, "zero_grad_none");
    const bool fused = s.python || is_on(c, "fused_optimizer");  // torch.optim's default is foreach on CUDA
    const bool graphs = is_on(c, "cuda_graphs");
    const bool compiled = is_on(c, "compile");
    const int accumulate = std::max(1, sim_int(c, "grad_accumulation", 1));
    const bool sync_free = sim_int(c, "sync_free_logging", 1) > 1;
    const int workers = sim_int(c, "workers", 0);
    const int prefetch = std::max(1, sim_int(c, "prefetch", 2));
    const bool pinned = is_on(c, "pin_memory");
    const bool non_blocking = s.python ? true : is_on(c, "non_blocking");  // the script's own .cuda(non_blocking=True)
    const int params = 161 + (bias ? s.conv_biases : 0);
    const double op_ms = s.python ? 0.020 : 0.0133;

    double model_ops = 600 * (amp_on ? 1.3 : 1.0) + (bias ? 2.0 * s.conv_biases : 0) + (cl ? 2 : 0);
    const double zero_ops = zero_none ? 0 : 2.0 * params;
    const double optimizer_ms = params * (fused ? 0.004 : 0.150);
    if (compiled) model_ops *= 0.25;  // Inductor's fused kernels, launched from compiled wrappers
    p.launch = model_ops * op_ms + (zero_ops * op_ms + optimizer_ms) / accumulate + (amp == "fp16" ? 40 * op_ms : 0);
    const double kernels = model_ops + (zero_ops + (fused ? 24.0 : 10.0 * params)) / accumulate;
    if (graphs) p.launch = 0.8;
    p.gpu = ms_per_sample(amp, cl, is_on(c, "cudnn_benchmark")) * batch * (compiled ? 0.85 : 1.0) *
                (is_on(c, "tf32") ? 0.998 : 1.0) +
            kFixedMs + kernels * kKernelMs + (cl ? kChannelsLastMs : 0.0) + (bias ? batch / 32.0 : 0.0);
    p.sync = sync_free ? 0 : 0.5;
    const double load = s.load_img_ms * batch;
    const double batch_mb = batch * 3.0 * 224 * 224 * 4 / 1e6;
    p.h2d = pinned ? (non_blocking ? 0.05 : batch_mb / 22.0) : batch_mb / 8.0;
    const double device = std::max(p.launch, p.gpu);
    if (workers <= 0) {
      p.data_wait = load;
      p.step = sync_free ? std::max(load + p.h2d + p.launch, p.gpu) : load + p.h2d + device + p.sync;
    } else {
      // (Intra-op threads idle while the GPU computes: they take no cores from the workers here.)
      const double parallel = workers / (1.0 + s.contention * (workers - 1));
      const double loader = load / parallel * (1.0 + 0.15 / prefetch) * loader_slowdown;
      const double train = 0.2 + p.h2d + device + p.sync;
      p.data_wait = std::max(0.0, loader - train);
      p.step = std::max(loader, train);
    }
    // Weights, grads and optimizer state; activations per sample; cuDNN's autotuner workspace; a graph's pool.
    p.held_mb = 410;
    p.peak_mb = 410 + batch * (amp_on ? 42.0 : 75.0) * (graphs ? 1.1 : 1.0) + (is_on(c, "cudnn_benchmark") ? 1024 : 0);
    return p;
  }
  std::optional<std::string> oom_at(const Config& c) const {
    const double peak = step(complete(c)).peak_mb;
    if (peak <= 80.0 * 1024) return std::nullopt;
    return "CUDA out of memory (simulated: batch " + text(complete(c), "batch_size") + " needs " +
           std::to_string(int(peak / 1024)) + " GiB of 80)";
  }
  double penalty(const Config& c) const {
    const std::string amp = text(c, "amp");
    return amp == "bf16" ? 0.01 : amp == "fp16" ? 0.005 : 0.0;
  }
};

// The engine's ResNet-50 on a JPEG folder of 320x240 images (or on synthetic batches made on the device): the
// real knob catalog.
class EngineGpuModel : public GpuModelBase {
 public:
  explicit EngineGpuModel(bool synthetic) : synthetic_(synthetic) {}
  std::string name() const override { return synthetic_ ? "gpu-synthetic" : "gpu"; }
  const std::vector<KnobInfo>& catalog() const override { return knob_catalog(); }
  Applicability applicability(const KnobInfo& k) const override {
    static const std::vector<std::string> group = {"ranks", "bucket_cap_mb", "gradient_as_bucket_view", "comm_hook",
                                                   "broadcast_buffers", "static_graph"};
    if (std::find(group.begin(), group.end(), k.id) != group.end())
      return {false, "one GPU: a data-parallel group needs a GPU per rank", {}};
    if (k.id == "fused_pointwise") return {false, "the model has no GELU MLP (vit_tiny only)", {}};
    return {};
  }
  SimStep step(const Config& c, double loader_slowdown = 1.0) const override {
    JobShape s;
    if (synthetic_) s.load_img_ms = 0;
    SimStep p = resnet_step(c, s, loader_slowdown);
    if (synthetic_) {  // no copy either: the batches are made where they are used
      p.step -= p.h2d;
      p.h2d = 0;
    }
    return p;
  }
  double loss_penalty(const Config& c) const override { return penalty(c); }
  std::optional<std::string> out_of_memory(const Config& c) const override { return oom_at(c); }
  SimCosts costs() const override {
    SimCosts k;
    k.process_start_s = 15.0;  // a pair of fresh ResNet-50 processes took ~35 s on the H100
    k.apply_s = 0.3;
    k.workers_apply_s = 0.6;
    return k;
  }
  Config hand_config() const override {
    return complete({{"workers", "8"}, {"prefetch", "4"}, {"pin_memory", "on"}, {"non_blocking", "on"},
                     {"cudnn_benchmark", "on"}, {"amp", "bf16"}, {"cuda_graphs", "on"}});
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override {
    return {{"workers", {"0", "1", "2", "4", "8", "16"}},
            {"prefetch", {"2", "4"}},
            {"pin_memory", {"off", "on"}},
            {"non_blocking", {"off", "on"}},
            {"amp", {"off", "bf16"}},
            {"channels_last", {"off", "on"}},
            {"cudnn_benchmark", {"off", "on"}},
            {"cuda_graphs", {"off", "on"}},
            {"conv_bias_before_bn", {"on", "off"}},
            {"zero_grad_none", {"off", "on"}},
            {"fused_optimizer", {"off", "on"}},
            {"batch_size", {"32", "64", "128"}}};
  }

 private:
  bool synthetic_;
};

KnobInfo script_knob(std::string id, std::string title, KnobType type, std::string def, std::string rec,
                     std::vector<std::string> choices, bool numerics, bool process, std::string snippet) {
  KnobInfo k = sim_knob(std::move(id), std::move(title), type, std::move(def), std::move(rec), std::move(choices),
                        numerics, std::move(snippet));
  k.process_scope = process;
  k.applies_to = "scripts";
  if (k.type == KnobType::Int) k.max = 256;
  return k;
}

// A public ImageNet training script, unmodified: its knobs are the launcher's (python/tunebench/knobs.py) and
// cpu_allocator, with the values the script itself sets as the baseline.
class ScriptGpuModel : public GpuModelBase {
 public:
  std::string name() const override { return "script-gpu"; }
  int default_batch() const override { return 64; }
  const std::vector<KnobInfo>& catalog() const override {
    static const std::vector<KnobInfo> c = [] {
      std::vector<KnobInfo> v = {
          script_knob("workers", "Loader worker processes", KnobType::Int, "0", "2", {}, false, false,
                      "DataLoader(ds, batch_size=B, num_workers={value})"),
          script_knob("pin_memory", "Pinned host memory", KnobType::Bool, "off", "on", {}, false, false,
                      "DataLoader(ds, ..., pin_memory=True)"),
          script_knob("prefetch", "Prefetched batches per worker", KnobType::Int, "2", "4", {}, false, false,
                      "DataLoader(ds, ..., num_workers=2, prefetch_factor={value})"),
          script_knob("persistent_workers", "Persistent workers", KnobType::Bool, "off", "on", {}, false, false,
                      "DataLoader(ds, ..., num_workers=2, persistent_workers=True)"),
          script_knob("intra_op_threads", "Intra-op threads", KnobType::Int, "16", "0", {}, false, false,
                      "torch.set_num_threads({value})"),
          script_knob("cudnn_benchmark", "cuDNN autotuner", KnobType::Bool, "off", "on", {}, false, true,
                      "torch.backends.cudnn.benchmark = True"),
          script_knob("tf32", "TF32 matmul", KnobType::Bool, "off", "on", {}, true, false,
                      "torch.backends.cuda.matmul.allow_tf32 = True"),
          script_knob("zero_grad_none", "zero_grad(set_to_none)", KnobType::Bool, "on", "on", {}, false, false,
                      "optimizer.zero_grad(set_to_none=True)"),
          script_knob("anomaly_detection", "Autograd anomaly detection", KnobType::Bool, "off", "off", {}, false,
                      false, "torch.autograd.set_detect_anomaly(False)"),
          script_knob("amp", "Mixed precision", KnobType::Enum, "off", "bf16", {"off", "bf16", "fp16"}, true, false,
                      "with torch.autocast(device_type, dtype=torch.bfloat16):"),
          script_knob("channels_last", "Channels-last (NHWC)", KnobType::Bool, "off", "on", {}, false, false,
                      "model = model.to(memory_format=torch.channels_last)"),
          script_knob("compile", "torch.compile", KnobType::Bool, "off", "on", {}, false, false,
                      "model = torch.compile(model)"),
      };
      KnobInfo alloc = *find_knob("cpu_allocator");
      v.push_back(alloc);
      return v;
    }();
    return c;
  }
  Applicability applicability(const KnobInfo& k) const override {
    if (k.id == "amp")
      return {true, "amp=fp16 needs a code change: a GradScaler in the script", {"fp16"}};
    if (k.id == "cpu_allocator") return {true, "jemalloc and tcmalloc are not installed here", {"jemalloc", "tcmalloc"}};
    return {};
  }
  Config baseline() const override {
    Config c = defaults();
    c["workers"] = "4";
    c["pin_memory"] = "on";
    return c;
  }
  SimStep step(const Config& c, double loader_slowdown = 1.0) const override {
    JobShape s;
    s.python = true;
    s.load_img_ms = 2.566;
    s.contention = 0.14;
    Config full = c;
    full["batch_size"] = "64";  // the script's own batch: not a launcher knob
    return resnet_step(full, s, loader_slowdown);
  }
  double loss_penalty(const Config& c) const override { return penalty(c); }
  std::optional<std::string> out_of_memory(const Config& c) const override { return oom_at(c); }
  // What the launcher refuses (python/tunebench/hooks/dataloader.py).
  std::optional<std::string> refuses(const Config& c) const override {
    if (sim_int(c, "workers", 0) == 0 && sim_int(c, "prefetch", 2) != 2)
      return "prefetch=" + text(c, "prefetch") + ": prefetch only matters with workers > 0 (set workers first)";
    return std::nullopt;
  }
  SimCosts costs() const override {
    SimCosts k;
    k.process_start_s = 22.0;  // imports torchvision, starts CUDA and its worker processes
    k.apply_s = 0.4;
    k.workers_apply_s = 2.5;  // new worker processes and their first batches
    k.compile_s = 55.0;       // Inductor compiling ResNet-50's forward and backward
    return k;
  }
  Config hand_config() const override {
    return complete(
        {{"workers", "16"}, {"prefetch", "4"}, {"pin_memory", "on"}, {"amp", "bf16"}, {"channels_last", "on"}});
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> search_space() const override {
    return {{"workers", {"4", "8", "16"}},      {"prefetch", {"2", "4", "8"}},  {"amp", {"off", "bf16"}},
            {"channels_last", {"off", "on"}},   {"cudnn_benchmark", {"off", "on"}}, {"compile", {"off", "on"}},
            {"pin_memory", {"off", "on"}}};
  }
};

}  // namespace

std::unique_ptr<SimModel> make_engine_gpu_sim_model(bool synthetic) { return std::make_unique<EngineGpuModel>(synthetic); }
std::unique_ptr<SimModel> make_script_gpu_sim_model() { return std::make_unique<ScriptGpuModel>(); }

}  // namespace tb::engine
