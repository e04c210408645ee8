// `tunebench-cli analyze`'s readable summary (analyze_print.h).
#include "analyze_print.h"

#include "profiler/recording_cost.h"
#include "profiler/time_classes.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace tb::cli {
namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double pct(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * static_cast<double>(part) / whole : 0.0; }

std::string shorten(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 3) + "...";
}

void line(FILE* out, const std::string& label, int64_t ns, int64_t W, const std::string& extra = {}) {
  std::fprintf(out, "%-34s %10.3f ms %6.1f%%%s%s\n", label.c_str(), ms(ns), pct(ns, W), extra.empty() ? "" : "  ", extra.c_str());
}

// The profiler's own time: how often, and its longest pause beside a step (a chunk boundary under one step's
// time disturbs no more than one step would).
std::string profiler_detail(const prof::AnalysisResult& r) {
  char b[220];
  // A sampled trace's pauses are paid once per chunk: what they cost the run is their share of all of it,
  // the untraced steps included (the share beside them is of the traced time only).
  if (r.untraced_ns > 0 && r.window.length() > 0)
    std::snprintf(b, sizeof b, "(%u intervals, longest %.1f ms = %.2f steps; not the program's; %.1f%% of the run, "
                  "untraced steps included)", r.profiler_count, ms(r.profiler_longest_ns),
                  r.step_median_ns > 0 ? static_cast<double>(r.profiler_longest_ns) / r.step_median_ns : 0.0,
                  100.0 * static_cast<double>(r.profiler_ns) / static_cast<double>(r.window.length()));
  else if (r.step_median_ns > 0)
    std::snprintf(b, sizeof b, "(%u intervals, longest %.1f ms = %.2f steps; not the program's)", r.profiler_count,
                  ms(r.profiler_longest_ns), static_cast<double>(r.profiler_longest_ns) / r.step_median_ns);
  else
    std::snprintf(b, sizeof b, "(%u intervals, longest %.1f ms; not the program's)", r.profiler_count,
                  ms(r.profiler_longest_ns));
  return b;
}

std::string outside_detail(const prof::AnalysisResult& r) {
  char b[64];
  std::snprintf(b, sizeof b, "(%u ranges: validation, checkpoints)", r.outside_training_count);
  return b;
}

// `analyze`'s words for each class of prof::time_classes (longer than the GUI's legend) and what it says
// beside it; `shown` false leaves the line out (nothing of that kind in this trace).
struct ClassLine {
  const char* text;
  std::string extra;
  bool shown = true;
};

ClassLine gpu_class_line(const prof::AnalysisResult& r, const prof::TimeClass& c) {
  char b[160];
  const std::string_view id = c.id;
  if (id == "compute") return {"compute kernels", {}};
  if (id == "comm_exposed") {
    std::snprintf(b, sizeof b, "(of %.3f ms communication, %.0f%% overlapped)", ms(r.comm_ns), r.comm_overlap * 100);
    return {"communication not overlapped", b, r.comm_ns > 0};
  }
  if (id == "memory_exposed") return {"memcpy/memset alone", {}, c.ns > 0};
  if (id == "loader_stall") {
    std::snprintf(b, sizeof b, "(%u intervals)", r.loader_stall_count);
    return {"waiting for the data loader", c.ns ? b : ""};
  }
  if (id == "sync_idle") return {"after a host sync", {}};
  if (id == "runtime_idle") return {"host in alloc/setup CUDA calls", {}};
  if (id == "launch_gap") {
    std::snprintf(b, sizeof b, "(%u gaps >= %.1f us)", r.launch_gap_count, static_cast<double>(r.min_gap_ns) / 1000.0);
    return {"host late to launch (launch gap)", b};
  }
  if (id == "launch_overhead") {
    std::snprintf(b, sizeof b, "(gaps < %.1f us)", static_cast<double>(r.min_gap_ns) / 1000.0);
    return {"launch overhead", b};
  }
  if (id == "event_wait") {
    std::snprintf(b, sizeof b, "(%u intervals)", r.event_wait_count);
    return {"waiting on another stream (event wait)", r.event_wait_count ? b : ""};
  }
  if (id == "other_idle") return {"other (no named cause)", {}};
  if (id == "profiler") return {"profiler (TuneBench)", profiler_detail(r), c.ns > 0};
  return {nullptr, {}};  // a class these words do not know yet: its GUI label
}

