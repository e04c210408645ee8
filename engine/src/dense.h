// Dense (fully connected) layers on the CPU: the engine's kernel choice for y = x W^T + b.
//
// Why: Debian's LibTorch 1.13 sends at::linear on CPU to the system BLAS, which on a stock Debian 12 is the
// reference netlib BLAS (about 5 GFLOP/s; `torch.__config__.show()` says BLAS_INFO=generic). The same
// LibTorch carries oneDNN, whose JIT-compiled 1x1 convolution computes the identical product 7-20x faster
// on the same cores (measured on mnist_cnn's fc1: 135 ms vs 19 ms forward+backward, 64x9216x128). PyTorch
// eager users of that LibTorch get the slow path; the engine picks the fast one, the way cuDNN picks a
// convolution algorithm. Same math and parameters; only the floating-point summation order differs.
//
// The choice is made once per process by timing both paths on a probe shape (`auto`), or forced with
// TUNEBENCH_CPU_DENSE=blas|onednn|auto. It applies to float32 CPU tensors with autocast off; CUDA tensors
// and autocast (bf16) regions always use at::linear (oneDNN's bf16 convolution needs AVX-512, and under
// autocast LibTorch's own bf16 GEMM is used either way). Thread-safe: the probe runs under a static
// initializer the first time any dense layer runs on the CPU.
//
// Private to engine/ (includes torch).
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include <string>

namespace tb::engine {

enum class CpuDensePath { Blas, OneDnn };

// y = x W^T + b for x of shape [..., in]; `bias` may be undefined.
torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// The same product through a given path, whatever the process chose (tests compare the two).
torch::Tensor dense_via(CpuDensePath path, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// TorchScript models: rewrites every aten::linear in the module's compilation unit (its methods, its
// submodules' methods and the functions they call) into the op tunebench::dense, which calls dense() and
// is differentiated through it. Must run before the module's first forward (the executor caches its plan).
// Returns the number of linear calls rewritten.
int rewrite_linear_to_dense(torch::jit::Module& module);

// The process-wide choice (probing on first call) and a one-line reason for reports and `hello`,
// e.g. "onednn (probe: blas 13.1 ms, onednn 1.2 ms for 64x2048x256)".
CpuDensePath cpu_dense_path();
std::string cpu_dense_description();

}  // namespace tb::engine
