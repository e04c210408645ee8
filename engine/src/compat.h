// LibTorch version and build differences, wrapped once, so no other engine file tests a version.
//
// Debian's LibTorch 1.13.1 (CPU) and the LibTorch of the PyTorch 2.x CUDA wheel differ in a few APIs the
// engine needs. Every call that differs goes through here, so no other engine file checks
// TORCH_VERSION_MAJOR/MINOR. CUDA-only code is behind TUNEBENCH_TORCH_CUDA (0/1, set by CMake from the
// LibTorch it found): Debian installs ATen/cuda headers without CUDA libraries, so such code would compile
// there and fail to link.
//
// Private to engine/ (includes torch). Thread rules: autocast state is thread-local in LibTorch; the other
// setters are process-global and must only be called by the training thread at a step boundary.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

#ifndef TUNEBENCH_TORCH_CUDA
#define TUNEBENCH_TORCH_CUDA 0
#endif

#if TUNEBENCH_TORCH_CUDA
namespace at::cuda {
struct CUDAGraph;
}
#endif

namespace tb::engine::compat {

#if TUNEBENCH_TORCH_CUDA
// Begins a capture on the current stream that restricts only this thread's CUDA calls (>= 2.1:
// cudaStreamCaptureModeThreadLocal; 1.13 has no mode argument and captures in global mode).
void graph_capture_begin_thread_local(at::cuda::CUDAGraph& graph);
#endif

// --- device / build facts -------------------------------------------------------------------------------
bool cuda_available();          // false on a CPU-only build even when a driver exists
// Why cuda_available() is false, in words for a user ("no NVIDIA driver on this machine ..."); "" when true.
std::string cuda_unavailable_reason();
int64_t cuda_device_count();
std::string cuda_device_name(int64_t index = 0);
int64_t cuda_memory_bytes(int64_t index = 0);
int cuda_capability_major(int64_t index = 0);  // 0 when no CUDA device
bool cudnn_available();
std::string libtorch_version();  // "1.13.0"
std::string cuda_version();      // "" when not a CUDA build
std::string cudnn_version();     // "" when unavailable
std::string cpu_name();          // model name from /proc/cpuinfo, "" when unknown
int cpu_cores();

// --- autocast ---------------------------------------------------------------------------------------------
// 1.13: at::autocast::set_enabled / set_cpu_enabled + set_autocast_{gpu,cpu}_dtype.
// >= 2.4: set_autocast_enabled(DeviceType, bool) / set_autocast_dtype(DeviceType, dtype).
// RAII: enables autocast for `device_type` with `dtype` on this thread for the scope (a no-op when
// `enabled` is false), restores the previous state and clears the cast cache on exit, as Python's
// torch.autocast does when the outermost region ends.
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device_type, torch::ScalarType dtype, bool enabled);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  torch::DeviceType device_type_;
  bool active_ = false;
  bool prev_enabled_ = false;
  torch::ScalarType prev_dtype_ = torch::kFloat;
};
bool autocast_enabled(torch::DeviceType device_type);
torch::ScalarType autocast_dtype(torch::DeviceType device_type);

// --- optimizer --------------------------------------------------------------------------------------------
// torch::optim::Optimizer::zero_grad() takes no argument in 1.13 (memset) and defaults to set_to_none=true
// in 2.x, so the engine never calls it: this does either explicitly for a parameter list.
void zero_grad(const std::vector<torch::Tensor>& params, bool set_to_none);
// Whether the multi-tensor torch::_foreach_* kernels exist for this device (1.13: CPU + CUDA).
bool has_foreach_ops(torch::Device device);

// --- dynamic loss scaling (fp16) ------------------------------------------------------------------------
// _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ have only CUDA kernels in 1.13
// (CPU kernels arrived in 2.x), so fp16 training applies where this says true.
bool amp_fp16_supported(torch::Device device);
void amp_unscale_(std::vector<torch::Tensor>& grads, torch::Tensor& found_inf, const torch::Tensor& inv_scale);
void amp_update_scale_(torch::Tensor& scale, torch::Tensor& growth_tracker, const torch::Tensor& found_inf,
                       double growth_factor, double backoff_factor, int64_t growth_interval);

// --- data parallel ----------------------------------------------------------------------------------------
// From LibTorch 2.1 (pytorch/pytorch#103487) a static-graph Reducer counts the autograd hooks of no_sync
// backwards of its first iteration, and from the second iteration on never marks a parameter ready: the ranks
// stop all-reducing and silently part (seen with Debian 13's 2.6; DistributedDataParallel(static_graph=True)
// with no_sync() does the same, pytorch/pytorch#187732). 1.13 counts only synchronized iterations.
bool ddp_static_graph_breaks_no_sync();

// --- backend switches (process-global; CUDA builds only, no-ops elsewhere) -----------------------------
void set_tf32(bool enabled);  // cuBLAS + cuDNN TF32 (old setters; they warn but work after 2.9)
void set_cudnn_benchmark(bool enabled);
void synchronize(torch::Device device);  // cudaDeviceSynchronize on CUDA, nothing on CPU
// Hands the caching allocator's free blocks back to the device, a dropped CUDA graph's private pool among them.
// A destroyed graph's pool is only marked freeable; the allocator frees it on an empty-cache or when a cudaMalloc
// fails outside a capture. A failure inside the next capture may not free it, so each re-captured step kept its
// old pool until captures ran out of memory (an H200 tune: 114.6 GiB in private pools after ~10 captures).
void release_cached_device_memory();
// Makes GPU `index` this thread's current device (c10::cuda::set_device): where a bare torch::kCUDA goes, and
// the device NCCL's communicator binds to. Nothing on a CPU build.
void set_cuda_device(int index);

// Whether an exception is an out-of-memory error (c10::OutOfMemoryError on CUDA since 1.13; CPU
// allocation failures are c10::Error with "DefaultCPUAllocator: can't allocate memory").
bool is_oom(const std::exception& e);

}  // namespace tb::engine::compat
