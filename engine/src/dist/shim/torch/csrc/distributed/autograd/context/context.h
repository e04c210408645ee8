// Stand-in for a header Debian's libtorch-dev 1.13 does not ship (torch/csrc/distributed/autograd/ is
// missing while c10d/reducer.hpp includes it). reducer.hpp needs two names from it: the callback type (a
// static_assert that it equals std::function<bool(at::Tensor&)>) and ContextPtr, held as a shared_ptr member
// of the Reducer's RpcContext. A shared_ptr's size and layout do not depend on its pointee, so the Reducer's
// layout here is the library's; TuneBench never uses distributed autograd (RPC). Only dist/ddp.cpp sees this.
#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <memory>

namespace torch::distributed::autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace torch::distributed::autograd
