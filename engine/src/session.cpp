// Session: model + dataset + loader + optimizer + the knob configuration, and the training step.
#include "engine/session.h"

#include <ATen/CPUGeneratorImpl.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>

#include "compat.h"
#include "engine/cpu_allocator.h"
#include "measure/warmup.h"
#include "dense.h"
#include "data/data.h"
#include "models.h"
#include "optimizer.h"
#include "profiler/range_names.h"
#include "profiler/recorder.h"
#include "session_internal.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace tb::engine {
namespace {

constexpr const char* kTuneBenchVersion = "0.1.0";

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

bool on(const Config& c, const char* id) {
  auto it = c.find(id);
  return it != c.end() && it->second == "on";
}
int64_t num(const Config& c, const char* id) {
  auto it = c.find(id);
  return it == c.end() ? 0 : std::stoll(it->second);
}
std::string val(const Config& c, const char* id) {
  auto it = c.find(id);
  return it == c.end() ? "" : it->second;
}

// The cuDNN autotuner was on in this process at some point: its chosen algorithms are cached for good.
std::atomic<bool> g_cudnn_benchmarked{false};

int64_t process_minor_faults() {
  rusage u{};
  return getrusage(RUSAGE_SELF, &u) == 0 ? int64_t(u.ru_minflt) : 0;
}

std::string cuda_reason(bool session_on_cuda) {
#if TUNEBENCH_TORCH_CUDA
  if (!compat::cuda_available()) return "no CUDA device is available";
  if (!session_on_cuda) return "the session runs on the CPU";
  return "";
#else
  (void)session_on_cuda;
  return "needs CUDA: this LibTorch build is CPU-only";
#endif
}

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

// What the step needs to know, derived from the config and what applies.
struct Flags {
  enum class Amp { Off, Fp16, Bf16 } amp = Amp::Off;
  bool zero_grad_none = false;
  bool channels_last = false;
  bool fused_optimizer = false;
  int64_t grad_accumulation = 1;
  int64_t loss_interval = 1;
  bool cuda_graphs = false;
};

struct Snapshot {
  std::vector<torch::Tensor> model;
  std::unordered_map<const void*, AdamW::ParamState> optim;
  torch::Tensor scale, growth;
  int64_t micro = 0;
  torch::Tensor rng;
  torch::Tensor rng_cuda;  // the CUDA generator's (dropout on a CUDA device draws from it)
};

class SessionImpl final : public Session {
 public:
  explicit SessionImpl(const SessionOptions& o) : opts_(o), device_(resolve_device(o.device)) {
    Config initial;
    try {
      Config requested = o.knobs;
      if (o.threads > 0 && !requested.count("intra_op_threads")) requested["intra_op_threads"] = std::to_string(o.threads);
      initial = default_config(requested);
    } catch (const std::invalid_argument& e) {
      throw EngineError(e.what());
    }
    // A process knob is a fact about this process: unless one was asked for, the config says what runs.
    if (!o.knobs.count("cpu_allocator")) initial["cpu_allocator"] = active_cpu_allocator();
    else if (auto why = switch_cpu_allocator_live(initial["cpu_allocator"]); !why.empty()) throw EngineError(why);
    ModelOptions mo;
    mo.input_channels = o.input_channels;
    mo.input_height = o.input_height;
    mo.input_width = o.input_width;
    mo.num_classes = o.num_classes;
    mo.seed = o.seed;
    mo.conv_bias_before_bn = true;
    try {
      model_ = make_model(o.model, mo);
      model_->to(device_);
      model_->train(true);
    } catch (const std::invalid_argument& e) {
      throw EngineError(e.what());
    } catch (const std::exception& e) {
      throw EngineError("cannot build model '" + o.model + "': " + first_line(e.what()));
    }
    try {
      dataset_ = make_dataset(o.data, model_->input());
    } catch (const std::exception& e) {
      throw EngineError(first_line(e.what()));
    }
    // The classifier follows the dataset's classes (an image folder with 4 classes trains a 4-way head)
    // unless the user fixed them; a TorchScript model's head is fixed by its file.
    const int64_t data_classes = dataset_->num_classes();
    if (data_classes > 0 && data_classes != model_->input().num_classes) {
      if (o.model.rfind("torchscript:", 0) == 0 || o.num_classes > 0) {
        if (data_classes > model_->input().num_classes)
          throw EngineError("the data has " + std::to_string(data_classes) + " classes but the model outputs " +
                            std::to_string(model_->input().num_classes));
      } else {
        mo.num_classes = data_classes;
        model_ = make_model(o.model, mo);
        model_->to(device_);
        model_->train(true);
      }
    }
    scale_ = torch::full({1}, 65536.0, torch::TensorOptions().dtype(torch::kFloat).device(device_));
    growth_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kInt).device(device_));
    params_ = model_->trainable_parameters();
    // Start from the defaults, then apply the requested config like a live change (same code path,
    // same probes, the drift guard for numerics knobs).
    // The batch size is part of the start state (no probe at the default size first); every other
    // requested knob is then applied like a live change.
    config_ = default_config({{"batch_size", initial.at("batch_size")}, {"cpu_allocator", initial.at("cpu_allocator")}});
    try {
      loader_ = std::make_unique<Loader>(dataset_, loader_options(config_));
      realize(config_, nullptr);
    } catch (const EngineError&) {
      throw;
    } catch (const std::exception& e) {
      throw EngineError("cannot start the loader: " + first_line(e.what()));
    }
    // Probe batch: one small forward/backward catches a model/data mismatch up front (the batch size itself
    // is proven by the first steps; its changes are probed for out-of-memory in apply()).
    probe(std::min<int64_t>(2, num(config_, "batch_size")));
    last_good_batch_ = 0;
    Config changes;
    for (const auto& [k, v] : initial)
      if (config_[k] != v) changes[k] = v;
    if (!changes.empty()) apply(changes);
    rev_ = 0;
    restart_warmup();
  }

  ~SessionImpl() override {
    loader_.reset();
    torch::autograd::AnomalyMode::set_enabled(false);
  }

  StepRecord step() override {
    StepRecord rec;
    rec.index = step_index_;
    rec.config_rev = rev_;
    rec.start_ns = tb::prof::now_ns();
    const int64_t faults0 = process_minor_faults();
    const bool read_loss = flags_.loss_interval <= 1 || step_index_ % flags_.loss_interval == 0;
    try {
      TB_RANGE_ARG(tb::prof::names::kStep, step_index_);
      Batch b = loader_->next();
      rec.data_wait_ns = b.data_wait_ns;
      rec.h2d_ns = b.h2d_ns;
      rec.samples = b.samples;
      rec.loss = graph_or_eager_step(b, rec, read_loss);
    } catch (const EngineError&) {
      throw;
    } catch (const std::exception& e) {
      if (compat::is_oom(e) && last_good_batch_ > 0 && num(config_, "batch_size") > last_good_batch_) {
        warnings_.push_back("out of memory at batch_size " + val(config_, "batch_size") + "; reverted to " +
                            std::to_string(last_good_batch_));
        apply({{"batch_size", std::to_string(last_good_batch_)}});
        rec.skipped = true;
      } else {
        throw EngineError("training step " + std::to_string(step_index_) + " failed: " + first_line(e.what()));
      }
    }
    rec.wall_ns = tb::prof::now_ns() - rec.start_ns;
    rec.minor_faults = process_minor_faults() - faults0;
    tb::prof::Recorder::counter(tb::prof::names::kPageFaults, double(rec.minor_faults));
    rec.warmup = !warmup_.done();
    if (rec.warmup) warmup_.add(rec.samples, rec.wall_ns);
    if (!rec.skipped && rec.optimizer_step) last_good_batch_ = std::max(last_good_batch_, num(config_, "batch_size"));
    if (read_loss && !rec.skipped && !std::isfinite(rec.loss)) {
      ++nan_losses_;
      if (nan_losses_ <= 3 || nan_losses_ % 100 == 0)
        warnings_.push_back("step " + std::to_string(rec.index) + ": the loss is " +
                            (std::isnan(rec.loss) ? "NaN" : "infinite") +
                            (flags_.amp == Flags::Amp::Fp16 ? " (fp16: the loss scaler skips the update)"
                                                            : " (training diverged: lower the learning rate or check the data)") +
                            " [" + std::to_string(nan_losses_) + " so far]");
    }
    ++step_index_;
    return rec;
  }

  int64_t apply(const Config& changes) override {
    Config next = config_;
    for (const auto& [k, v] : changes) {
      std::string value = v;
      if (auto err = normalize_knob_value(k, value)) throw EngineError(*err);
      next[k] = value;
    }
    Config changed;
    for (const auto& [k, v] : next)
      if (config_[k] != v) changed[k] = v;
    if (changed.empty()) return rev_;
    // A process knob changes only where the process can follow (glibc -> glibc_tuned); otherwise nothing
    // changes and the caller is told how to start a process with it.
    if (auto it = changed.find("cpu_allocator"); it != changed.end())
      if (auto why = switch_cpu_allocator_live(it->second); !why.empty()) throw EngineError(why);
    if (auto it = changed.find("cudnn_benchmark");
        it != changed.end() && it->second == "off" && g_cudnn_benchmarked.load() && applicability("cudnn_benchmark").applicable)
      throw EngineError("cudnn_benchmark=off after it was on changes nothing for the shapes already benchmarked "
                        "(PyTorch keeps using the algorithms it chose): start a new run with it off");
    const Config prev = config_;
    tb::prof::Recorder::instant(tb::prof::names::kConfigChange, rev_ + 1);
    try {
      bool numerics = false;
      for (const auto& [k, v] : changed) {
        const KnobInfo* info = find_knob(k);
        Applicability a = applicability(k);
        if (!a.applicable) warnings_.push_back("knob " + k + "=" + v + " has no effect here: " + a.reason);
        else if (info->changes_numerics) numerics = true;
      }
      config_ = next;
      realize(config_, &prev);
      if (changed.count("batch_size")) {
        const int64_t want = num(config_, "batch_size");
        if (!probe(want)) {
          const int64_t back = std::min(num(prev, "batch_size"), last_good_batch_ > 0 ? last_good_batch_ : want);
          warnings_.push_back("batch_size " + std::to_string(want) + " runs out of memory; reverted to " +
                              std::to_string(back));
          config_["batch_size"] = std::to_string(back);
          realize(config_, &prev);
        }
      }
      if (numerics && opts_.drift_guard_steps > 0) drift_guard(prev, config_);
    } catch (const EngineError&) {
      throw;
    } catch (const std::exception& e) {
      throw EngineError("applying the config failed: " + first_line(e.what()));
    }
    ++rev_;
    restart_warmup();
    return rev_;
  }

  void synchronize() override { compat::synchronize(device_); }
  bool warming_up() const override { return !warmup_.done(); }

  const Config& config() const override { return config_; }
  int64_t revision() const override { return rev_; }

  std::vector<KnobState> knobs() const override {
    std::vector<KnobState> out;
    for (const auto& k : knob_catalog()) {
      KnobState s;
      s.info = k;
      s.value = config_.at(k.id);
      s.applicability = applicability(k.id);
      out.push_back(std::move(s));
    }
    return out;
  }

  std::vector<std::string> take_warnings() override {
    std::vector<std::string> out;
    out.swap(warnings_);
    return out;
  }

  nlohmann::json describe() const override {
    nlohmann::json j = environment_info();
    j["device"]["kind"] = device_.is_cuda() ? "cuda" : "cpu";
    j["model"] = model_->name();
    j["data"] = dataset_->describe();
    const auto& in = model_->input();
    j["input"] = {in.channels, in.height, in.width};
    j["classes"] = in.num_classes;
    j["optimizer"] = {{"name", "AdamW"}, {"lr", optim_.options().lr}, {"weight_decay", optim_.options().weight_decay}};
    j["parameters"] = static_cast<int64_t>(params_.size());
    j["skipped_steps"] = skipped_steps_;
    j["nan_losses"] = nan_losses_;
    j["optimizer_steps"] = optim_.steps();
    j["cuda_graph_replays"] = graph_replays_;
    auto ls = loader_->stats();
    j["loader"] = {{"batches", ls.batches}, {"samples", ls.samples}, {"skipped_samples", ls.skipped}};
    j["drift_checks"] = drift_checks_;
    j["cpu_allocator"] = active_cpu_allocator();
    j["intra_op_threads"] = static_cast<int64_t>(torch::get_num_threads());
    j["loader_workers"] = applicability("workers").applicable ? num(config_, "workers") : int64_t{0};
    j["warmup"] = {{"min_steps", opts_.warmup_steps}, {"max_steps", opts_.max_warmup_steps}, {"tolerance", 0.10},
                   {"block", warmup_block()}};
    return j;
  }

  SessionInternals internals() {
    SessionInternals in;
    in.model = model_.get();
    in.params = params_;
    in.forward_as_step = [this](const torch::Tensor& input) {
      torch::Tensor x = input.to(device_);
      if (flags_.channels_last && x.dim() == 4) x = x.contiguous(at::MemoryFormat::ChannelsLast);
      compat::AutocastGuard ac(device_.type(), flags_.amp == Flags::Amp::Fp16 ? torch::kHalf : torch::kBFloat16,
                               flags_.amp != Flags::Amp::Off);
      return model_->forward(x);
    };
    return in;
  }

 private:
  Applicability applicability(const std::string& id) const {
    Applicability a = base_applicability(id, device_.is_cuda());
    if (!a.applicable) return a;
    auto no = [&](std::string why) {
      a.applicable = false;
      a.reason = std::move(why);
    };
    if (id == "conv_bias_before_bn") {
      if (auto r = model_->conv_bias_reason(); !r.empty()) no(r);
    } else if (id == "fused_pointwise") {
      if (auto r = model_->fused_pointwise_reason(); !r.empty()) no(r);
    } else if (id == "checkpointing") {
      if (auto r = model_->checkpointing_reason(); !r.empty()) no(r);
    } else if (id == "workers" || id == "prefetch" || id == "fp32_preprocess" || id == "fast_decode") {
      if (dataset_->is_synthetic()) no("synthetic data is made once and costs nothing to load");
    }
    return a;
  }

  // Blocks of the warm-up detector: whole accumulation periods, at least 2 steps.
  int warmup_block() const {
    const int accum = int(std::max<int64_t>(1, num(config_, "grad_accumulation")));
    return accum * ((2 + accum - 1) / accum);
  }
  void restart_warmup() {
    warmup_ = measure::WarmupDetector(opts_.warmup_steps, warmup_block(), 0.10,
                                      std::max(opts_.max_warmup_steps, opts_.warmup_steps));
  }

  LoaderOptions loader_options(const Config& c) const {
    LoaderOptions lo;
    lo.workers = static_cast<int>(num(c, "workers"));
    lo.prefetch = static_cast<int>(num(c, "prefetch"));
    lo.pin_memory = on(c, "pin_memory") && device_.is_cuda();
    lo.non_blocking = on(c, "non_blocking") && device_.is_cuda();
    lo.fp32_preprocess = on(c, "fp32_preprocess");
    lo.scaled_decode = on(c, "fast_decode");
    lo.channels_last = on(c, "channels_last");
    lo.batch_size = num(c, "batch_size");
    lo.seed = opts_.seed;
    lo.deterministic = true;
    lo.device = device_;
    return lo;
  }

  // Makes the model, the process-global switches, the loader and flags_ match `c`. `prev` (null at start)
  // limits the work to what changed.
  void realize(const Config& c, const Config* prev, bool touch_loader = true) {
    auto changed = [&](const char* id) { return !prev || val(*prev, id) != val(c, id); };
    torch::autograd::AnomalyMode::set_enabled(on(c, "anomaly_detection"));
    if (changed("channels_last")) model_->set_channels_last(on(c, "channels_last"));
    if (applicability("conv_bias_before_bn").applicable) model_->set_conv_bias_before_bn(on(c, "conv_bias_before_bn"));
    if (applicability("fused_pointwise").applicable) model_->set_fused_pointwise(on(c, "fused_pointwise"));
    if (applicability("checkpointing").applicable) model_->set_checkpointing(on(c, "checkpointing"));
    if (applicability("tf32").applicable) compat::set_tf32(on(c, "tf32"));
    if (applicability("cudnn_benchmark").applicable) {
      compat::set_cudnn_benchmark(on(c, "cudnn_benchmark"));
      if (on(c, "cudnn_benchmark")) g_cudnn_benchmarked = true;
    }
    params_ = model_->trainable_parameters();
    if (changed("channels_last")) optim_.match_layouts(params_);
    // Intra-op threads: the knob, or (0 = auto) the cores the loader workers leave. Process-wide, but set
    // from the training thread, whose OpenMP setting the ops of the step use.
    {
      const int cores = std::max(1, compat::cpu_cores());
      const int64_t want_knob = num(c, "intra_op_threads");
      const int64_t workers = applicability("workers").applicable ? num(c, "workers") : 0;
      const int want = int(want_knob > 0 ? want_knob : std::max<int64_t>(1, cores - workers));
      if (torch::get_num_threads() != want) torch::set_num_threads(want);
    }
    Flags f;
    const std::string amp = val(c, "amp");
    if (amp == "bf16") f.amp = Flags::Amp::Bf16;
    if (amp == "fp16") {
      if (compat::amp_fp16_supported(device_)) {
        f.amp = Flags::Amp::Fp16;
      } else if (!prev || val(*prev, "amp") != "fp16") {
        warnings_.push_back("amp=fp16 has no effect here: " + base_applicability("amp", device_.is_cuda()).reason);
      }
    }
    f.zero_grad_none = on(c, "zero_grad_none");
    f.channels_last = on(c, "channels_last");
    f.fused_optimizer = on(c, "fused_optimizer") && applicability("fused_optimizer").applicable;
    f.grad_accumulation = std::max<int64_t>(1, num(c, "grad_accumulation"));
    f.loss_interval = std::max<int64_t>(1, num(c, "sync_free_logging"));
    if (on(c, "cuda_graphs") && applicability("cuda_graphs").applicable) {
      // Whole-step capture needs a step without host decisions or host-side state.
      std::string conflict = f.amp == Flags::Amp::Fp16       ? "amp=fp16 (loss scaling decides on the host each step)"
                             : f.grad_accumulation > 1       ? "grad_accumulation > 1"
                             : on(c, "checkpointing")        ? "checkpointing (it swaps RNG state in backward)"
                             : on(c, "anomaly_detection")    ? "anomaly_detection"
                                                             : "";
      if (conflict.empty()) f.cuda_graphs = true;
      else if (prev) warnings_.push_back("cuda_graphs stays off while " + conflict + " is set");
    }
    if (f.grad_accumulation != flags_.grad_accumulation) micro_ = 0;
    flags_ = f;
#if TUNEBENCH_TORCH_CUDA
    // Any change invalidates a captured step (shapes, memory format, model structure, autocast). The
    // replays advanced only the graph's device step count: bring the host counts up before eager steps.
    if (graph_) {
      optim_.sync_step_counts();
      // Replays write fresh gradients and nothing clears them: the next eager backward would add to the
      // last replay's.
      compat::zero_grad(params_, true);
    }
    graph_.reset();
    graph_eager_steps_ = 0;
    graph_failed_ = false;
#endif
    if (touch_loader && loader_) {
      LoaderOptions lo = loader_options(c);
      const LoaderOptions& cur = loader_->options();
      if (!prev || lo.workers != cur.workers || lo.prefetch != cur.prefetch || lo.pin_memory != cur.pin_memory ||
          lo.non_blocking != cur.non_blocking || lo.fp32_preprocess != cur.fp32_preprocess ||
          lo.scaled_decode != cur.scaled_decode ||
          lo.channels_last != cur.channels_last || lo.batch_size != cur.batch_size)
        loader_->reconfigure(lo);
    }
  }

  double graph_or_eager_step(Batch& b, StepRecord& rec, bool read_loss) {
#if TUNEBENCH_TORCH_CUDA
    if (flags_.cuda_graphs) {
      // Eager warm-up steps first (allocator growth, cuBLAS/cuDNN handles and autotuning), then capture.
      // As PyTorch's recipe: the warm-up runs on the stream the capture will use, fenced both ways, so
      // per-stream state (cuBLAS workspaces) exists before capture instead of landing in the graph's pool.
      if (!graph_ && graph_eager_steps_ < 2 && !graph_failed_) {
        ++graph_eager_steps_;
        if (!graph_stream_) graph_stream_ = at::cuda::getStreamFromPool();
        auto current = at::cuda::getCurrentCUDAStream();
        at::cuda::CUDAEvent before, after;
        before.record(current);
        before.block(*graph_stream_);
        double loss;
        {
          c10::cuda::CUDAStreamGuard guard(*graph_stream_);
          loss = train_micro_batch(b.input, b.target, rec, read_loss);
        }
        after.record(*graph_stream_);
        after.block(current);
        return loss;
      } else {
        if (!graph_ && !graph_failed_) {
          try {
            capture_step(b);
          } catch (const std::exception& e) {
            // Not every model/config is capturable (host syncs, CPU ops, dynamic shapes): say so and
            // keep training eagerly rather than failing the run.
            graph_failed_ = true;
            compat::zero_grad(params_, true);
            warnings_.push_back("cuda_graphs: capturing the step failed (" + first_line(e.what()) +
                                "); running eagerly");
          }
        }
        if (graph_ && b.input.sizes() == static_x_.sizes()) {
          static_x_.copy_(b.input);
          static_y_.copy_(b.target);
          graph_->replay();
          ++graph_replays_;
          optim_.count_replay();
          rec.optimizer_step = true;
          if (!read_loss) return std::numeric_limits<double>::quiet_NaN();
          TB_RANGE(tb::prof::names::kSync);
          return static_loss_.item<double>();
        }
      }
    }
#endif
    return train_micro_batch(b.input, b.target, rec, read_loss);
  }