ClassLine cpu_class_line(const prof::AnalysisResult& r, const prof::TimeClass& c) {
  char b[160];
  const std::string_view id = c.id;
  if (id == "loader_stall") {
    std::snprintf(b, sizeof b, "(%u intervals)", r.loader_stall_count);
    return {"training thread waiting for data", b};
  }
  if (id == "comm_exposed") {
    // Host collectives (Gloo, data parallel): what backward did not hide.
    std::snprintf(b, sizeof b, "(of %.3f ms all-reduce, %.0f%% overlapped)", ms(r.comm_ns),
                  std::max(0.0, r.comm_overlap) * 100);
    return {"training thread waiting for all-reduce", b, r.comm_ns > 0};
  }
  if (id == "outside_training") return {"outside training iterations", outside_detail(r), c.ns > 0};
  if (id == "profiler") return {"profiler (TuneBench)", profiler_detail(r), c.ns > 0};
  if (id == "training_busy_other") return {"training thread busy / other", {}};
  return {nullptr, {}};
}

// The window by class, in prof::time_classes' order: with a GPU, its busy classes under "GPU busy" and the
// idle causes under "GPU idle"; CPU-only, the training thread's time.
void print_time_classes(const prof::AnalysisResult& r, FILE* out) {
  const int64_t W = r.traced_ns();
  const char* indent = r.has_gpu ? "  " : "";
  if (r.has_gpu) line(out, "GPU busy", r.gpu_busy_ns, W);
  else std::fprintf(out, "no GPU activity: CPU-only analysis\n");
  bool idle_said = false;
  for (const auto& c : prof::time_classes(r)) {
    if (r.has_gpu && !c.busy && !idle_said) {
      char b[64];
      std::snprintf(b, sizeof b, "(%u idle intervals)", r.idle_interval_count);
      line(out, "GPU idle", r.gpu_idle_ns, W, b);
      idle_said = true;
    }
    if (c.id == "edge_idle") {  // one class, whose two edges `analyze` says apart
      line(out, "  before the first kernel", r.lead_in_ns, W);
      line(out, "  after the last kernel", r.tail_ns, W);
      continue;
    }
    const ClassLine l = r.has_gpu ? gpu_class_line(r, c) : cpu_class_line(r, c);
    if (l.shown) line(out, indent + (l.text ? std::string(l.text) : std::string(c.label)), c.ns, W, l.extra);
  }
}

