// The simulated workload of sim_workload.h.
#include "tuner/sim_workload.h"

#include <algorithm>
#include <cmath>

#include "measure/warmup.h"

namespace tb::engine {
namespace {

KnobInfo info(std::string id, std::string title, KnobType type, std::string def, std::string rec,
              std::vector<std::string> choices, bool numerics, std::string py, std::string cpp) {
  KnobInfo k;
  k.id = std::move(id);
  k.title = std::move(title);
  k.type = type;
  k.default_value = std::move(def);
  k.recommended_value = std::move(rec);
  k.choices = std::move(choices);
  k.changes_numerics = numerics;
  k.pytorch_snippet = std::move(py);
  k.libtorch_snippet = std::move(cpp);
  k.applies_to = "cuda";
  if (k.type == KnobType::Int) {
    k.min = 0;
    k.max = 4096;
  }
  return k;
}

const std::vector<KnobInfo>& sim_catalog() {
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
           "model = model.to(memory_format=torch.channels_last)",
           "model->to(torch::MemoryFormat::ChannelsLast);"),
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

int to_int(const Config& c, const char* k) { return std::stoi(c.at(k)); }
bool on(const Config& c, const char* k) { return c.at(k) == "on"; }
double amp_factor(const std::string& a) { return a == "bf16" ? 0.35 : a == "fp16" ? 0.5 : 1.0; }
double loss_penalty(const Config& c) {
  return (on(c, "tf32") ? 0.25 : 0.0) + (c.at("amp") == "fp16" ? 0.01 : c.at("amp") == "bf16" ? 0.02 : 0.0);
}

struct Parts {
  double gpu, launch, device, h2d, load_per_worker, data_wait, step;
  int workers;
};

Parts parts(const Config& c) {
  Parts p{};
  const int b = to_int(c, "batch_size");
  p.workers = to_int(c, "workers");
  p.gpu = (20 + 1.5 * b) * amp_factor(c.at("amp")) * (on(c, "anomaly_detection") ? 1.5 : 1.0) *
          (on(c, "tf32") ? 0.8 : 1.0);
  p.launch = on(c, "cuda_graphs") ? 3 : 45;
  p.device = std::max(p.gpu, p.launch) * (on(c, "zero_grad_none") ? 0.998 : 1.0);
  p.h2d = b * (on(c, "pin_memory") ? 0.03 : 0.1);
  const double load = 1.2 * b;
  if (p.workers <= 0) {
    p.load_per_worker = load;
    p.data_wait = load;
    p.step = load + p.h2d + p.device;
  } else {
    p.load_per_worker = load / std::min(p.workers, 4);
    p.data_wait = std::max(0.0, p.load_per_worker - (p.h2d + p.device));
    p.step = std::max(p.load_per_worker, p.h2d + p.device) + 0.5;
  }
  return p;
}
}  // namespace

SimulatedWorkload::SimulatedWorkload(uint64_t seed, double noise) : SimulatedWorkload(seed, SimOptions{noise}) {}

SimulatedWorkload::SimulatedWorkload(uint64_t seed, const SimOptions& options) : rng_(seed), opt_(options) {
  current_ = full({});
}

std::vector<KnobState> SimulatedWorkload::knobs() {
  std::vector<KnobState> out;
  for (const auto& k : sim_catalog()) {
    KnobState s;
    s.info = k;
    s.value = current_.count(k.id) ? current_.at(k.id) : k.default_value;
    if (k.id == "channels_last") s.applicability = {false, "the simulated model has no convolutions"};
    out.push_back(s);
  }
  return out;
}

Config SimulatedWorkload::full(const Config& config) const {
  Config c;
  for (const auto& k : sim_catalog()) c[k.id] = k.default_value;
  for (const auto& [k, v] : config) c[k] = v;
  return c;
}

Config SimulatedWorkload::baseline() { return full({}); }

void SimulatedWorkload::apply(const Config& config) {
  Config c = full(config);
  for (const auto& [k, v] : c) {
    bool known = false;
    for (const auto& i : sim_catalog()) known = known || i.id == k;
    if (!known) throw TrialFailure("unknown knob '" + k + "'", false);
  }
  ++applies_;
  now_s_ += 0.2 + (c.at("workers") != current_.at("workers") ? 0.5 : 0.0);
  if (to_int(c, "batch_size") >= 128) {
    now_s_ += 1.0;  // the allocation that failed
    throw TrialFailure("CUDA out of memory (simulated: batch " + c.at("batch_size") + " needs more than 80 GiB)",
                       true);
  }
  // The process knob does not change this process (it is measured in fresh ones), unless every window is one.
  if (!opt_.every_window_fresh) c["cpu_allocator"] = current_.at("cpu_allocator");
  if (c != current_) changed_ = true;
  current_ = c;
}

double SimulatedWorkload::noisy(double ms) {
  std::normal_distribution<double> g(0.0, opt_.noise * std::sqrt(1 - opt_.phi * opt_.phi));
  e_ = opt_.phi * e_ + g(rng_);
  // Autocorrelated per-step jitter on a slow drift (thermals, other processes) that alternation must cancel.
  const double drift = 1.0 + 0.02 * std::sin(now_s_ / 30.0);
  const double speed = (now_s_ >= opt_.jump_at_s ? opt_.jump : 1.0) * (1.0 + opt_.drift_per_s * now_s_);
  return ms * drift * std::exp(e_) / speed;
}

measure::Window SimulatedWorkload::run_window(double ms, int64_t batch, int steps, bool warm) {
  measure::Window w;
  if (warm) {
    measure::WarmupDetector d(3, 2, 0.10, 30);
    for (int i = 0; !d.done(); ++i) {
      const double t = noisy(ms * (i == 0 ? 3.0 : i == 1 ? 1.2 : 1.0));  // first steps after a change: autotune etc.
      now_s_ += t / 1000.0;
      ++steps_;
      d.add(batch, int64_t(t * 1e6));
    }
    w.warmup_steps = d.steps();
  }
  w.start_s = now_s_;
  for (int i = 0; i < steps; ++i) {
    const double t = noisy(ms);
    now_s_ += t / 1000.0;
    ++steps_;
    ++w.steps;
    w.samples += batch;
    w.wall_s += t / 1000.0;
  }
  return w;
}

measure::Window SimulatedWorkload::measure(int steps) {
  if (opt_.every_window_fresh) return *measure_fresh(current_, steps);
  const bool warm = changed_;
  changed_ = false;
  return run_window(parts(current_).step, to_int(current_, "batch_size"), steps, warm);
}

std::optional<measure::Window> SimulatedWorkload::measure_fresh(const Config& config, int steps) {
  if (!opt_.fresh_processes) return std::nullopt;
  Config c = full(config);
  now_s_ += opt_.process_start_s;
  if (to_int(c, "batch_size") >= 128) throw TrialFailure("CUDA out of memory (simulated, fresh process)", true);
  changed_ = true;  // this process's state is untouched, but the next window here starts after a pause
  double speed = 1;
  if (opt_.process_noise > 0) speed = std::exp(std::normal_distribution<double>(0.0, opt_.process_noise)(rng_));
  return run_window(1000.0 * to_int(c, "batch_size") / (fresh_throughput(c) * speed), to_int(c, "batch_size"), steps,
                    true);
}

std::vector<double> SimulatedWorkload::loss_probe(const Config& config, int steps) {
  Config c = full(config);
  now_s_ += 0.5;
  const double b = to_int(c, "batch_size");
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    now_s_ += parts(c).step / 1000.0;
    out.push_back(2.3 * std::exp(-0.05 * i * std::sqrt(b / 32.0)) * (1.0 + loss_penalty(c)));
  }
  return out;
}