#if TUNEBENCH_TORCH_CUDA
  // Captures forward + backward + AdamW (capturable) on a side stream into one CUDA graph with static
  // input/target tensors. Capture runs nothing; the caller replays it for this step's real work.
  void capture_step(const Batch& b) {
    TB_RANGE(tb::prof::names::kGraphCapture);
    static_x_ = b.input.clone();
    if (flags_.channels_last) static_x_ = static_x_.contiguous(at::MemoryFormat::ChannelsLast);
    static_y_ = b.target.clone();
    compat::zero_grad(params_, /*set_to_none=*/true);  // backward in the graph writes fresh gradients
    // The device step count starts at the host's for every capture (replays advance both).
    graph_step_t_ = torch::full({1}, double(optim_.steps()), torch::TensorOptions().dtype(torch::kFloat).device(device_));
    auto current = at::cuda::getCurrentCUDAStream();
    if (!graph_stream_) graph_stream_ = at::cuda::getStreamFromPool();
    auto side = *graph_stream_;
    compat::synchronize(device_);  // as torch.cuda.graph's __enter__: no pending work or frees
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);  // cached casts would outlive the capture
    try {
      c10::cuda::CUDAStreamGuard guard(side);
      // Thread-local mode: loader workers keep calling cudaHostAlloc / cudaEventSynchronize while this
      // thread captures; global mode would invalidate the capture and fail those calls.
      compat::graph_capture_begin_thread_local(*graph);
      bool ended = false;
      try {
        torch::Tensor loss;
        {
          compat::AutocastGuard ac(device_.type(), torch::kBFloat16, flags_.amp == Flags::Amp::Bf16);
          loss = model_->loss(model_->forward(static_x_), static_y_);
        }
        loss.backward();
        optim_.step_capturable(params_, graph_step_t_);
        static_loss_ = loss.detach();
        ended = true;
        graph->capture_end();
      } catch (...) {
        // Take the stream out of capture mode, or the eager fallback fails on it too.
        if (!ended) {
          try {
            graph->capture_end();
          } catch (...) {
          }
        }
        throw;
      }
    } catch (...) {
      at::autocast::set_autocast_cache_enabled(cache);
      throw;
    }
    at::autocast::set_autocast_cache_enabled(cache);
    at::cuda::CUDAEvent after;
    after.record(side);
    after.block(current);
    graph_ = std::move(graph);
  }
