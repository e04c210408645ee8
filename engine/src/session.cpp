// Session: model + dataset + loader + optimizer + the knob configuration, and the training step.
// This file builds the session and applies configurations (session_impl.h lists the other parts).
#include "engine/session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "engine/cpu_allocator.h"
#include "profiler/range_names.h"
#include "profiler/recorder.h"
#include "session_impl.h"

namespace tb::engine {
namespace session_detail {
namespace {

// The cuDNN autotuner was on in this process at some point: its chosen algorithms are cached for good.
std::atomic<bool> g_cudnn_benchmarked{false};

}  // namespace

SessionImpl::SessionImpl(const SessionOptions& o) : opts_(o), device_(resolve_device(o.device)) {
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
  else if (Status st = switch_cpu_allocator_live(initial["cpu_allocator"]); !st) throw EngineError(st.error().message);
  // So is the group this process belongs to: `ranks` says it, a session cannot become one.
  const std::string world = std::to_string(std::max(1, o.dist.world_size));
  if (o.knobs.count("ranks") && initial["ranks"] != world)
    throw EngineError("ranks=" + initial["ranks"] + " but this process is " +
                      (world == "1" ? std::string("a single one") : "one of " + world + " ranks") +
                      ": a group is started with tunebench-cli run --ranks N (or torchrun)");
  initial["ranks"] = world;
  // The group's backend, and a GPU rank's GPU: LOCAL_RANK's, as torchrun's convention is (ranks that share GPUs
  // under Gloo take them in turn). Set before the model is built, so that it lands there.
  std::string backend;
  if (o.dist.enabled()) {
    const int64_t gpus = device_.is_cuda() ? compat::cuda_device_count() : 0;
    const DistBackend b = choose_dist_backend(o.dist.backend, device_.is_cuda(), nccl_built(), gpus,
                                              o.dist.local_world_size);
    if (!b.error.empty()) throw EngineError("rank " + std::to_string(o.dist.rank) + ": " + b.error);
    if (!b.note.empty()) warnings_.push_back(b.note);
    backend = b.name;
    if (device_.is_cuda()) {
      const int gpu = o.dist.local_rank % int(std::max<int64_t>(1, gpus));
      device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu));
      compat::set_cuda_device(gpu);
    }
  }
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
  if (o.dist.enabled()) {
    try {
      group_ = std::make_shared<dist::Group>(o.dist, backend);
      // DDP's _sync_module_states: every rank starts from rank 0's parameters and buffers.
      group_->broadcast(model_->state_tensors());
    } catch (const std::exception& e) {
      throw EngineError(first_line(e.what()));
    }
    for (const auto& t : model_->state_tensors())
      if (!t.requires_grad()) ++ddp_buffer_count_;
    opts_.max_warmup_steps = opts_.warmup_steps;  // the same number of warm-up steps on every rank
  }
  // Start from the defaults, then apply the requested config like a live change (same code path,
  // same probes, the drift guard for numerics knobs).
  // The batch size is part of the start state (no probe at the default size first); every other
  // requested knob is then applied like a live change.
  config_ = default_config({{"batch_size", initial.at("batch_size")},
                            {"cpu_allocator", initial.at("cpu_allocator")},
                            {"ranks", initial.at("ranks")}});
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

SessionImpl::~SessionImpl() {
  loader_.reset();
  torch::autograd::AnomalyMode::set_enabled(false);
}

int64_t SessionImpl::apply(const Config& changes) {
  Config next = config_;
  for (const auto& [k, v] : changes) {
    const auto value = normalize_knob_value(k, v);
    if (!value) throw EngineError(value.error().message);
    next[k] = *value;
  }
  Config changed;
  for (const auto& [k, v] : next)
    if (config_[k] != v) changed[k] = v;
  if (changed.empty()) return rev_;
  // A process knob changes only where the process can follow (glibc -> glibc_tuned); otherwise nothing
  // changes and the caller is told how to start a process with it.
  if (auto it = changed.find("cpu_allocator"); it != changed.end())
    if (Status st = switch_cpu_allocator_live(it->second); !st) throw EngineError(st.error().message);
  if (auto it = changed.find("ranks"); it != changed.end())
    throw EngineError("ranks=" + it->second + " takes effect when a run starts: tunebench-cli run --ranks " +
                      it->second + " (in the GUI: Run > Data-parallel run)");
  // PyTorch caches the algorithm it chose for a convolution's shapes, by benchmark or by its heuristics, and
  // answers from that cache whatever the flag says: either change leaves the shapes already seen as they were.
  if (auto it = changed.find("cudnn_benchmark"); it != changed.end() && applicability("cudnn_benchmark").applicable) {
    if (it->second == "off" && g_cudnn_benchmarked.load())
      throw EngineError("cudnn_benchmark=off after it was on changes nothing for the shapes already benchmarked "
                        "(PyTorch keeps using the algorithms it chose): start a new run with it off");
    if (it->second == "on" && step_index_ > 0)
      throw EngineError("cudnn_benchmark=on after steps ran with it off changes nothing for the shapes already seen "
                        "(PyTorch keeps the algorithms its heuristics chose): start a new run with it on");
  }
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
      const bool fits = probe(want);
      int64_t back = std::min(num(prev, "batch_size"), last_good_batch_ > 0 ? last_good_batch_ : want);
      const std::string where = group_ ? ranks_without_room(fits, back) : std::string(fits ? "" : " runs out of memory");
      if (!where.empty()) {
        warnings_.push_back("batch_size " + std::to_string(want) + where + "; " + (group_ ? "every rank " : "") +
                            "reverted to " + std::to_string(back));
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

std::vector<KnobState> SessionImpl::knobs() const {
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

std::vector<std::string> SessionImpl::take_warnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

nlohmann::json SessionImpl::describe() const {
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
  // Each loading thread's parts, in the shape a script's launcher reports its loader's (docs/protocol.md,
  // done.summary.loader_parts): the loader verdict (client/loader_verdict.h) reads both. What a batch took
  // beyond its samples' read, decode and augmentation (the staging copy, labels, the interleave of channels_last)
  // is its "staging".
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& th : ls.threads) {
    const auto& p = th.parts;
    auto part = [](int64_t ns, int64_t calls) { return nlohmann::json{{"ns", ns}, {"calls", calls}}; };
    nlohmann::json each = nlohmann::json::object();
    if (p.read_ns > 0) each["read (file)"] = part(p.read_ns, th.samples);
    if (p.decode_ns > 0) each["decode (JPEG, PNG)"] = part(p.decode_ns, th.samples);
    if (p.augment_ns > 0) each["crop + flip + normalize"] = part(p.augment_ns, th.samples);
    each["staging"] = part(std::max<int64_t>(0, th.busy_ns - p.read_ns - p.decode_ns - p.augment_ns), th.samples);
    parts.push_back({{"who", th.who}, {"pid", static_cast<int64_t>(::getpid())}, {"samples", th.samples},
                     {"batches", th.batches}, {"busy_ns", th.busy_ns}, {"cpu_ns", th.cpu_ns}, {"life_ns", th.life_ns},
                     {"parts", each}, {"threads", true}});  // its workers hand batches over in this process
  }
  if (!parts.empty()) j["loader"]["parts"] = parts;
  j["drift_checks"] = drift_checks_;
  j["cpu_allocator"] = active_cpu_allocator();
  j["intra_op_threads"] = static_cast<int64_t>(torch::get_num_threads());
  j["loader_workers"] = applicability("workers").applicable ? num(config_, "workers") : int64_t{0};
  if (ddp_) j["distributed"] = ddp_->describe();
  j["warmup"] = {{"min_steps", opts_.warmup_steps}, {"max_steps", opts_.max_warmup_steps}, {"tolerance", 0.10},
                 {"block", warmup_block()}};
  return j;
}

SessionInternals SessionImpl::internals() {
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

Applicability SessionImpl::applicability(const std::string& id) const {
  if (is_ddp_knob(id) && group_) {
    Applicability a;
    if (id == "broadcast_buffers" && !ddp_buffer_count_) {
      a.applicable = false;
      a.reason = "this model has no buffers to broadcast";
    }
    return a;
  }
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
  } else if (id == "cuda_graphs" && group_) {
    no("not with data parallel here: the Reducer's hooks launch the all-reduce from the host during backward");
  } else if (id == "workers" || id == "prefetch" || id == "fp32_preprocess" || id == "fast_decode") {
    if (dataset_->is_synthetic()) no("synthetic data is made once and costs nothing to load");
  } else if (id == "pin_memory" || id == "non_blocking") {
    // The loader copies the one synthetic batch to the device once (make_synthetic) and reuses it.
    if (dataset_->is_synthetic()) no("synthetic data is made once on the device: no batch is copied");
  }
  return a;
}

// Blocks of the warm-up detector: whole accumulation periods, at least 2 steps.
int SessionImpl::warmup_block() const {
  const int accum = int(std::max<int64_t>(1, num(config_, "grad_accumulation")));
  return accum * ((2 + accum - 1) / accum);
}

void SessionImpl::restart_warmup() {
  warmup_ = measure::WarmupDetector(opts_.warmup_steps, warmup_block(), 0.10,
                                    std::max(opts_.max_warmup_steps, opts_.warmup_steps));
}

LoaderOptions SessionImpl::loader_options(const Config& c) const {
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
  if (group_) {
    lo.rank = group_->rank();
    lo.world_size = group_->size();
  }
  return lo;
}

// Makes the model, the process-global switches, the loader and flags_ match `c`. `prev` (null at start)
// limits the work to what changed.
void SessionImpl::realize(const Config& c, const Config* prev, bool touch_loader) {
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
    // Ranks on one machine share its cores (torchrun sets OMP_NUM_THREADS=1 for the same reason).
    const int cores = std::max(1, compat::cpu_cores() / (group_ ? group_->options().local_world_size : 1));
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
    drop_graph();
  }
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
  if (group_) realize_ddp(c);
}

}  // namespace session_detail

std::unique_ptr<Session> Session::create(const SessionOptions& options) {
  try {
    return std::make_unique<session_detail::SessionImpl>(options);
  } catch (const EngineError&) {
    throw;
  } catch (const std::exception& e) {
    throw EngineError(session_detail::first_line(e.what()));
  }
}

SessionInternals session_internals(Session& s) {
  auto* impl = dynamic_cast<session_detail::SessionImpl*>(&s);
  if (!impl) throw std::logic_error("not an engine session");
  return impl->internals();
}

}  // namespace tb::engine
