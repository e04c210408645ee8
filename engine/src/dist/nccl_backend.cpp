// NCCL for a GPU group's CUDA tensors (dist/ddp.h, make_nccl_backend). Alone in this file because only a
// CUDA build with TUNEBENCH_NCCL compiles c10d's ProcessGroupNCCL.hpp (it needs USE_C10D_NCCL and nccl.h).
#include "dist/ddp.h"

#include <stdexcept>
#include <type_traits>

#ifndef TUNEBENCH_NCCL
#define TUNEBENCH_NCCL 0
#endif

#if TUNEBENCH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace tb::engine::dist {

#if TUNEBENCH_NCCL
namespace {

// 1.13's ProcessGroupNCCL is a process group of its own, not a backend a group can hold next to Gloo's; the
// template keeps that branch from being instantiated where it does not apply.
template <class Nccl = c10d::ProcessGroupNCCL>
c10::intrusive_ptr<c10d::Backend> make(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                       std::chrono::milliseconds timeout) {
  if constexpr (std::is_base_of_v<c10d::Backend, Nccl>) {
    auto o = Nccl::Options::create();
    o->timeout = timeout;
    return c10::make_intrusive<Nccl>(store, rank, size, o);
  } else {
    throw std::runtime_error("NCCL needs LibTorch 2.0 or newer here (this one's ProcessGroupNCCL is no c10d backend)");
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                    std::chrono::milliseconds timeout) {
  return make<>(store, rank, size, timeout);
}
#else
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                    std::chrono::milliseconds) {
  throw std::runtime_error("this build has no NCCL");  // choose_dist_backend never picks it here
}
#endif

}  // namespace tb::engine::dist
