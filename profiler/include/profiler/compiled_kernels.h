// Inductor's kernels back to their source ops and the user's lines. A kernel torch.compile generated runs under
// a name of Inductor's: a C++ kernel on a CPU as a range `graph_G_cpp_fused_add_relu_0` (only with Inductor's
// kernel profiling, which the launcher switches on for a traced run), a Triton kernel on a GPU as the kernel
// `triton_poi_fused_addmm_gelu_2`. Inductor's descriptive names list the ATen ops fused (sorted by name, not in
// the order they run); the launcher adds, per kernel, the ops its code says and the user's lines Inductor's
// provenance gives (python/tunebench/hooks/compile_kernels.py), which the compile lane keeps as one
// `names::kLaneKernel` marker per kernel (profiler/compile_lane.h). A trace without the lane (torch.profiler's
// own) still has the names: their ops, and no lines.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/compile_lane.h"
#include "profiler/trace.h"

namespace tb::prof {

// A marker's detail, one field a line:
//   cpp_fused_add_relu_0
//   range: graph_0_cpp_fused_add_relu_0          (when its runs are named otherwise)
//   ops: add, relu                               (when its code said them)
//   at /abs/train.py:19  y = torch.relu(y + 1)   (one per user line)
std::string kernel_marker_detail(const LaneKernel& k);
std::optional<LaneKernel> parse_kernel_marker(std::string_view detail);

// Whether a range on a CPU thread is a run of one of Inductor's C++ kernels: "graph_G_cpp_*" (kernel
// profiling's name) or "cpp_fused_*".
bool is_inductor_cpu_kernel_name(std::string_view name);
// Whether a GPU kernel is one of Inductor's Triton kernels: "triton_*". On a GPU, Inductor's launcher also enters
// a record_function of the kernel's name on the CPU while profiling: that range is the launch, not the kernel.
bool is_inductor_gpu_kernel_name(std::string_view name);
// Either (the GUI's details say the same of a kernel and of its launch).
bool is_inductor_kernel_name(std::string_view name);
// Inductor's name of a run's: "graph_0_cpp_fused_add_0" -> "cpp_fused_add_0" (others as they are).
std::string_view inductor_kernel_name(std::string_view run_name);
// The ops a descriptive name says: "triton_poi_fused_addmm_gelu_2" -> {addmm, gelu},
// "cpp_fused_add_mul_relu_sum_threshold_backward_0" -> {add, mul, relu, sum, threshold_backward} (an ATen
// name with underscores is known as one); none for a name without "fused_".
std::vector<std::string> ops_of_kernel_name(std::string_view name);

// The kernels the trace's compile lanes describe, by the name their runs carry (a merged trace's ranks: the
// first of a name stands, the others' lines added).
std::map<std::string, LaneKernel, std::less<>> lane_kernels(const Trace& trace);

// What the GUI's details say of a run of that kernel: its ops (the name's when the code said none) and its
// user lines, a line each.
std::string kernel_note(const LaneKernel& k);

}  // namespace tb::prof
