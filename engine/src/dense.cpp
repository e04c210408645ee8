#include "dense.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>

#include "compat.h"

namespace tb::engine {
namespace {

torch::Tensor onednn_dense(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const int64_t in = weight.size(1), out = weight.size(0);
  auto sizes = x.sizes().vec();
  // A [rows, in, 1, 1] input and an [out, in, 1, 1] kernel: a 1x1 convolution is exactly the GEMM.
  auto y = at::conv2d(x.reshape({-1, in, 1, 1}), weight.view({out, in, 1, 1}), bias);
  sizes.back() = out;
  return y.view(sizes);
}

struct Choice {
  CpuDensePath path = CpuDensePath::Blas;
  std::string description;
};

double best_ms(const std::function<void()>& f) {
  double best = 1e30;
  f();  // warm: oneDNN JIT-compiles its kernel on the first call
  for (int i = 0; i < 3; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

Choice choose() {
  const char* env = std::getenv("TUNEBENCH_CPU_DENSE");
  const std::string mode = env ? env : "auto";
  if (mode == "blas") return {CpuDensePath::Blas, "blas (TUNEBENCH_CPU_DENSE=blas)"};
  if (!at::hasMKLDNN()) return {CpuDensePath::Blas, "blas (this LibTorch has no oneDNN)"};
  if (mode == "onednn") return {CpuDensePath::OneDnn, "onednn (TUNEBENCH_CPU_DENSE=onednn)"};
  if (mode != "auto")
    std::fprintf(stderr, "tunebench: TUNEBENCH_CPU_DENSE=%s is not blas|onednn|auto; probing\n", mode.c_str());
  // The probe: a mid-sized training GEMM (rows x in x out). Forward only; backward uses the same kernels.
  constexpr int64_t rows = 64, in = 2048, out = 256;
  torch::NoGradGuard no_grad;
  // Deterministic operands: the probe runs inside the first forward pass and must not draw from the global
  // RNG, which seeds dropout masks and would shift every later draw.
  auto x = torch::linspace(-1.0, 1.0, rows * in).reshape({rows, in});
  auto w = torch::linspace(1.0, -1.0, out * in).reshape({out, in});
  auto b = torch::linspace(-0.5, 0.5, out);
  const double blas = best_ms([&] { (void)at::linear(x, w, b); });
  const double onednn = best_ms([&] { (void)onednn_dense(x, w, b); });
  // Prefer the stock path unless oneDNN is clearly faster: MKL or OpenBLAS builds win or tie there.
  const bool use_onednn = onednn * 1.25 < blas;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s (probe %lldx%lldx%lld: blas %.2f ms, onednn %.2f ms)",
                use_onednn ? "onednn" : "blas", static_cast<long long>(rows), static_cast<long long>(in),
                static_cast<long long>(out), blas, onednn);
  return {use_onednn ? CpuDensePath::OneDnn : CpuDensePath::Blas, buf};
}

const Choice& choice() {
  static const Choice c = choose();
  return c;
}

}  // namespace

CpuDensePath cpu_dense_path() { return choice().path; }
std::string cpu_dense_description() { return choice().description; }

torch::Tensor dense_via(CpuDensePath path, const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& bias) {
  return path == CpuDensePath::OneDnn ? onednn_dense(x, weight, bias) : at::linear(x, weight, bias);
}

torch::Tensor dense(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (x.is_cuda() || x.scalar_type() != torch::kFloat || weight.scalar_type() != torch::kFloat ||
      compat::autocast_enabled(torch::kCPU) || cpu_dense_path() == CpuDensePath::Blas)
    return at::linear(x, weight, bias);
  return onednn_dense(x, weight, bias);
}

int rewrite_linear_to_dense(torch::jit::Module& module) {
  torch::jit::SubgraphRewriter rewriter;
  rewriter.RegisterRewritePattern(R"(
    graph(%x, %w, %b):
      %r = aten::linear(%x, %w, %b)
      return (%r))",
                                  R"(
    graph(%x, %w, %b):
      %r = tunebench::dense(%x, %w, %b)
      return (%r))");
  const auto dense_kind = c10::Symbol::fromQualString("tunebench::dense");
  int rewritten = 0;
  // Submodules may live in their own compilation units (modules built in C++ each get one); a loaded file
  // shares one. Each function's graph is rewritten once.
  std::set<const torch::jit::Graph*> seen;
  for (const torch::jit::Module& sub : module.modules()) {
    for (torch::jit::Function* f : sub._ivalue()->compilation_unit()->get_functions()) {
      if (!f->isGraphFunction()) continue;
      auto graph = torch::jit::toGraphFunction(*f).graph();
      if (!seen.insert(graph.get()).second) continue;
      rewriter.runOnGraph(graph);
      for (const torch::jit::Node* n : graph->nodes()) rewritten += n->kind() == dense_kind;
    }
  }
  return rewritten;
}

}  // namespace tb::engine

// The op TorchScript graphs call after rewrite_linear_to_dense(). Registered as a composite kernel: autograd
// differentiates the ops dense() runs (conv2d or linear), so no backward of its own is needed.
TORCH_LIBRARY(tunebench, m) {
  m.def("dense(Tensor x, Tensor weight, Tensor? bias) -> Tensor",
        [](const at::Tensor& x, const at::Tensor& weight, const c10::optional<at::Tensor>& bias) {
          return tb::engine::dense(x, weight, bias.has_value() ? *bias : at::Tensor());
        });
}