void print_steps(const prof::AnalysisResult& r, FILE* out) {
  std::fprintf(out, "\nper step (ms; host phases on the step's CPU time, GPU columns on the GPU work it launched)\n");
  if (!r.has_gpu) {
    const bool comm = r.comm_ns > 0;  // data parallel: the all-reduce and the part backward waited for
    const bool own = r.profiler_ns > 0;  // TuneBench's own pauses in the steps: their column
    std::fprintf(out, "%8s %9s %9s %8s %8s %8s %8s %8s", "step", "duration", "data_wait", "h2d", "forward", "backward",
                 "optim", "sync");
    if (comm) std::fprintf(out, " %9s %9s", "allreduce", "comm_wait");
    if (own) std::fprintf(out, " %9s", "profiler");
    std::fputc('\n', out);
    for (const auto& s : r.steps) {
      std::fprintf(out, "%8lld %9.3f %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f", static_cast<long long>(s.index),
                   ms(s.duration_ns()), ms(s.data_wait_ns), ms(s.h2d_ns), ms(s.forward_ns), ms(s.backward_ns),
                   ms(s.optimizer_ns), ms(s.sync_ns));
      if (comm) std::fprintf(out, " %9.3f %9.3f", ms(s.comm_ns), ms(s.comm_exposed_ns));
      if (own) std::fprintf(out, " %9.3f", ms(s.profiler_ns));
      std::fputc('\n', out);
    }
    return;
  }
  const bool own = r.profiler_ns > 0;
  std::fprintf(out, "%8s %9s %9s %8s %8s %8s %9s %8s %8s %8s %8s %8s %8s %7s%s\n", "step", "duration", "data_wait",
               "forward", "backward", "optim", "gpu_busy", "comm_exp", "stall", "sync", "launch", "wait+other", "edge",
               "kernels", own ? "  profiler" : "");
  for (const auto& s : r.steps) {
    std::fprintf(out, "%8lld %9.3f %9.3f %8.3f %8.3f %8.3f %9.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %7u",
                 static_cast<long long>(s.index), ms(s.duration_ns()), ms(s.data_wait_ns), ms(s.forward_ns),
                 ms(s.backward_ns), ms(s.optimizer_ns), ms(s.gpu_busy_ns), ms(s.comm_exposed_ns), ms(s.loader_stall_ns),
                 ms(s.sync_idle_ns), ms(s.launch_gap_ns + s.launch_overhead_ns),
                 ms(s.event_wait_ns + s.other_idle_ns + s.runtime_idle_ns), ms(s.edge_idle_ns), s.kernel_count);
    if (own) std::fprintf(out, " %9.3f", ms(s.profiler_ns));
    std::fputc('\n', out);
  }
}

void print_kernels(const prof::AnalysisResult& r, FILE* out) {
  std::fprintf(out, "\ntop kernels by total time");
  if (r.tensor_core_share >= 0)
    std::fprintf(out, " (matmul/conv %.0f%% of compute kernel time, %.0f%% of it on Tensor Cores)", r.matmul_share * 100,
                 r.tensor_core_share * 100);
  std::fprintf(out, "\n%10s %7s %10s %6s %9s %9s  %s\n", "total ms", "count", "avg us", "time%", "launch us",
               "delay us", "name");
  for (const auto& k : r.top_kernels) {
    std::fprintf(out, "%10.3f %7llu %10.2f %5.1f%% ", ms(k.total_ns), static_cast<unsigned long long>(k.count),
                 k.count ? static_cast<double>(k.total_ns) / k.count / 1000.0 : 0.0, k.share_of_kernel_time * 100.0);
    if (k.launched) std::fprintf(out, "%9.2f %9.2f", k.launch_mean_ns / 1000.0, k.delay_mean_ns / 1000.0);
    else std::fprintf(out, "%9s %9s", "-", "-");
    std::fprintf(out, "  %s%s\n", k.communication ? "[comm] " : k.tensor_core ? "[TC] " : "", shorten(k.name, 96).c_str());
  }
}

void print_region_row(FILE* out, const std::string& id, uint64_t runs, double per_step, int64_t total_ns,
                      int64_t median_ns, double share, const std::string& label, bool steps) {
  std::fprintf(out, "  %-10s %7llu ", shorten(id, 10).c_str(), static_cast<unsigned long long>(runs));
  if (steps) std::fprintf(out, "%6.2f", per_step);
  else std::fprintf(out, "%6s", "-");
  std::fprintf(out, " %10.3f %9.3f", ms(total_ns), runs ? ms(total_ns) / static_cast<double>(runs) : 0.0);
  if (median_ns >= 0) std::fprintf(out, " %9.3f", ms(median_ns));
  else std::fprintf(out, " %9s", "-");
  std::fprintf(out, " %6.1f%%  %s\n", share * 100, shorten(label, 90).c_str());
}

