#include "compat.h"
#include "torch_version.h"

#include <ATen/autocast_mode.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <dlfcn.h>

#include <fstream>
#include <thread>

#if TUNEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace tb::engine::compat {

bool cuda_available() {
#if TUNEBENCH_TORCH_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

std::string cuda_unavailable_reason() {
#if TUNEBENCH_TORCH_CUDA
  if (cuda_available()) return "";
  // The CUDA runtime finds the GPU through the driver's libcuda: without it there is nothing to ask.
  void* driver = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return "no NVIDIA driver on this machine: libcuda.so.1 is not installed";
  ::dlclose(driver);
  return "the NVIDIA driver reports no usable GPU";
#else
  return "this LibTorch build is CPU-only";
#endif
}

int64_t cuda_device_count() { return cuda_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0; }

std::string cuda_device_name(int64_t index) {
#if TUNEBENCH_TORCH_CUDA
  if (cuda_available()) return at::cuda::getDeviceProperties(index)->name;
#endif
  (void)index;
  return "";
}

int64_t cuda_memory_bytes(int64_t index) {
#if TUNEBENCH_TORCH_CUDA
  if (cuda_available()) return static_cast<int64_t>(at::cuda::getDeviceProperties(index)->totalGlobalMem);
#endif
  (void)index;
  return 0;
}

int cuda_capability_major(int64_t index) {
#if TUNEBENCH_TORCH_CUDA
  if (cuda_available()) return at::cuda::getDeviceProperties(index)->major;
#endif
  (void)index;
  return 0;
}

bool cudnn_available() { return cuda_available() && torch::cuda::cudnn_is_available(); }

std::string libtorch_version() { return TORCH_VERSION; }

std::string cuda_version() {
#if TUNEBENCH_TORCH_CUDA
  long v = at::detail::getCUDAHooks().versionCUDART();
  if (v > 0) return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
#endif
  return "";
}

std::string cudnn_version() {
#if TUNEBENCH_TORCH_CUDA
  if (cudnn_available()) {
    // CUDNN_VERSION: major*1000 + minor*100 + patch before cuDNN 9, major*10000 + minor*100 + patch since.
    const long v = at::detail::getCUDAHooks().versionCuDNN();
    const long major = v >= 90000 ? v / 10000 : v / 1000, minor = v >= 90000 ? (v / 100) % 100 : (v % 1000) / 100;
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
  }
#endif
  return "";
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) return line.substr(line.find_first_not_of(' ', pos + 1));
    }
  }
  return "";
}

int cpu_cores() { return static_cast<int>(std::thread::hardware_concurrency()); }

// ---------------------------------------------------------------------------------------------------------
namespace {
bool get_enabled(torch::DeviceType t) {
#if TB_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(t);
#else
  return t == torch::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}
void set_enabled(torch::DeviceType t, bool on) {
#if TB_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(t, on);
#else
  if (t == torch::kCPU)
    at::autocast::set_cpu_enabled(on);
  else
    at::autocast::set_enabled(on);
#endif
}
torch::ScalarType get_dtype(torch::DeviceType t) {
#if TB_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(t);
#else
  return t == torch::kCPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}
void set_dtype(torch::DeviceType t, torch::ScalarType d) {
#if TB_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(t, d);
#else
  if (t == torch::kCPU)
    at::autocast::set_autocast_cpu_dtype(d);
  else
    at::autocast::set_autocast_gpu_dtype(d);
#endif
}
}  // namespace

AutocastGuard::AutocastGuard(torch::DeviceType device_type, torch::ScalarType dtype, bool enabled)
    : device_type_(device_type), active_(enabled) {
  if (!active_) return;
  prev_enabled_ = get_enabled(device_type_);
  prev_dtype_ = get_dtype(device_type_);
  set_enabled(device_type_, true);
  set_dtype(device_type_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // The weight casts are cached for the region; Python clears the cache when the outermost region exits.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_type_, prev_enabled_);
  set_dtype(device_type_, prev_dtype_);
}

bool autocast_enabled(torch::DeviceType device_type) { return get_enabled(device_type); }
torch::ScalarType autocast_dtype(torch::DeviceType device_type) { return get_dtype(device_type); }

// ---------------------------------------------------------------------------------------------------------
void zero_grad(const std::vector<torch::Tensor>& params, bool set_to_none) {
  for (const auto& p : params) {
    auto& g = const_cast<torch::Tensor&>(p).mutable_grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      g = torch::Tensor();
    } else {
      if (g.grad_fn()) {
        g = g.detach();
      } else {
        g.requires_grad_(false);
      }
      g.zero_();
    }
  }
}

bool has_foreach_ops(torch::Device device) { return device.is_cpu() || device.is_cuda(); }

bool amp_fp16_supported(torch::Device device) {
#if TB_TORCH_AT_LEAST(2, 3)
  (void)device;
  return true;
#else
  return device.is_cuda();
#endif
}

bool ddp_static_graph_breaks_no_sync() {
#if TB_TORCH_AT_LEAST(2, 1)
  return true;
#else
  return false;
#endif
}

void amp_unscale_(std::vector<torch::Tensor>& grads, torch::Tensor& found_inf, const torch::Tensor& inv_scale) {
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
}

void amp_update_scale_(torch::Tensor& scale, torch::Tensor& growth_tracker, const torch::Tensor& found_inf,
                       double growth_factor, double backoff_factor, int64_t growth_interval) {
  at::_amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval);
}

#if TUNEBENCH_TORCH_CUDA
void graph_capture_begin_thread_local(at::cuda::CUDAGraph& graph) {
#if TB_TORCH_AT_LEAST(2, 1)
  graph.capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);
#else
  graph.capture_begin();
#endif
}
#endif

void set_tf32(bool enabled) {
  if (!cuda_available()) return;
  at::globalContext().setAllowTF32CuBLAS(enabled);
  at::globalContext().setAllowTF32CuDNN(true);  // PyTorch's default; the knob is the matmul switch
}

void set_cudnn_benchmark(bool enabled) {
  if (!cuda_available()) return;
  at::globalContext().setBenchmarkCuDNN(enabled);
}

void synchronize(torch::Device device) {
#if TUNEBENCH_TORCH_CUDA
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
#else
  (void)device;
#endif
}

void release_cached_device_memory() {
#if TUNEBENCH_TORCH_CUDA
  if (torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

void set_cuda_device(int index) {
#if TUNEBENCH_TORCH_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

bool is_oom(const std::exception& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  std::string what = e.what();
  return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos;
}

}  // namespace tb::engine::compat
