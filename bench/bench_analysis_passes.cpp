// Where analyze()'s time goes: for each trace given, load_trace, then every pass of analyze() one by one in its
// order, then analyze() itself, each timed over --rounds rounds. The passes run through the very list analyze()
// runs (profiler/src/analysis_passes.h), so the figures are the product's code and the product times nothing.
//
// Prints, per trace, its events and size, then one row per step:
//   load_trace            read, gunzip, parse and finalize (the import);
//   scope .. notes        each pass of analyze() (scope, gpu, steps, window, host, outside, idle, per_step, stats,
//                         regions, memory, findings, lane, notes);
//   passes (sum)          the passes of one round added up;
//   analyze()             the public call, for comparison with the sum;
// each with its median and min wall time (ms), its median CPU time of the process (ms: on a shared machine the
// cost of the code) and its share of the passes' sum (load_trace's row: its ratio to the sum). A last line says
// whether the passes gave analyze()'s result (its JSON, byte for byte). Printed, never asserted; the analyze
// bench (bench/bench_analyze_cli.py, `scripts/bench.sh analyze`) runs it on 0.1 M and 1 M events.
//
// usage: bench_analysis_passes [--rounds N] TRACE...
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analysis_passes.h"
#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace {

using tb::prof::detail::AnalysisPass;

double cpu_secs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
}

// Wall and CPU seconds of each round of one step.
struct Samples {
  std::vector<double> wall, cpu;
  void add(double w, double c) { wall.push_back(w), cpu.push_back(c); }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Times f() once into `s`.
template <class F>
void timed(Samples& s, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_secs();
  f();
  s.add(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), cpu_secs() - c0);
}

void row(const char* name, const Samples& s, double sum_median) {
  const double med = median(s.wall);
  std::printf("  %-16s %10.2f %9.2f %9.2f %8.3f\n", name, med * 1e3, *std::min_element(s.wall.begin(), s.wall.end()) * 1e3,
              median(s.cpu) * 1e3, sum_median > 0 ? med / sum_median : 0.0);
}

int bench_trace(const std::string& path, int rounds) {
  Samples load;
  std::unique_ptr<tb::prof::Trace> trace;
  for (int i = 0; i < rounds; ++i) {
    tb::prof::Result<std::unique_ptr<tb::prof::Trace>> r = tb::prof::Error{"not loaded"};
    timed(load, [&] { r = tb::prof::load_trace(path); });
    if (!r.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), r.error().to_string().c_str());
      return 1;
    }
    trace = std::move(r).value();
  }
  const auto passes = tb::prof::detail::analysis_passes();
  std::vector<Samples> each(passes.size());
  Samples sum, whole;
  const tb::prof::AnalysisOptions opt;
  bool same = true;
  for (int i = 0; i < rounds; ++i) {
    tb::prof::detail::AnalysisState s(*trace, opt);
    double wall = 0, cpu = 0;
    for (size_t p = 0; p < passes.size(); ++p) {
      timed(each[p], [&] { passes[p].run(s); });
      wall += each[p].wall.back(), cpu += each[p].cpu.back();
    }
    sum.add(wall, cpu);
    tb::prof::AnalysisResult a;
    timed(whole, [&] { a = tb::prof::analyze(*trace, opt); });
    same = same && tb::prof::to_json(s.r) == tb::prof::to_json(a);
  }
  const double sum_median = median(sum.wall);
  std::printf("%s: %zu events, %d rounds\n", path.c_str(), trace->event_count(), rounds);
  std::printf("  %-16s %10s %9s %9s %8s\n", "step", "median ms", "min ms", "CPU ms", "share");
  row("load_trace", load, sum_median);
  for (size_t p = 0; p < passes.size(); ++p) row(passes[p].name, each[p], sum_median);
  row("passes (sum)", sum, sum_median);
  row("analyze()", whole, sum_median);
  std::printf("  the passes give analyze()'s result: %s\n", same ? "yes (same JSON)" : "NO (the JSON differs)");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else paths.push_back(a);
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: bench_analysis_passes [--rounds N] TRACE...\n");
    return 2;
  }
  int rc = 0;
  for (const std::string& p : paths) rc |= bench_trace(p, rounds);
  return rc;
}
