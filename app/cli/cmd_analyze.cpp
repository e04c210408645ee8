// tunebench-cli analyze TRACE [--json OUT.json] [--min-gap-us N]
// Reads our traces, Chrome trace JSON and Kineto traces (.json / .json.gz), prints a readable summary and
// optionally the analysis as JSON ("-" = stdout). Exit 0 ok, 1 cannot write the output, 2 bad input.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "commands.h"
#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace tb::cli {
namespace {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  std::fprintf(stderr, "usage: tunebench-cli analyze TRACE [--json OUT.json] [--min-gap-us N]\n");
  return 2;
}

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double pct(int64_t part, int64_t whole) { return whole > 0 ? 100.0 * static_cast<double>(part) / whole : 0.0; }

std::string shorten(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n - 3) + "...";
}

void print_summary(const prof::Trace& trace, const prof::AnalysisResult& r, FILE* out) {
  const auto& m = trace.meta();
  std::fprintf(out, "trace     %s\n", m.source_path.c_str());
  std::fprintf(out, "format    %s%s%s, %zu events on %zu tracks, %llu kernels, %llu memcpy, %llu memset\n",
               m.source_format.c_str(), m.device.empty() ? "" : ", device ", m.device.c_str(), trace.event_count(),
               trace.tracks().size(), static_cast<unsigned long long>(r.kernel_count),
               static_cast<unsigned long long>(r.memcpy_count), static_cast<unsigned long long>(r.memset_count));
  if (!m.collector_state.empty())
    std::fprintf(out, "collector %s%s%s\n", m.collector_state.c_str(), m.collector_reason.empty() ? "" : ": ",
                 m.collector_reason.c_str());
  const int64_t W = r.window.length();
  std::fprintf(out, "window    %.3f ms (%s)", ms(W),
               r.window_from_steps ? "first step start to last step end" : "first to last GPU activity");
  if (!r.steps.empty())
    std::fprintf(out, ", %zu steps, median %.3f ms", r.steps.size(), ms(r.step_median_ns));
  std::fprintf(out, "\n\n");
  if (r.has_gpu) {
    std::fprintf(out, "GPU busy                 %10.3f ms %6.1f%%\n", ms(r.gpu_busy_ns), pct(r.gpu_busy_ns, W));
    std::fprintf(out, "GPU idle                 %10.3f ms %6.1f%%  (%u idle intervals)\n", ms(r.gpu_idle_ns),
                 pct(r.gpu_idle_ns, W), r.idle_interval_count);
  } else {
    // A CPU-only trace: "GPU idle 100%" would be noise. The loader stall is the training thread's data wait.
    std::fprintf(out, "no GPU activity in this trace: loader stall = the training thread's data wait\n");
  }
  std::fprintf(out, "  loader stall           %10.3f ms %6.1f%%  (%u intervals)\n", ms(r.loader_stall_ns),
               pct(r.loader_stall_ns, W), r.loader_stall_count);
  if (r.has_gpu) {
    std::fprintf(out, "  CPU launch gaps        %10.3f ms %6.1f%%  (%u gaps >= %.1f us)\n", ms(r.launch_gap_ns),
                 pct(r.launch_gap_ns, W), r.launch_gap_count, static_cast<double>(r.min_gap_ns) / 1000.0);
    std::fprintf(out, "  other idle             %10.3f ms %6.1f%%\n", ms(r.other_idle_ns), pct(r.other_idle_ns, W));
  }
  std::fprintf(out, "sync points (host)       %10.3f ms %6.1f%%  (%u calls)\n", ms(r.sync_ns), pct(r.sync_ns, W),
               r.sync_count);
  if (!r.steps.empty()) {
    std::fprintf(out, "\nper step (ms)\n");
    std::fprintf(out, "%8s %9s %9s %8s %8s %8s %8s %9s %8s %8s %8s %8s %7s\n", "step", "duration", "data_wait", "h2d",
                 "forward", "backward", "optim", "gpu_busy", "stall", "launch", "other", "sync", "kernels");
    for (const auto& s : r.steps) {
      std::fprintf(out, "%8lld %9.3f %9.3f %8.3f %8.3f %8.3f %8.3f %9.3f %8.3f %8.3f %8.3f %8.3f %7u\n",
                   static_cast<long long>(s.index), ms(s.duration_ns()), ms(s.data_wait_ns), ms(s.h2d_ns),
                   ms(s.forward_ns), ms(s.backward_ns), ms(s.optimizer_ns), ms(s.gpu_busy_ns), ms(s.loader_stall_ns),
                   ms(s.launch_gap_ns), ms(s.other_idle_ns), ms(s.sync_ns), s.kernel_count);
    }
  }
  if (!r.top_kernels.empty()) {
    std::fprintf(out, "\ntop kernels by total time");
    if (r.tensor_core_share >= 0) std::fprintf(out, " (Tensor Core share of matmul/conv time: %.0f%%)", r.tensor_core_share * 100);
    std::fprintf(out, "\n%10s %7s %10s %6s  %s\n", "total ms", "count", "avg us", "busy%", "name");
    for (const auto& k : r.top_kernels) {
      std::fprintf(out, "%10.3f %7llu %10.2f %5.1f%%  %s%s\n", ms(k.total_ns), static_cast<unsigned long long>(k.count),
                   k.count ? static_cast<double>(k.total_ns) / k.count / 1000.0 : 0.0, k.share_of_busy * 100.0,
                   k.tensor_core ? "[TC] " : "", shorten(k.name, 100).c_str());
    }
  }
  std::fprintf(out, "\nfindings\n");
  if (r.findings.empty()) std::fprintf(out, "  none above %.0f%% of the window\n", 2.0);
  int i = 0;
  for (const auto& f : r.findings) {
    std::fprintf(out, "  %d. %s\n", ++i, f.message.c_str());
    if (!f.knob.empty()) {
      std::string also;
      for (const auto& a : f.also) also += (also.empty() ? "" : ", ") + a;
      std::fprintf(out, "     switch: %s=%s%s%s   evidence: %.3f ms .. %.3f ms into the window\n", f.knob.c_str(),
                   f.value.c_str(), also.empty() ? "" : "  also: ", also.c_str(), ms(f.evidence.t0 - r.window.t0),
                   ms(f.evidence.t1 - r.window.t0));
    }
  }
  for (const auto& n : r.notes) std::fprintf(out, "note: %s\n", n.c_str());
}

}  // namespace

