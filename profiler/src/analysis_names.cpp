#include "analysis_names.h"

#include <cctype>
#include <string>
#include <vector>

#include "profiler/range_names.h"

namespace tb::prof::name_class {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Lower-cased tokens of a kernel name: runs of letters and digits.
std::vector<std::string> tokens(std::string_view n) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(std::move(cur));
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

}  // namespace

bool is_step(std::string_view n) { return n == names::kStep || starts_with(n, "ProfilerStep#"); }
bool is_outside_training(std::string_view n) { return n == "## outside training ##"; }
bool is_untraced(std::string_view n) { return n == "TuneBench: untraced steps"; }
bool is_profiler_own(std::string_view n) { return starts_with(n, "TuneBench: ") && !is_untraced(n); }

bool is_data_wait(std::string_view n) {
  return n == names::kDataWait || n == "## data_load ##" ||
         (starts_with(n, "enumerate(DataLoader)") && ends_with(n, "__next__"));
}
bool is_forward(std::string_view n) {
  return n == names::kForward || n == "## forward ##" || starts_with(n, "DistributedDataParallel.forward") ||
         n == "CompiledFunction";
}
bool is_backward(std::string_view n) {
  return n == names::kBackward || n == "## backward ##" || starts_with(n, "autograd::engine::evaluate_function");
}
bool is_optimizer(std::string_view n) {
  return n == names::kOptimizer || n == "## optimizer ##" || starts_with(n, "Optimizer.step#") ||
         starts_with(n, "Optimizer.zero_grad#");
}

int64_t step_number(std::string_view n, int64_t arg, int64_t ordinal) {
  constexpr int64_t kNoArgValue = INT64_MIN;
  if (arg != kNoArgValue) return arg;
  auto pos = n.find('#');
  if (pos != std::string_view::npos) {
    int64_t v = 0;
    bool any = false;
    for (size_t i = pos + 1; i < n.size() && n[i] >= '0' && n[i] <= '9' && v < (INT64_MAX / 10 - 10); ++i) {
      v = v * 10 + (n[i] - '0');
      any = true;
    }
    if (any) return v;
  }
  return ordinal;
}

bool is_matmul_conv_kernel(std::string_view n) {
  for (const std::string& t : tokens(n)) {
    // GEMM/GEMV anywhere in a token (sgemm, s16816gemm, gemmsn, gemv2t), except FBGEMM's own kernels
    // (embedding, permute, quantize), which only carry the library's name.
    if ((contains(t, "gemm") || contains(t, "gemv")) && !starts_with(t, "fbgemm")) return true;
    if (starts_with(t, "conv") && !starts_with(t, "convert")) return true;  // convolve, conv2d, convolution
    if (t == "scudnn" || t == "hcudnn" || t == "xmma" || t == "wgrad" || t == "dgrad" || t == "fprop" ||
        t == "winograd" || t == "matmul" || t == "implicit" || starts_with(t, "cutlass"))
      return true;
  }
  return false;
}

bool is_tensor_core_kernel(std::string_view n) {
  static const char* kTok[] = {"tensorop", "hmma", "xmma", "wgmma", "imma", "tf32", "tc", "sm90", "sm100"};
  static const char* kSub[] = {"884", "1688", "16816", "16832", "s161616", "h161616", "tensorop", "wgmma", "hmma"};
  for (const std::string& t : tokens(n)) {
    for (const char* p : kTok)
      if (t == p) return true;
    for (const char* p : kSub)
      if (contains(t, p)) return true;
    if (t == "fp16" || t == "bf16" || t == "f16") return true;
  }
  return false;
}

bool is_communication_kernel(std::string_view n) {
  for (const std::string& t : tokens(n)) {
    if (starts_with(t, "nccl") || starts_with(t, "gloo") || starts_with(t, "rccl")) return true;
    if (t == "allreduce" || t == "allgather" || t == "reducescatter" || t == "alltoall" || t == "sendrecv")
      return true;
  }
  const std::string_view k[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "c10d::"};
  for (std::string_view p : k)
    if (contains(n, p)) return true;
  return false;
}

bool is_kernel_launch_api(std::string_view n) {
  return starts_with(n, "cudaLaunchKernel") || starts_with(n, "cuLaunchKernel") ||
         starts_with(n, "cudaLaunchCooperativeKernel") || starts_with(n, "cuLaunchCooperativeKernel") ||
         n == "cudaGraphLaunch" || n == "cuGraphLaunch" || starts_with(n, "cudaLaunch") || n == "cuLaunch";
}

bool is_slow_runtime(std::string_view n, int64_t duration_ns) {
  if (duration_ns >= 1000000) return true;
  static const char* kPrefix[] = {"cudaMalloc",       "cudaFree",          "cudaHostAlloc",    "cudaHostRegister",
                                  "cudaHostUnregister", "cudaStreamCreate", "cudaStreamDestroy", "cudaEventCreate",
                                  "cudaEventDestroy", "cudaGetDeviceProperties", "cudaDeviceReset", "cudaSetDevice",
                                  "cudaGetSymbolAddress", "cudaFuncSetAttribute", "cudaMemPool", "cudaGraphInstantiate",
                                  "cuModuleLoad",     "cuLibraryLoad",     "cuMemAlloc",       "cuMemFree",
                                  "cuMemHostAlloc",   "cuMemCreate",       "cuMemMap",         "cuCtxCreate",
                                  "cuStreamCreate",   "cuGraphInstantiate"};
  for (const char* p : kPrefix)
    if (starts_with(n, p)) return true;
  return false;
}

}  // namespace tb::prof::name_class
