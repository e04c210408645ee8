// AdamW, the engine's optimizer for every model (private to engine/).
//
// Why AdamW everywhere: fused_optimizer is one of the known optimizations (apex's FusedAdam), and it
// only means something for an optimizer with per-parameter state and several pointwise ops per parameter.
// One optimizer for all models also keeps the loss-drift guard and the tuner comparable across models.
// (PyTorch's MNIST example uses Adadelta; the loop structure is the same.)
//
// Two implementations of the same math, chosen per step by the fused_optimizer knob:
// - loop: one parameter at a time, ~8 kernels each (torch.optim.AdamW(foreach=False), what LibTorch's
//   torch::optim::AdamW does);
// - foreach: the torch::_foreach_* multi-tensor kernels over all parameters at once (torch.optim.AdamW(
//   foreach=True)); LibTorch 1.13 has CPU and CUDA kernels for them.
// State is keyed by the parameter's TensorImpl, so the parameter list may change between steps (a conv bias
// switched off keeps its state for when it comes back). Training thread only.
#pragma once

#include <torch/torch.h>

#include <unordered_map>
#include <vector>

namespace tb::engine {

class AdamW {
 public:
  struct Options {
    double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  };
  struct ParamState {
    torch::Tensor exp_avg, exp_avg_sq;
    int64_t step = 0;
  };

  AdamW() = default;
  explicit AdamW(Options o) : opts_(o) {}

  // Updates every parameter in `params` that has a defined gradient.
  void step(const std::vector<torch::Tensor>& params, bool foreach);
  // The same update with the step count and bias corrections as device tensors, so the whole update can
  // be captured in a CUDA graph and replayed (torch.optim.AdamW(capturable=True)). `step_count` is a
  // one-element float tensor on the parameters' device shared by all parameters; it is incremented here.
  // Capturing runs nothing, so it does not count as a step: each replay of the captured step is counted
  // with count_replay().
  void step_capturable(const std::vector<torch::Tensor>& params, torch::Tensor& step_count);
  void count_replay() { ++steps_; }
  // After replays the per-parameter host step counts are stale (the graph advanced a device tensor):
  // sets them to the optimizer's step count before eager steps resume.
  void sync_step_counts();
  // After the parameters changed memory format (channels_last on/off), moves the state of each 4-D parameter
  // to the parameter's layout: the update's pointwise kernels otherwise run over mismatched strides (slow,
  // and on CUDA a strided copy per step).
  void match_layouts(const std::vector<torch::Tensor>& params);
  // The state of one parameter (tests); nullptr when it has none yet.
  const ParamState* state_of(const torch::Tensor& p) const {
    auto it = state_.find(p.unsafeGetTensorImpl());
    return it == state_.end() ? nullptr : &it->second;
  }
  const Options& options() const { return opts_; }

  // For the loss-drift guard: a deep copy of the state, and putting one back.
  std::unordered_map<const void*, ParamState> snapshot() const;
  void restore(const std::unordered_map<const void*, ParamState>& s) { state_ = s; }
  int64_t steps() const { return steps_; }

 private:
  ParamState& state_for(const torch::Tensor& p);
  Options opts_;
  std::unordered_map<const void*, ParamState> state_;
  int64_t steps_ = 0;
};

}  // namespace tb::engine