#endif

  // One micro-batch: forward, backward, and (at the end of an accumulation window) the optimizer step.
  // Returns the loss when `read_loss` (a host sync), NaN otherwise.
  double train_micro_batch(torch::Tensor x, const torch::Tensor& y, StepRecord& rec, bool read_loss) {
    if (flags_.channels_last && x.dim() == 4 && !x.is_contiguous(at::MemoryFormat::ChannelsLast))
      x = x.contiguous(at::MemoryFormat::ChannelsLast);
    const bool fp16 = flags_.amp == Flags::Amp::Fp16;
    const bool autocast = flags_.amp != Flags::Amp::Off;
    const auto dtype = fp16 ? torch::kHalf : torch::kBFloat16;
    torch::Tensor loss;
    {
      TB_RANGE(tb::prof::names::kForward);
      compat::AutocastGuard ac(device_.type(), dtype, autocast);
      loss = model_->loss(model_->forward(x), y);
    }
    {
      TB_RANGE(tb::prof::names::kBackward);
      torch::Tensor l = flags_.grad_accumulation > 1 ? loss / double(flags_.grad_accumulation) : loss;
      if (fp16) l = l * scale_;
      l.backward();
    }
    ++micro_;
    rec.optimizer_step = micro_ >= flags_.grad_accumulation;
    if (rec.optimizer_step) {
      TB_RANGE(tb::prof::names::kOptimizer);
      micro_ = 0;
      bool skip = false;
      if (fp16) {
        std::vector<torch::Tensor> grads;
        for (auto& p : params_)
          if (p.grad().defined()) grads.push_back(p.grad());
        auto found_inf = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
        auto inv = scale_.to(torch::kDouble).reciprocal().to(torch::kFloat);
        compat::amp_unscale_(grads, found_inf, inv);
        {
          TB_RANGE(tb::prof::names::kSync);
          skip = found_inf.item<float>() > 0;
        }
        compat::amp_update_scale_(scale_, growth_, found_inf, 2.0, 0.5, 2000);
        rec.loss_scale = scale_.item<double>();
        if (skip) {
          ++skipped_steps_;
          rec.skipped = true;
          if (skipped_steps_ <= 3 || skipped_steps_ % 100 == 0)
            warnings_.push_back("fp16: inf/NaN gradients at step " + std::to_string(rec.index) +
                                "; update skipped, loss scale now " + std::to_string(rec.loss_scale) + " [" +
                                std::to_string(skipped_steps_) + " skipped so far]");
        }
      }
      if (!skip) optim_.step(params_, flags_.fused_optimizer);
      compat::zero_grad(params_, flags_.zero_grad_none);
    }
    if (!read_loss) return std::numeric_limits<double>::quiet_NaN();
    TB_RANGE(tb::prof::names::kSync);
    return loss.detach().item<double>();
  }

  // Runs one forward/backward at `batch` on zeros (no optimizer step) to see that it fits. False on OOM.
  bool probe(int64_t batch) {
    if (opts_.simulate_oom_above_batch > 0 && batch > opts_.simulate_oom_above_batch) return false;
    const auto& in = model_->input();
    try {
      auto x = torch::zeros({batch, in.channels, in.height, in.width}, torch::TensorOptions().device(device_));
      auto y = torch::zeros({batch}, torch::TensorOptions().dtype(torch::kLong).device(device_));
      if (flags_.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
      {
        compat::AutocastGuard ac(device_.type(), flags_.amp == Flags::Amp::Fp16 ? torch::kHalf : torch::kBFloat16,
                                 flags_.amp != Flags::Amp::Off);
        auto loss = model_->loss(model_->forward(x), y);
        loss.backward();
      }
      compat::zero_grad(params_, true);
      compat::synchronize(device_);
    } catch (const std::exception& e) {
      compat::zero_grad(params_, true);
      if (compat::is_oom(e)) return false;
      throw EngineError("model " + model_->name() + " fails a probe batch of " + std::to_string(batch) + " from " +
                        opts_.data + ": " + first_line(e.what()));
    }
    if (batch > last_good_batch_) last_good_batch_ = batch;
    return true;
  }

  // --- loss-drift guard ---------------------------------------------------------------------------------
  Snapshot snapshot() {
    Snapshot s;
    for (auto& t : model_->state_tensors()) s.model.push_back(t.detach().clone());
    s.optim = optim_.snapshot();
    s.scale = scale_.clone();
    s.growth = growth_.clone();
    s.micro = micro_;
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      s.rng = gen.get_state();
    }
#if TUNEBENCH_TORCH_CUDA
    if (device_.is_cuda()) {
      auto cg = at::cuda::detail::getDefaultCUDAGenerator(device_.index() < 0 ? 0 : device_.index());
      std::lock_guard<std::mutex> lock(cg.mutex());
      s.rng_cuda = cg.get_state();
    }
#endif
    return s;
  }
  void restore(const Snapshot& s) {
    {
      torch::NoGradGuard no_grad;
      auto cur = model_->state_tensors();
      for (size_t i = 0; i < cur.size() && i < s.model.size(); ++i) cur[i].copy_(s.model[i]);
      for (auto& t : cur) t.mutable_grad() = torch::Tensor();
    }
    optim_.restore(s.optim);
    scale_.copy_(s.scale);
    growth_.copy_(s.growth);
    micro_ = s.micro;
    {
      auto gen = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(s.rng);
    }
#if TUNEBENCH_TORCH_CUDA
    if (s.rng_cuda.defined()) {
      auto cg = at::cuda::detail::getDefaultCUDAGenerator(device_.index() < 0 ? 0 : device_.index());
      std::lock_guard<std::mutex> lock(cg.mutex());
      cg.set_state(s.rng_cuda);
    }
#endif
  }

  // Seeded batches straight from the dataset (independent of the loader's position and workers).
  std::vector<std::pair<torch::Tensor, torch::Tensor>> guard_batches(int64_t batch, int count) {
    const auto& in = model_->input();
    std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
    std::mt19937_64 rng(opts_.seed + 7919);
    int64_t index = 0;
    const int64_t n = std::max<int64_t>(1, dataset_->size());
    for (int k = 0; k < count; ++k) {
      auto x = torch::empty({batch, in.channels, in.height, in.width});
      auto y = torch::empty({batch}, torch::kLong);
      int64_t filled = 0, tries = 0;
      while (filled < batch && tries < batch * 4 + 16) {
        int64_t label = 0;
        if (dataset_->load(index % n, rng, x[filled].data_ptr<float>(), label)) {
          y[filled] = label;
          ++filled;
        }
        ++index;
        ++tries;
      }
      if (filled < batch) throw EngineError("loss-drift guard: the dataset yields too few readable samples");
      out.emplace_back(x.to(device_), y.to(device_));
    }
    return out;
  }

  std::vector<double> guard_run(const Config& c, const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches) {
    realize(c, nullptr, /*touch_loader=*/false);
    micro_ = 0;
    const int64_t bs = num(c, "batch_size");
    std::vector<double> losses;
    for (size_t k = 0; k < batches.size(); ++k) {
      torch::manual_seed(opts_.seed + 104729 + k);  // same dropout masks in both runs
      StepRecord r;
      auto x = batches[k].first.narrow(0, 0, std::min<int64_t>(bs, batches[k].first.size(0)));
      auto y = batches[k].second.narrow(0, 0, x.size(0));
      losses.push_back(train_micro_batch(x, y, r, true));
    }
    return losses;
  }

  void drift_guard(const Config& before, const Config& after) {
    const int steps = opts_.drift_guard_steps;
    const int64_t bs = std::max(num(before, "batch_size"), num(after, "batch_size"));
    auto batches = guard_batches(bs, steps);
    const std::vector<std::string> saved_warnings = warnings_;
    Snapshot snap = snapshot();
    std::vector<double> base, test;
    try {
      base = guard_run(before, batches);
      restore(snap);
      test = guard_run(after, batches);
      restore(snap);
    } catch (...) {
      restore(snap);
      realize(config_, nullptr, false);
      throw;
    }
    realize(config_, nullptr, false);
    warnings_ = saved_warnings;  // the guard's own runs must not repeat messages
    double worst = 0;
    bool finite = true;
    for (size_t i = 0; i < base.size(); ++i) {
      if (!std::isfinite(base[i]) || !std::isfinite(test[i])) {
        finite = std::isfinite(base[i]) == std::isfinite(test[i]) && finite && std::isfinite(test[i]);
        continue;
      }
      worst = std::max(worst, std::abs(test[i] - base[i]) / std::max(std::abs(base[i]), 1e-3));
    }
    const bool ok = finite && worst <= opts_.drift_tolerance;
    nlohmann::json changed = nlohmann::json::object();
    for (const auto& [k, v] : after)
      if (val(before, k.c_str()) != v && find_knob(k)->changes_numerics) changed[k] = v;
    drift_checks_.push_back({{"rev", rev_ + 1}, {"changed", changed}, {"steps", steps}, {"baseline", base},
                             {"test", test}, {"max_rel_diff", worst}, {"tolerance", opts_.drift_tolerance},
                             {"ok", ok}});
    if (!ok)
      warnings_.push_back("loss-drift guard: " + changed.dump() + " moved the loss by " +
                          std::to_string(int(worst * 100 + 0.5)) + "% over " + std::to_string(steps) +
                          " seeded steps (tolerance " + std::to_string(int(opts_.drift_tolerance * 100 + 0.5)) + "%)" +
                          (finite ? "" : "; the loss became non-finite"));
  }

  SessionOptions opts_;
  torch::Device device_;
  std::unique_ptr<Model> model_;
  std::shared_ptr<Dataset> dataset_;
  std::unique_ptr<Loader> loader_;
  AdamW optim_;
  std::vector<torch::Tensor> params_;
  Config config_;
  Flags flags_;
  int64_t rev_ = 0;
  int64_t step_index_ = 0;
  measure::WarmupDetector warmup_{0};
  int64_t micro_ = 0;
  int64_t last_good_batch_ = 0;
  torch::Tensor scale_, growth_;
  int64_t skipped_steps_ = 0, nan_losses_ = 0;
  int64_t graph_replays_ = 0;