std::optional<Snapshot> SimulatedWorkload::snapshot(int steps) {
  const Parts p = parts(current_);
  Snapshot s;
  s.throughput = measure(std::max(1, steps)).throughput();
  s.step_ms = p.step;
  const double launch_gap = std::max(0.0, p.launch - p.gpu);
  const double gpu_idle = std::max(0.0, p.step - p.gpu);
  const double loader_stall = std::min(gpu_idle, p.data_wait);
  s.breakdown_ms = {{"GPU busy", p.gpu},
                    {"loader stall", loader_stall},
                    {"launch gaps", std::min(launch_gap, gpu_idle - loader_stall)},
                    {"other idle", std::max(0.0, gpu_idle - loader_stall - launch_gap)}};
  // The bottleneck: compute when the GPU is busy most of the step, else what the idle time is spent on.
  std::vector<std::pair<std::string, double>> cand = {{"loader", p.data_wait}, {"launch", launch_gap}, {"h2d", p.h2d}};
  auto best = std::max_element(cand.begin(), cand.end(), [](auto& a, auto& b) { return a.second < b.second; });
  s.bottleneck = p.gpu >= 0.85 * p.step ? "compute" : best->first;
  if (p.data_wait >= launch_gap) {
    s.worst_stall_kind = "loader stall";
    s.worst_stall_ms = p.data_wait * 1.3;
  } else {
    s.worst_stall_kind = "launch gap";
    s.worst_stall_ms = launch_gap * 1.1;
  }
  if (p.data_wait > 0.2 * p.step)
    s.findings.push_back("loader stall: the GPU waits " + std::to_string(static_cast<int>(p.data_wait)) +
                         " ms per step for data (try workers, prefetch, pin_memory)");
  if (launch_gap > 0.2 * p.step)
    s.findings.push_back("CPU launch gaps: " + std::to_string(static_cast<int>(launch_gap)) +
                         " ms per step with nothing queued (try cuda_graphs, a bigger batch)");
  if (s.findings.empty()) s.findings.push_back("the GPU is busy " + std::to_string(static_cast<int>(100 * p.gpu / p.step)) + "% of the step");
  return s;
}