// torch.compile's code as it ran: a row per region (frame F's C-th compile), a frame's total under its
// compiles when it has several, the compiled backward last.
void print_compiled_regions(const prof::CompiledRegions& c, FILE* out) {
  const bool steps = c.steps > 0;
  if (steps) std::fprintf(out, "\ncompiled regions over %zu traced steps", c.steps);
  else std::fprintf(out, "\ncompiled regions over the window (no steps)");
  std::fprintf(out, " (torch.compile's code as it ran: a run's time holds the regions it calls, not compiles)\n");
  std::fprintf(out, "  %-10s %7s %6s %10s %9s %9s %7s  %s\n", "region", "runs", "/step", "total ms", "mean ms",
               "median ms", steps ? "of step" : "of time", "frame");
  uint64_t elsewhere = 0;
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const auto& x = c.rows[i];
    print_region_row(out, x.id, x.runs, x.runs_per_step, x.total_ns, x.median_ns, x.share, x.label, steps);
    elsewhere += x.runs_elsewhere;
    const bool last_of_frame = x.frame >= 0 && (i + 1 == c.rows.size() || c.rows[i + 1].frame != x.frame);
    if (!last_of_frame) continue;
    uint64_t runs = 0, compiles = 0;
    int64_t total = 0;
    double per_step = 0, share = 0;
    for (const auto& y : c.rows)
      if (y.frame == x.frame) runs += y.runs, total += y.total_ns, per_step += y.runs_per_step, share += y.share, ++compiles;
    if (compiles > 1)
      print_region_row(out, "frame " + std::to_string(x.frame), runs, per_step, total, -1, share,
                       "(its " + std::to_string(compiles) + " compiles together)", steps);
  }
  if (elsewhere > 0)
    std::fprintf(out, "  %llu more run%s outside the %s (warm-up, between steps) not counted\n",
                 static_cast<unsigned long long>(elsewhere), elsewhere == 1 ? "" : "s",
                 steps ? "measured steps" : "window");
}

// Inductor's kernels as they ran, the top ones by time, each with the ops it fuses and the user's lines it
// computes (the compile lane's; a trace without it has the names' ops alone).
void print_compiled_kernels(const prof::CompiledKernels& k, FILE* out) {
  constexpr size_t kRows = 10, kLines = 4;
  const bool steps = k.steps > 0;
  if (steps) std::fprintf(out, "\ncompiled kernels over %zu traced steps", k.steps);
  else std::fprintf(out, "\ncompiled kernels over the window (no steps)");
  std::fprintf(out, " (Inductor's generated code: %zu kernel%s, %llu calls, %.3f ms, %.1f%% of the %s)\n", k.kernels,
               k.kernels == 1 ? "" : "s", static_cast<unsigned long long>(k.calls), ms(k.total_ns), k.share * 100,
               steps ? "steps" : "time");
  std::fprintf(out, "  %-48s %7s %6s %9s %9s %7s  %s\n", "kernel", "calls", "/step", "total ms", "mean ms",
               steps ? "of step" : "of time", "fuses");
  bool any_line = false;
  for (size_t i = 0; i < k.rows.size() && i < kRows; ++i) {
    const prof::CompiledKernelStat& x = k.rows[i];
    std::string ops;
    for (const std::string& op : x.ops) ops += (ops.empty() ? "" : ", ") + op;
    if (x.ops_from_name) ops += " (its name's)";
    std::fprintf(out, "  %-48s %7llu %6.2f %9.3f %9.3f %6.1f%%  %s\n", shorten(x.kernel, 48).c_str(),
                 static_cast<unsigned long long>(x.calls), x.calls_per_step, ms(x.total_ns), ms(x.mean_ns()),
                 x.share * 100, ops.c_str());
    for (size_t j = 0; j < x.lines.size() && j < kLines; ++j) {
      const prof::SourceLine& l = x.lines[j];
      std::fprintf(out, "      %s:%lld  %s\n", l.file.c_str(), static_cast<long long>(l.line), shorten(l.code, 80).c_str());
    }
    if (x.lines.size() > kLines) std::fprintf(out, "      and %zu more lines\n", x.lines.size() - kLines);
    any_line = any_line || !x.lines.empty();
  }
  if (k.kernels > kRows)
    std::fprintf(out, "  %zu more kernel%s (the JSON has the top %zu)\n", k.kernels - kRows,
                 k.kernels - kRows == 1 ? "" : "s", prof::kTopCompiledKernels);
  if (!any_line)
    std::fprintf(out, "  no user lines: the trace has no compile lane with Inductor's provenance (run --script --trace "
                      "writes one)\n");
}

}  // namespace