#if TUNEBENCH_TORCH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
  int graph_eager_steps_ = 0;
  bool graph_failed_ = false;
  torch::Tensor static_x_, static_y_, static_loss_, graph_step_t_;
  std::optional<c10::cuda::CUDAStream> graph_stream_;  // warm-up and capture stream, made once
#endif
  std::vector<std::string> warnings_;
  nlohmann::json drift_checks_ = nlohmann::json::array();
};

}  // namespace

std::unique_ptr<Session> Session::create(const SessionOptions& options) {
  try {
    return std::make_unique<SessionImpl>(options);
  } catch (const EngineError&) {
    throw;
  } catch (const std::exception& e) {
    throw EngineError(first_line(e.what()));
  }
}

SessionInternals session_internals(Session& s) {
  auto* impl = dynamic_cast<SessionImpl*>(&s);
  if (!impl) throw std::logic_error("not an engine session");
  return impl->internals();
}

std::vector<KnobState> knob_states_here(const std::string& device) {
  bool on_cuda = false;
  if (device == "auto") on_cuda = compat::cuda_available();
  else if (device == "cuda") on_cuda = compat::cuda_available();
  std::vector<KnobState> out;
  for (const auto& k : knob_catalog()) {
    KnobState s;
    s.info = k;
    s.value = k.default_value;
    s.applicability = base_applicability(k.id, on_cuda);
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
                   {"memory_bytes", static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE)}};
    // Which GEMM path the CPU dense layers take (dense.h): it explains CPU throughput next to PyTorch's.
    j["cpu_dense"] = cpu_dense_description();
  }
  return j;
}

}  // namespace tb::engine
