// `tunebench-cli analyze`'s CUDA graphs (analyze_print.h): a row per graph (its replays, what a replay runs and
// takes, its launch call), its costliest nodes under it, and the captures made in the steps.
#include <algorithm>
#include <cinttypes>
#include <string>
#include <vector>

#include "analyze_print.h"

namespace tb::cli {
namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double us(int64_t ns) { return static_cast<double>(ns) / 1e3; }

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

// A graph captured again every step is a new graph each time: its rows would fill the screen.
constexpr size_t kGraphsShown = 8, kGraphsWithNodes = 3, kNodesShown = 5;

}  // namespace

void print_cuda_graphs(const prof::CudaGraphs& c, FILE* out) {
  if (c.empty()) return;
  const bool steps = c.steps > 0;
  if (steps) std::fprintf(out, "\nCUDA graphs over %zu measured steps", c.steps);
  else std::fprintf(out, "\nCUDA graphs over the window (no steps)");
  std::fprintf(out, " (a replay: one launch call, the graph's work on the GPU)\n");
  if (!c.graphs.empty())
    std::fprintf(out, "  %-7s %8s %6s %8s %13s %10s %10s %8s\n", "graph", "replays", "/step", "kernels", "GPU ms/replay",
                 "span ms", "launch us", steps ? "of step" : "of time");
  // The graphs that took the most GPU time first.
  std::vector<const prof::CudaGraphStat*> order;
  for (const prof::CudaGraphStat& g : c.graphs) order.push_back(&g);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->busy_ns > b->busy_ns; });
  for (size_t gi = 0; gi < order.size() && gi < kGraphsShown; ++gi) {
    const prof::CudaGraphStat& g = *order[gi];
    const std::string id = g.graph ? std::to_string(g.graph) : "?";
    std::fprintf(out, "  %-7s %8" PRIu64 " %6.2f %8u %13.3f %10.3f %10.1f %7.1f%%\n", id.c_str(), g.replays,
                 g.replays_per_step, g.kernels_per_replay, ms(g.median_busy_ns), ms(g.median_span_ns),
                 g.replays ? us(g.launch_ns) / static_cast<double>(g.replays) : 0.0, 100.0 * g.share);
    if (g.replays_elsewhere)
      std::fprintf(out, "          %" PRIu64 " more replay%s outside the %s not counted\n", g.replays_elsewhere,
                   g.replays_elsewhere == 1 ? "" : "s", steps ? "measured steps" : "window");
    for (size_t i = 0; gi < kGraphsWithNodes && i < g.nodes.size() && i < kNodesShown; ++i) {
      const prof::CudaGraphNodeStat& n = g.nodes[i];
      std::fprintf(out, "    node %-8" PRIu64 " %6" PRIu64 " runs %10.3f ms  mean %9.1f us  %5.1f%% of the graph  %s\n",
                   n.node, n.runs, ms(n.total_ns), us(n.mean_ns()), 100.0 * n.share, shorten(n.name, 70).c_str());
    }
    if (gi < kGraphsWithNodes && g.nodes.size() > kNodesShown)
      std::fprintf(out, "    (%zu more nodes in --json's cuda_graphs)\n", g.nodes.size() - kNodesShown);
  }
  if (order.size() > kGraphsShown) {
    uint64_t replays = 0;
    for (size_t gi = kGraphsShown; gi < order.size(); ++gi) replays += order[gi]->replays;
    std::fprintf(out, "  (%zu more graphs, %" PRIu64 " replays, in --json's cuda_graphs)\n", order.size() - kGraphsShown,
                 replays);
  }
  const prof::CudaGraphCaptures& k = c.capture;
  const uint64_t made = k.captures + k.instantiations + k.updates;
  if (made + k.elsewhere == 0) return;
  std::fprintf(out, "  captured: %" PRIu64 " capture%s, %" PRIu64 " instantiation%s, %" PRIu64 " update%s", k.captures,
               k.captures == 1 ? "" : "s", k.instantiations, k.instantiations == 1 ? "" : "s", k.updates,
               k.updates == 1 ? "" : "s");
  if (steps && made)
    std::fprintf(out, " in %zu of %zu steps, %.3f ms of host time a step (%.1f%% of the step)", k.steps_with, c.steps,
                 ms(k.host_ns) / static_cast<double>(c.steps),
                 c.base_ns > 0 ? 100.0 * static_cast<double>(k.host_ns) / static_cast<double>(c.base_ns) : 0.0);
  if (k.elsewhere) std::fprintf(out, "; %" PRIu64 " outside the %s", k.elsewhere, steps ? "measured steps" : "window");
  if (k.from_ranges) std::fprintf(out, " (TuneBench's capture ranges)");
  std::fprintf(out, "\n");
}

}  // namespace tb::cli