void print_summary(const prof::Trace& trace, const prof::AnalysisResult& r, FILE* out) {
  const auto& m = trace.meta();
  std::fprintf(out, "trace     %s\n", m.source_path.c_str());
  std::string device = m.device;
  if (auto it = m.extra.find("compute_capability"); it != m.extra.end()) device += " (compute " + it->second + ")";
  std::fprintf(out, "format    %s%s%s, %zu events on %zu tracks\n", m.source_format.c_str(), device.empty() ? "" : ", ",
               device.c_str(), trace.event_count(), trace.tracks().size());
  if (!m.collector_state.empty())
    std::fprintf(out, "collector %s%s%s\n", m.collector_state.c_str(), m.collector_reason.empty() ? "" : ": ",
                 m.collector_reason.c_str());
  if (const prof::RecordingCost rc = prof::recording_cost(trace); !rc.text.empty())
    std::fprintf(out, "recording %s\n", rc.text.c_str());
  if (r.has_gpu || r.pid >= 0) {
    std::fprintf(out, "scope     ");
    if (r.has_gpu) std::fprintf(out, "GPU %lld, ", static_cast<long long>(r.device));
    std::fprintf(out, "process %lld: %llu kernels, %llu memcpy, %llu memset, %llu launches\n",
                 static_cast<long long>(r.pid), static_cast<unsigned long long>(r.kernel_count),
                 static_cast<unsigned long long>(r.memcpy_count), static_cast<unsigned long long>(r.memset_count),
                 static_cast<unsigned long long>(r.launches));
  }
  const int64_t W = r.traced_ns();
  std::fprintf(out, "window    %.3f ms (%s)", ms(W),
               !r.window_from_steps ? (r.has_gpu ? "first to last GPU activity" : "the training thread's span")
               : r.warmup_steps     ? (r.has_gpu ? "first measured step start to the end of the last step's GPU work"
                                                 : "first measured step start to last step end")
               : r.has_gpu          ? "first step start to the end of the last step's GPU work"
                                    : "first step start to last step end");
  if (r.untraced_ns > 0)
    std::fprintf(out, ", traced of %.3f ms: a sampled trace, %.3f ms untraced between chunks left out", ms(r.window.length()),
                 ms(r.untraced_ns));
  if (!r.steps.empty())
    std::fprintf(out, ", %zu steps%s%s, median %.3f ms", r.steps.size() - r.warmup_steps,
                 r.warmup_steps ? (" after " + std::to_string(r.warmup_steps) + " warm-up").c_str() : "",
                 r.steps_inferred ? " (inferred from Optimizer.step calls)" : "", ms(r.step_median_ns));
  std::fprintf(out, "\n\n");
  print_time_classes(r, out);
  // With a GPU, outside training is no class of its own (the GPU's time then is in its idle causes): said beside.
  if (r.has_gpu && r.outside_training_ns > 0)
    line(out, "outside training iterations", r.outside_training_ns, W, outside_detail(r));
  char b[64];
  std::snprintf(b, sizeof b, "(%u calls)", r.sync_count);
  line(out, "host blocked in sync calls", r.sync_ns, W, b);
  if (r.memory.present) {
    // Memory beside time: the peaks and what the device had left at the largest.
    auto gib = [](int64_t x) { return static_cast<double>(x) / static_cast<double>(int64_t(1) << 30); };
    std::fprintf(out, "\nmemory   ");
    if (r.memory.device_step_peak >= 0) {
      std::fprintf(out, " device peak %.2f GiB allocated (step %lld)", gib(r.memory.device_step_peak),
                   static_cast<long long>(r.memory.peak_step));
      if (r.memory.device_reserved_peak >= 0) std::fprintf(out, ", %.2f GiB reserved", gib(r.memory.device_reserved_peak));
      if (r.memory.headroom >= 0)
        std::fprintf(out, ", %.2f GiB free of %.2f GiB", gib(r.memory.headroom), gib(r.memory.device_total));
      std::fprintf(out, ";");
    }
    if (r.memory.host_rss_peak >= 0) std::fprintf(out, " host RSS peak %.2f GiB", gib(r.memory.host_rss_peak));
    else if (r.memory.host_allocated_peak >= 0)
      std::fprintf(out, " host allocated peak %.2f GiB (torch)", gib(r.memory.host_allocated_peak));
    std::fprintf(out, "\n");
  }
  if (!r.steps.empty()) print_steps(r, out);
  if (!r.top_kernels.empty()) print_kernels(r, out);
  if (!r.compiled_regions.rows.empty()) print_compiled_regions(r.compiled_regions, out);
  print_cuda_graphs(r.cuda_graphs, out);
  if (!r.compiled_regions.kernels.rows.empty()) print_compiled_kernels(r.compiled_regions.kernels, out);
  if (!r.launch_outliers.empty()) {
    std::fprintf(out, "\nlaunch outliers (median launch call %.1f us, median launch->start %.1f us)\n",
                 r.launch_median_ns / 1000.0, r.delay_median_ns / 1000.0);
    for (const auto& o : r.launch_outliers)
      std::fprintf(out, "  %s %9.3f ms into the window: %s %.1f us  %s\n", o.slow_call ? "slow launch" : "late start ",
                   ms(o.launch_start_ns - r.window.t0), o.slow_call ? "call" : "delay",
                   (o.slow_call ? o.launch_ns : o.delay_ns) / 1000.0, shorten(o.kernel, 80).c_str());
  }
  std::fprintf(out, "\nfindings\n");
  if (r.findings.empty()) std::fprintf(out, "  none: no class of time above 2%% of the window\n");
  int i = 0;
  for (const auto& f : r.findings) {
    std::fprintf(out, "  %d. %s\n", ++i, f.message.c_str());
    if (!f.knob.empty()) {
      std::string also;
      for (const auto& a : f.also) also += (also.empty() ? "" : ", ") + a;
      std::fprintf(out, "     switch: %s=%s%s%s", f.knob.c_str(), f.value.c_str(), also.empty() ? "" : "  also: ",
                   also.c_str());
    } else {
      std::fprintf(out, "    ");
    }
    if (f.evidence.t1 > f.evidence.t0)
      std::fprintf(out, "   evidence: %.3f ms .. %.3f ms into the window", ms(f.evidence.t0 - r.window.t0),
                   ms(f.evidence.t1 - r.window.t0));
    std::fprintf(out, "\n");
  }
  if (!r.notes.empty()) std::fprintf(out, "\nnotes\n");
  for (const auto& n : r.notes) std::fprintf(out, "  - %s\n", n.c_str());
}

