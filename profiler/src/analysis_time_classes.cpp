// time_classes (profiler/time_classes.h): the one list of the classes of time.
#include "profiler/time_classes.h"

namespace tb::prof {
namespace {

// The figures the GPU classes are made of, from a whole window or from one step.
struct GpuFigures {
  int64_t busy, compute, comm_exposed;
  int64_t loader_stall, sync_idle, runtime_idle, launch_gap, launch_overhead, edge, event_wait, other_idle, profiler;
};

std::vector<TimeClass> gpu_classes(const GpuFigures& f) {
  // Busy is the union of compute, communication and memory activity: what compute and the communication it
  // did not hide leave of it is memcpy/memset under no kernel (memory_exposed_ns), so the three sum to busy.
  const int64_t memory = f.busy - f.compute - f.comm_exposed;
  return {
      {"compute", "compute", f.compute, true},
      {"comm_exposed", "communication (exposed)", f.comm_exposed, true},
      {"memory_exposed", "memcpy/memset", memory, true},
      {"loader_stall", "loader stall", f.loader_stall, false},
      {"sync_idle", "after host sync", f.sync_idle, false},
      {"runtime_idle", "runtime calls", f.runtime_idle, false},
      {"launch_gap", "launch gap", f.launch_gap, false},
      {"launch_overhead", "launch overhead", f.launch_overhead, false},
      {"edge_idle", "before/after kernels", f.edge, false},
      {"event_wait", "waiting on another stream", f.event_wait, false},
      {"other_idle", "other idle", f.other_idle, false},
      {"profiler", "profiler (TuneBench)", f.profiler, false},
  };
}

}  // namespace

std::vector<TimeClass> time_classes(const AnalysisResult& r) {
  if (r.has_gpu)
    return gpu_classes({r.gpu_busy_ns, r.compute_ns, r.comm_exposed_ns, r.loader_stall_ns, r.sync_idle_ns,
                        r.runtime_idle_ns, r.launch_gap_ns, r.launch_overhead_ns, r.lead_in_ns + r.tail_ns,
                        r.event_wait_ns, r.other_idle_ns, r.profiler_ns});
  // CPU-only: the same fields where they exist (the data wait is the loader stall, a data-parallel rank's
  // wait for Gloo's all-reduce its exposed communication); what none of them holds is the training thread's
  // own work and whatever else it did.
  return {
      {"loader_stall", "waiting for data", r.loader_stall_ns, false},
      {"comm_exposed", "waiting for all-reduce", r.comm_exposed_ns, false},
      {"outside_training", "outside training", r.outside_training_ns, false},
      {"profiler", "profiler (TuneBench)", r.profiler_ns, false},
      {"training_busy_other", "training thread busy / other",
       r.traced_ns() - r.loader_stall_ns - r.comm_exposed_ns - r.outside_training_ns - r.profiler_ns, false},
  };
}

std::vector<TimeClass> time_classes(const StepBreakdown& s) {
  return gpu_classes({s.gpu_busy_ns, s.compute_ns, s.comm_exposed_ns, s.loader_stall_ns, s.sync_idle_ns,
                      s.runtime_idle_ns, s.launch_gap_ns, s.launch_overhead_ns, s.edge_idle_ns, s.event_wait_ns,
                      s.other_idle_ns, s.profiler_ns});
}

}  // namespace tb::prof
