// The training step of the engine's Session (session_impl.h): one micro-batch eagerly or as a replayed CUDA
// graph, and the probe batch that tells whether a batch size fits.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "profiler/range_names.h"
#include "profiler/recorder.h"
#include "session_impl.h"
#include "engine/run_json.h"
#include "step_memory.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace tb::engine::session_detail {
namespace {

int64_t process_minor_faults() {
  rusage u{};
  return getrusage(RUSAGE_SELF, &u) == 0 ? int64_t(u.ru_minflt) : 0;
}

}  // namespace

StepRecord SessionImpl::step() {
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
    ddp_in_step_ = ddp_ != nullptr;
    rec.loss = graph_or_eager_step(b, rec, read_loss);
    ddp_in_step_ = false;
  } catch (const EngineError&) {
    ddp_in_step_ = false;
    throw;
  } catch (const std::exception& e) {
    ddp_in_step_ = false;
    if (compat::is_oom(e) && !group_ && last_good_batch_ > 0 && num(config_, "batch_size") > last_good_batch_) {
      const std::string fit = memory_fit_text(last_good_batch_, good_batch_memory_);
      warnings_.push_back("out of memory at batch_size " + val(config_, "batch_size") + " in step " +
                          std::to_string(step_index_) + (fit.empty() ? "" : " (" + fit + ")") + "; reverted to " +
                          std::to_string(last_good_batch_));
      apply({{"batch_size", std::to_string(last_good_batch_)}});
      rec.skipped = true;
    } else {
      // An out-of-memory with no smaller batch to go back to names the batch that did not fit first: on an
      // H100, ResNet-50 at batch 4096 failed with PyTorch's 600-character allocator text alone.
      const std::string oom = compat::is_oom(e) ? "out of memory at batch_size " + val(config_, "batch_size") +
                                                      " (lower batch_size; no smaller batch ran in this run): "
                                                : std::string();
      throw EngineError((group_ ? "rank " + std::to_string(group_->rank()) + ": " : std::string()) + "training step " +
                        std::to_string(step_index_) + " failed: " + oom + first_line(e.what()));
    }
  }
  rec.wall_ns = tb::prof::now_ns() - rec.start_ns;
  rec.minor_faults = process_minor_faults() - faults0;
  tb::prof::Recorder::counter(tb::prof::names::kPageFaults, double(rec.minor_faults));
  // What the step held: the host's resident set and heap, the device's allocated, reserved and peak (the peak
  // is reset here, so each step's is its own). The trace carries them as counters beside the steps.
  rec.memory = read_step_memory(device_.is_cuda() ? std::max<int>(0, device_.index()) : -1);
  tb::prof::Recorder::counter(tb::prof::names::kHostRss, double(rec.memory.host_rss_bytes));
  if (rec.memory.device_allocated_bytes >= 0) {
    tb::prof::Recorder::counter(tb::prof::names::kDeviceAllocated, double(rec.memory.device_allocated_bytes));
    tb::prof::Recorder::counter(tb::prof::names::kDeviceReserved, double(rec.memory.device_reserved_bytes));
    tb::prof::Recorder::counter(tb::prof::names::kDevicePeak, double(rec.memory.device_peak_bytes));
    tb::prof::Recorder::counter(tb::prof::names::kDeviceRetries, double(rec.memory.device_alloc_retries));
  }
  rec.warmup = !warmup_.done();
  if (rec.warmup) warmup_.add(rec.samples, rec.wall_ns);
  if (!rec.skipped && rec.optimizer_step && num(config_, "batch_size") >= last_good_batch_) {
    last_good_batch_ = num(config_, "batch_size");
    good_batch_memory_ = rec.memory;
  }
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

double SessionImpl::graph_or_eager_step(Batch& b, StepRecord& rec, bool read_loss) {
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
          drop_graph();  // the failed capture's pool, and what a capture that ran out of memory held
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
void SessionImpl::capture_step(const Batch& b) {
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

void SessionImpl::drop_graph() {
  graph_.reset();
  // The static tensors: the loss lives in the graph's pool and would keep a segment of it.
  static_x_ = static_y_ = static_loss_ = torch::Tensor();
  compat::release_cached_device_memory();
}
#endif

// One micro-batch: forward, backward, and (at the end of an accumulation window) the optimizer step.
// Returns the loss when `read_loss` (a host sync), NaN otherwise.
double SessionImpl::train_micro_batch(torch::Tensor x, const torch::Tensor& y, StepRecord& rec, bool read_loss) {
  if (flags_.channels_last && x.dim() == 4 && !x.is_contiguous(at::MemoryFormat::ChannelsLast))
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  const bool fp16 = flags_.amp == Flags::Amp::Fp16;
  const bool autocast = flags_.amp != Flags::Amp::Off;
  const auto dtype = fp16 ? torch::kHalf : torch::kBFloat16;
  // DDP: the micro-batch that ends an accumulation window reduces; the others accumulate locally (no_sync).
  dist::Ddp* ddp = ddp_in_step_ ? ddp_.get() : nullptr;
  const bool sync = micro_ + 1 >= flags_.grad_accumulation;
  if (ddp) ddp->before_forward(sync);
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
    if (ddp) ddp->before_backward(sync);
    l.backward();
    if (ddp) ddp->after_backward(sync);
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
bool SessionImpl::probe(int64_t batch) {
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

}  // namespace tb::engine::session_detail
