// Inductor's generated kernels as they ran (docs/analysis.md, "Compiled kernels"). A compiled region's time says
// how fast the compiled code is; its kernels say where that time goes and, through the compile lane's markers,
// which lines of the user's code each one computes. C++ kernels are ranges on the analysed process's threads
// (Inductor's kernel profiling, which the launcher switches on for a traced run); Triton kernels are kernels on
// its device. A name is looked at once: a trace repeats a few names a million times.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "analysis_kernels.h"
#include "profiler/compiled_kernels.h"

namespace tb::prof::detail {
namespace {

struct Calls {
  std::string name;
  bool gpu = false;
  uint64_t calls = 0, elsewhere = 0;
  int64_t total_ns = 0;
};

}  // namespace

void add_compiled_kernels(const Trace& trace, const Scope& sc, const StepSpans& steps, CompiledKernels& out) {
  constexpr int32_t kUnseen = -2, kOther = -1;
  // A name's slot on each side: a Triton kernel's name is also its launch's range on the CPU, which is no run.
  std::vector<int32_t> slot_of[2] = {std::vector<int32_t>(trace.name_count(), kUnseen),
                                     std::vector<int32_t>(trace.name_count(), kUnseen)};
  std::vector<Calls> kernels;
  auto slot = [&](NameId name, bool gpu) {
    int32_t& s = slot_of[gpu][name];
    if (s != kUnseen) return s;
    const std::string_view n = trace.name(name);
    if (!(gpu ? is_inductor_gpu_kernel_name(n) : is_inductor_cpu_kernel_name(n))) return s = kOther;
    s = int32_t(kernels.size());
    kernels.push_back({std::string(n), gpu, 0, 0, 0});
    return s;
  };
  for (const Track& t : trace.tracks()) {
    const bool gpu = t.kind() == TrackKind::GpuStream;
    if (gpu ? (sc.device >= 0 && t.pid() != sc.device) : !in_scope(t, sc)) continue;
    for (const Event& e : t.events()) {
      if ((gpu ? e.kind != EventKind::Kernel : e.kind != EventKind::Range) || e.name >= trace.name_count()) continue;
      const int32_t s = slot(e.name, gpu);
      if (s < 0) continue;
      Calls& c = kernels[size_t(s)];
      if (!steps.holds(e.start_ns)) {
        ++c.elsewhere;
        continue;
      }
      ++c.calls;
      c.total_ns += e.duration_ns();
    }
  }
  kernels.erase(std::remove_if(kernels.begin(), kernels.end(), [](const Calls& c) { return !c.calls; }),
                kernels.end());
  if (kernels.empty()) return;
  out.steps = steps.steps;
  out.base_ns = steps.base_ns;
  out.kernels = kernels.size();
  for (const Calls& c : kernels) out.calls += c.calls, out.total_ns += c.total_ns;
  out.share = steps.base_ns > 0 ? double(out.total_ns) / double(steps.base_ns) : 0;
  std::sort(kernels.begin(), kernels.end(), [](const Calls& a, const Calls& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  if (kernels.size() > kTopCompiledKernels) kernels.resize(kTopCompiledKernels);
  const auto lane = lane_kernels(trace);
  for (const Calls& c : kernels) {
    CompiledKernelStat& row = out.rows.emplace_back();
    row.name = c.name;
    row.kernel = std::string(inductor_kernel_name(c.name));
    row.gpu = c.gpu;
    row.calls = c.calls;
    row.calls_elsewhere = c.elsewhere;
    row.calls_per_step = steps.steps ? double(c.calls) / double(steps.steps) : 0;
    row.total_ns = c.total_ns;
    row.share = steps.base_ns > 0 ? double(c.total_ns) / double(steps.base_ns) : 0;
    if (const auto it = lane.find(c.name); it != lane.end()) {
      row.kernel = it->second.name;
      row.ops = it->second.ops;
      row.lines = it->second.lines;
    }
    if (row.ops.empty()) {
      row.ops = ops_of_kernel_name(row.kernel);
      row.ops_from_name = !row.ops.empty();
    }
  }
}

}  // namespace tb::prof::detail
