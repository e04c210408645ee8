// The engine's Session implementation (private to the engine, includes torch), declared once here so that its
// parts can live in separate files: session.cpp (construction, apply, realize, describe),
// session_step.cpp (the training step, CUDA graphs, the probe batch), session_drift_guard.cpp (the
// loss-drift guard) and session_env.cpp (what applies on this device and build, the environment).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compat.h"
#include "data/data.h"
#include "dist/ddp.h"
#include "engine/session.h"
#include "measure/warmup.h"
#include "models.h"
#include "optimizer.h"
#include "session_internal.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace tb::engine::session_detail {

inline std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

inline bool on(const Config& c, const char* id) {
  auto it = c.find(id);
  return it != c.end() && it->second == "on";
}
inline int64_t num(const Config& c, const char* id) {
  auto it = c.find(id);
  return it == c.end() ? 0 : std::stoll(it->second);
}
inline std::string val(const Config& c, const char* id) {
  auto it = c.find(id);
  return it == c.end() ? "" : it->second;
}

// The data-parallel knobs (bucket_cap_mb, gradient_as_bucket_view, comm_hook, broadcast_buffers, static_graph).
bool is_ddp_knob(const std::string& id);
// Applicability that the device and build decide (no model/dataset) (session_env.cpp).
Applicability base_applicability(const std::string& id, bool on_cuda);
// "auto", "cpu" or "cuda" as a torch device; EngineError when unknown or unavailable (session_env.cpp).
torch::Device resolve_device(const std::string& d);

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
  explicit SessionImpl(const SessionOptions& o);
  ~SessionImpl() override;

  StepRecord step() override;
  int64_t apply(const Config& changes) override;

  void synchronize() override { compat::synchronize(device_); }
  bool warming_up() const override { return !warmup_.done(); }

  const Config& config() const override { return config_; }
  int64_t revision() const override { return rev_; }

  std::vector<KnobState> knobs() const override;
  std::vector<std::string> take_warnings() override;
  nlohmann::json describe() const override;
  std::vector<std::string> gather(const std::string& key, const std::string& mine) override;
  std::string parameter_digest() const override;
  void post_order(int64_t n, const std::string& order) override;
  std::string await_order(int64_t n, std::chrono::seconds timeout) override;
  void resync_clock() override;

  SessionInternals internals();

 private:
  // session.cpp
  Applicability applicability(const std::string& id) const;
  int warmup_block() const;
  void restart_warmup();
  LoaderOptions loader_options(const Config& c) const;
  void realize(const Config& c, const Config* prev, bool touch_loader = true);
  // session_dist.cpp: the Reducer follows the parameter list and the DDP knobs.
  void realize_ddp(const Config& c);

  // session_step.cpp
  double graph_or_eager_step(Batch& b, StepRecord& rec, bool read_loss);
#if TUNEBENCH_TORCH_CUDA
  void capture_step(const Batch& b);
  // Drops the captured step (or a failed capture's leftovers) and returns its memory to the device.
  void drop_graph();
#endif
  double train_micro_batch(torch::Tensor x, const torch::Tensor& y, StepRecord& rec, bool read_loss);
  bool probe(int64_t batch);
  // A group decides a batch size together (a collective: every rank applies the same change at the same
  // order): " runs out of memory on rank 1" naming every rank whose probe failed, or "" when it fit on all.
  // `back` becomes the smallest fallback of any rank, so that every rank reverts to the same size.
  std::string ranks_without_room(bool fits, int64_t& back);

  // session_drift_guard.cpp
  Snapshot snapshot();
  void restore(const Snapshot& s);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> guard_batches(int64_t batch, int count);
  std::vector<double> guard_run(const Config& c, const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches);
  void drift_guard(const Config& before, const Config& after);

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
  StepMemory good_batch_memory_;  // a step's memory at last_good_batch_ (for the out-of-memory message)
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
  // Data parallel (null in a single process). `ddp_in_step_`: only the training step's micro-batches arm the
  // Reducer; the probe and the drift guard's side runs train locally.
  std::shared_ptr<dist::Group> group_;
  std::unique_ptr<dist::Ddp> ddp_;
  bool ddp_in_step_ = false;
  int64_t ddp_buffer_count_ = 0;
  std::vector<std::string> warnings_;
  nlohmann::json drift_checks_ = nlohmann::json::array();
};

}  // namespace tb::engine::session_detail
