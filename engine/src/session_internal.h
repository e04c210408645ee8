// White-box access to a Session's parts for the engine's tests (private to engine/, includes torch).
// Not for production code: the public Session API is the contract.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

#include "engine/session.h"

namespace tb::engine {

class Model;

struct SessionInternals {
  Model* model = nullptr;
  // The parameters the optimizer currently updates.
  std::vector<torch::Tensor> params;
  // Runs the model's forward on `x` exactly as the training step does (autocast, channels_last) without
  // backward; returns the model output.
  std::function<torch::Tensor(const torch::Tensor&)> forward_as_step;
};

// Throws std::logic_error when `s` is not the engine's own Session implementation.
SessionInternals session_internals(Session& s);

}  // namespace tb::engine