int cmd_analyze(int argc, char** argv) {
  std::string path, json_out;
  prof::AnalysisOptions opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      if (i + 1 >= argc) return usage_error("--json needs a file name (or - for stdout)");
      json_out = argv[++i];
    } else if (a == "--min-gap-us") {
      if (i + 1 >= argc) return usage_error("--min-gap-us needs a number");
      const char* v = argv[++i];
      char* end = nullptr;
      errno = 0;
      const double us = std::strtod(v, &end);
      if (!end || *end || end == v || errno || !std::isfinite(us) || us < 0 || us > 1e9)
        return usage_error(std::string("--min-gap-us: not a number of microseconds in [0, 1e9]: '") + v + "'");
      opt.min_gap_ns = static_cast<int64_t>(std::llround(us * 1000.0));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: tunebench-cli analyze TRACE [--json OUT.json] [--min-gap-us N]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage_error("unknown option '" + a + "'");
    } else if (path.empty()) {
      path = a;
    } else {
      return usage_error("more than one trace given ('" + path + "', '" + a + "')");
    }
  }
  if (path.empty()) return usage_error("no trace given");
  auto loaded = prof::load_trace(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "tunebench-cli: error: %s: %s\n", path.c_str(), loaded.error().to_string().c_str());
    return 2;
  }
  const prof::Trace& trace = *loaded.value();
  const prof::AnalysisResult r = prof::analyze(trace, opt);
  const bool json_stdout = json_out == "-";
  print_summary(trace, r, json_stdout ? stderr : stdout);
  if (!json_out.empty()) {
    const std::string json = prof::to_json(r, &trace.meta());
    if (json_stdout) {
      std::fwrite(json.data(), 1, json.size(), stdout);
      std::fputc('\n', stdout);
    } else {
      FILE* f = std::fopen(json_out.c_str(), "wb");
      if (!f) {
        std::fprintf(stderr, "tunebench-cli: error: cannot write '%s': %s\n", json_out.c_str(), std::strerror(errno));
        return 1;
      }
      const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size() && std::fputc('\n', f) != EOF;
      if (std::fclose(f) != 0 || !ok) {
        std::fprintf(stderr, "tunebench-cli: error: cannot write '%s'\n", json_out.c_str());
        return 1;
      }
    }
  }
  return 0;
}

}  // namespace tb::cli