nlohmann::json SimulatedWorkload::describe() {
  return {{"device", "simulated GPU (deterministic model, not a measurement)"},
          {"versions", {{"libtorch", "n/a"}, {"cuda", "n/a"}}},
          {"model", "simulated"},
          {"data", "simulated"},
          {"simulated", true}};
}

double SimulatedWorkload::step_ms(const Config& config) const { return parts(full(config)).step; }

double SimulatedWorkload::throughput(const Config& config) const {
  Config c = full(config);
  return to_int(c, "batch_size") / (parts(c).step / 1000.0);
}

double SimulatedWorkload::fresh_throughput(const Config& config) const {
  Config c = full(config);
  if (c.at("cpu_allocator") != "glibc") return throughput(c);
  const Parts p = parts(c);
  double step = p.step;
  if (p.workers > 0) step = std::max(p.load_per_worker * opt_.glibc_worker_load, p.h2d + p.device) + 0.5;
  return 1000.0 * to_int(c, "batch_size") / step * opt_.glibc_fresh;
}

Config SimulatedWorkload::best_config() const {
  Config best;
  double best_tp = 0;
  for (int w : {0, 1, 2, 4})
    for (int b : {32, 64})
      for (const char* amp : {"off", "fp16", "bf16"})
        for (const char* tf32 : {"off", "on"})
          for (const char* an : {"on", "off"})
            for (const char* cg : {"off", "on"})
              for (const char* pin : {"off", "on"})
                for (const char* zg : {"off", "on"}) {
                  Config c = full({{"workers", std::to_string(w)}, {"batch_size", std::to_string(b)},
                                   {"amp", amp}, {"tf32", tf32}, {"anomaly_detection", an},
                                   {"cuda_graphs", cg}, {"pin_memory", pin}, {"zero_grad_none", zg}});
                  if (loss_penalty(c) > 0.10) continue;
                  double tp = throughput(c);
                  if (tp > best_tp * 1.0000001) {
                    best_tp = tp;
                    best = c;
                  }
                }
  return best;
}

std::unique_ptr<Workload> make_simulated_workload(uint64_t seed, double noise) {
  return std::make_unique<SimulatedWorkload>(seed, noise);
}

}  // namespace tb::engine
