// What the analyses recognise by name (private): step, data-wait and phase ranges of our traces and of
// PyTorch's profiler, and the classes of kernels and runtime calls. Kernel names are matched on whole tokens
// (split at anything not a letter or digit), so "fbgemm" is not a GEMM and "convert" is not a convolution.
#pragma once

#include <cstdint>
#include <string_view>

namespace tb::prof::name_class {

bool is_step(std::string_view n);       // ours `step`, Kineto `ProfilerStep#N`
bool is_data_wait(std::string_view n);  // ours, DataLoader __next__, `## data_load ##`
bool is_forward(std::string_view n);    // ours, `## forward ##`, DDP forward, torch.compile's CompiledFunction
bool is_backward(std::string_view n);
bool is_optimizer(std::string_view n);
// Time between training iterations (validation, checkpoints, logging), as a script's trace marks it.
bool is_outside_training(std::string_view n);
// TuneBench's own time on a host thread: the launcher's trace chunk boundaries, the recorder's and collector's
// work ("TuneBench: ..." ranges).
bool is_profiler_own(std::string_view n);
// Steps a sampled trace did not record ("TuneBench: untraced steps": the script ran them between two chunks,
// unwatched): not in the analysed window at all, neither the program's time nor the profiler's.
bool is_untraced(std::string_view n);
// Step number from the arg, else from "#N" in the name, else `ordinal`.
int64_t step_number(std::string_view n, int64_t arg, int64_t ordinal);

bool is_matmul_conv_kernel(std::string_view n);  // cuBLAS/cuDNN/CUTLASS GEMM and convolution kernels
bool is_tensor_core_kernel(std::string_view n);
bool is_communication_kernel(std::string_view n);  // NCCL, Gloo, collectives, send/recv

bool is_kernel_launch_api(std::string_view n);  // cudaLaunchKernel, cuLaunchKernel, ... (enqueue a kernel)
// A runtime/driver call that makes the host wait on something other than the GPU's queue (allocation, stream
// creation, module loading, device queries), or any call lasting >= 1 ms (lazy kernel loading in the first
// launches): GPU idle while the host is in one is not a launch gap.
bool is_slow_runtime(std::string_view n, int64_t duration_ns);

}  // namespace tb::prof::name_class
