// The models the engine trains (README, "Command line"). Private to engine/ (includes torch).
//
// Every model declares its InputSpec; the dataset is built to produce exactly that. Structural knobs are
// model operations rather than rebuilds, so switching one at a step boundary keeps the trained weights:
// - conv_bias_before_bn: convolutions followed by BatchNorm own a bias parameter that is used (and trained)
//   only while the knob is on; trainable_parameters() leaves it out while off. Turning it back on restarts
//   the bias at zero, which is exact because BN subtracts the batch mean.
// - fused_pointwise (vit_tiny): the MLP's bias+GELU+dropout runs as an op-by-op tanh-GELU chain (off, what a
//   newcomer writes) or as the native fused kernels (linear with bias in the GEMM + at::gelu "tanh").
// - checkpointing: segments (ResNet stages, transformer blocks, mnist conv2 block) run through
//   CheckpointFunction, which keeps only the segment input and recomputes the segment in backward.
// Threading: a Model is used by the training thread only.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/data.h"

namespace tb::engine {

struct ModelOptions {
  // 0 = the model's natural size (mnist 1x28x28, ImageNet models 3x224x224). Smaller sizes are allowed for
  // tests and quick runs (ResNets down to 32x32; vit_tiny switches to 4x4 patches below 112 pixels).
  int64_t input_height = 0, input_width = 0, input_channels = 0;
  int64_t num_classes = 0;
  bool conv_bias_before_bn = true;
  uint64_t seed = 0;
};

// A segment of a network recomputed in backward.
using Segment = std::function<torch::Tensor(const torch::Tensor&)>;

// Activation checkpointing as a custom autograd Function: forward runs `segment` without recording a graph
// and saves only its input (plus the RNG and autocast state); backward re-runs it with grad enabled from the
// saved input and backpropagates through the recomputed graph. The input must require grad (the engine
// never checkpoints the stem, which sees the raw batch). `segment` must outlive the backward pass.
torch::Tensor checkpoint(const Segment* segment, const torch::Tensor& input);
// Number of segment recomputations since process start (observability for tests).
int64_t checkpoint_recomputations();

class Model {
 public:
  virtual ~Model() = default;
  virtual std::string name() const = 0;
  const InputSpec& input() const { return input_; }

  // Logits (or log-probabilities for mnist_cnn) for a [N,C,H,W] batch.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  // Mean loss over the batch (nll for mnist_cnn, cross entropy elsewhere), computed in fp32.
  virtual torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& target);

  // Parameters the optimizer updates (requires_grad, and in use under the current structural knobs).
  virtual std::vector<torch::Tensor> trainable_parameters() = 0;
  // Every parameter and buffer tensor, whether in use or not (snapshots for the loss-drift guard).
  virtual std::vector<torch::Tensor> state_tensors() = 0;

  virtual void to(torch::Device device) = 0;
  virtual void train(bool on) = 0;
  // NHWC for every 4-D parameter (and back to contiguous when false).
  void set_channels_last(bool on);

  // Structural knobs; each returns "" when it applies to this model, else the reason it does not.
  virtual std::string conv_bias_reason() const { return "this model has no convolution followed by BatchNorm"; }
  virtual void set_conv_bias_before_bn(bool) {}
  virtual std::string fused_pointwise_reason() const { return "only vit_tiny has a GELU MLP chain to fuse"; }
  virtual void set_fused_pointwise(bool) {}
  virtual std::string checkpointing_reason() const { return ""; }
  virtual void set_checkpointing(bool) {}

 protected:
  InputSpec input_;
};

// "mnist_cnn" | "resnet18" | "resnet50" | "vit_tiny" | "torchscript:PATH". Throws std::invalid_argument
// with a one-line message for an unknown name, an unloadable file, a file without trainable parameters or
// one whose probe batch fails.
std::unique_ptr<Model> make_model(const std::string& spec, const ModelOptions& options);

}  // namespace tb::engine
