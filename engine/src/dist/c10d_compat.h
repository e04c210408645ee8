// c10d's C++ API as the LibTorch releases spell it, wrapped once for dist/ (compat.h does the same for the rest
// of the engine; c10d's headers stay out of it). The build links the PyTorch wheel's (2.11); the older shapes
// stay because telling them apart costs nothing, but only 2.11 is built and tested.
//
// What differs:
// - 1.13: ProcessGroupGloo *is* a c10d::ProcessGroup. >= 2.0: it is a c10d::Backend, and a ProcessGroup holds
//   one backend per device type (PyTorch's init_process_group("cpu:gloo,cuda:nccl")): the group is built
//   around it with setBackend. The ProcessGroup constructor took Options (the backend name, the timeout)
//   until 2.5 and takes (store, rank, size) since.
// - TCPStoreOptions::useLibUV (2.4+) defaults to true, and a LibTorch built without libuv (Debian 13's 2.6)
//   then refuses to open any store, server or client ("use_libuv was requested but PyTorch was build without
//   libuv support"). The wheels have libuv.
// - c10d::Reducer's constructor: 1.13 to 2.x took per-bucket size limits after the bucket indices; later ones
//   drop them and add skip_all_reduce_unused_params, use_python_reducer and bucket_bytes_cap_list.
//
// Each is told apart by what the headers declare (type traits, requires-expressions), not by version numbers:
// the shapes changed in minor releases, and a LibTorch we have not seen picks the first shape it accepts or
// stops the build with a static_assert that names the call. The functions are templates over the c10d types
// so that the branches a LibTorch does not have are never instantiated.
//
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace tb::engine::dist::c10d_compat {

template <class T>
inline constexpr bool kAlwaysFalse = false;

// The TCP store with options `so`. Where the options have useLibUV: USE_LIBUV=0 asks for the classic backend,
// as it does of PyTorch's rendezvous, and a LibTorch without libuv falls back to the classic backend instead of
// failing (the server and the clients speak the same protocol either way). Any other error is the caller's.
template <class Store = c10d::TCPStore, class Options = c10d::TCPStoreOptions>
c10::intrusive_ptr<Store> make_tcp_store(const std::string& host, Options so) {
  if constexpr (requires { so.useLibUV = false; }) {
    if (const char* env = std::getenv("USE_LIBUV"); env && std::string(env) == "0") so.useLibUV = false;
    if (so.useLibUV) {
      try {
        return c10::make_intrusive<Store>(host, so);
      } catch (const std::exception& e) {
        if (std::string(e.what()).find("without libuv") == std::string::npos) throw;
        so.useLibUV = false;
      }
    }
  }
  return c10::make_intrusive<Store>(host, so);
}

// The group over `store`: Gloo for CPU tensors and, when `cuda_backend` is given (>= 2.0 only), that backend
// (NCCL) for CUDA tensors and as the default. `gloo` comes ready-made from the caller.
template <class PG = c10d::ProcessGroup, class Gloo = c10d::ProcessGroupGloo>
c10::intrusive_ptr<PG> make_process_group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                          std::chrono::milliseconds timeout, c10::intrusive_ptr<Gloo> gloo,
                                          c10::intrusive_ptr<c10d::Backend> cuda_backend) {
  if constexpr (std::is_base_of_v<PG, Gloo>) {
    // 1.13: no per-device backends; the caller never passes a CUDA backend here (NCCL needs >= 2.0).
    (void)store, (void)rank, (void)size, (void)timeout, (void)cuda_backend;
    return gloo;
  } else {
    const bool nccl = static_cast<bool>(cuda_backend);
    c10::intrusive_ptr<PG> pg;
    if constexpr (std::is_constructible_v<PG, c10::intrusive_ptr<c10d::Store>, int, int>)
      pg = c10::make_intrusive<PG>(store, rank, size);
    else
      pg = c10::make_intrusive<PG>(store, rank, size,
                                   c10::make_intrusive<typename PG::Options>(nccl ? "nccl" : "gloo", timeout));
    using Type = typename PG::BackendType;
    // setBackend takes an optional<intrusive_ptr<Backend>>: one conversion each, spelled out.
    const c10::intrusive_ptr<c10d::Backend> cpu = gloo;
    pg->setBackend(c10::DeviceType::CPU, Type::GLOO, cpu);
    if (nccl) pg->setBackend(c10::DeviceType::CUDA, Type::NCCL, cuda_backend);
    if constexpr (requires { pg->setDefaultBackend(Type::GLOO); }) pg->setDefaultBackend(nccl ? Type::NCCL : Type::GLOO);
    // Backends log and record collectives under the group's name (NCCL's flight recorder among them).
    if constexpr (requires { pg->setGroupName(std::string()); }) pg->setGroupName("tunebench");
    return pg;
  }
}