void print_ranks(const prof::RankAnalysis& ra, FILE* out) {
  std::fprintf(out, "\nranks (%zu step numbers common to all)\n", ra.matched_steps);
  std::fprintf(out, "  %-34s %6s %12s %12s %12s %12s %10s\n", "rank", "steps", "step ms", "work ms", "comm wait",
               "data wait", "late in");
  for (const auto& r : ra.ranks)
    std::fprintf(out, "  %-34s %6zu %12.2f %12.2f %12.2f %12.2f %10zu\n", shorten(r.label, 34).c_str(), r.steps,
                 ms(r.step_median_ns), ms(r.work_median_ns), ms(r.comm_wait_median_ns), ms(r.data_wait_median_ns),
                 r.straggler_steps);
  if (ra.straggler >= 0)
    std::fprintf(out, "  straggler: %s, the others wait %.2f ms per step for it (%.1f%% of a step; cause: %s)\n",
                 ra.ranks[size_t(ra.straggler)].label.c_str(), ms(ra.wait_per_step_ns), 100 * ra.wait_share,
                 ra.cause.c_str());
  for (const auto& f : ra.findings) std::fprintf(out, "  finding: %s\n", f.message.c_str());
  for (const auto& n : ra.notes) std::fprintf(out, "  - %s\n", n.c_str());
}

}  // namespace tb::cli