// A Reducer over `params` in the buckets `indices` (with their size limits where the constructor still takes
// them), without find_unused_parameters and without parameter names.
template <class R, class PG = c10d::ProcessGroup>
std::unique_ptr<R> make_reducer(std::vector<at::Tensor> params, std::vector<std::vector<size_t>> indices,
                                std::vector<size_t> limits, c10::intrusive_ptr<PG> pg, int64_t bucket_bytes_cap,
                                bool gradient_as_bucket_view, int64_t first_bucket_bytes_cap) {
  using P = std::vector<at::Tensor>;
  using I = std::vector<std::vector<size_t>>;
  using L = std::vector<size_t>;
  using G = c10::intrusive_ptr<PG>;
  using S = std::vector<bool>;
  using N = std::unordered_map<size_t, std::string>;
  S sparse(params.size(), false);
  const bool find_unused = false, skip_unused = false, python_reducer = false;
  if constexpr (std::is_constructible_v<R, P, I, L, G, S, int64_t, bool, bool, N, int64_t>)
    return std::make_unique<R>(std::move(params), std::move(indices), std::move(limits), std::move(pg),
                               std::move(sparse), bucket_bytes_cap, find_unused, gradient_as_bucket_view, N{},
                               first_bucket_bytes_cap);
  else if constexpr (std::is_constructible_v<R, P, I, G, S, int64_t, bool, bool, N, int64_t, bool, bool,
                                             std::vector<int64_t>>)
    // An empty cap list: every bucket gets bucket_bytes_cap, as before the list existed.
    return std::make_unique<R>(std::move(params), std::move(indices), std::move(pg), std::move(sparse),
                               bucket_bytes_cap, find_unused, gradient_as_bucket_view, N{}, first_bucket_bytes_cap,
                               skip_unused, python_reducer, std::vector<int64_t>{});
  else if constexpr (std::is_constructible_v<R, P, I, G, S, int64_t, bool, bool, N, int64_t, bool, bool>)
    return std::make_unique<R>(std::move(params), std::move(indices), std::move(pg), std::move(sparse),
                               bucket_bytes_cap, find_unused, gradient_as_bucket_view, N{}, first_bucket_bytes_cap,
                               skip_unused, python_reducer);
  else if constexpr (std::is_constructible_v<R, P, I, G, S, int64_t, bool, bool, N, int64_t, bool>)
    return std::make_unique<R>(std::move(params), std::move(indices), std::move(pg), std::move(sparse),
                               bucket_bytes_cap, find_unused, gradient_as_bucket_view, N{}, first_bucket_bytes_cap,
                               skip_unused);
  else if constexpr (std::is_constructible_v<R, P, I, G, S, int64_t, bool, bool, N, int64_t>)
    return std::make_unique<R>(std::move(params), std::move(indices), std::move(pg), std::move(sparse),
                               bucket_bytes_cap, find_unused, gradient_as_bucket_view, N{}, first_bucket_bytes_cap);
  else
    static_assert(kAlwaysFalse<R>, "this LibTorch's c10d::Reducer has a constructor dist/c10d_compat.h does not know");
}

}  // namespace tb::engine::dist::c10d_compat
