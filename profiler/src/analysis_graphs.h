// CUDA graphs in the analysis (private): which host calls launch, capture and instantiate a graph, and the
// cuda_graphs pass (analysis_graphs.cpp, docs/analysis.md "CUDA graphs").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis_steps.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

// A graph's launch call (cudaGraphLaunch, cuGraphLaunch, their _ptsz forms): one call runs all of a graph's work,
// which shares its correlation id.
bool is_graph_launch(std::string_view n);
// Per name of the trace (by NameId), whether it is a graph launch's; empty when none is (most traces), so a pass
// looks at a launch's name once per name, not per kernel.
std::vector<uint8_t> graph_launch_names(const Trace& trace);
inline bool is_graph_launch(const std::vector<uint8_t>& names, NameId n) { return n < names.size() && names[n]; }

// What a host call does to a graph: either end of a stream capture, an instantiation, an update of an
// instantiated graph (runtime and driver spellings, versioned or not).
enum class GraphCall : uint8_t { None, BeginCapture, EndCapture, Instantiate, Update };
GraphCall graph_call(std::string_view n);

// The cuda_graphs pass: each graph's replays and nodes on the analysed device and the captures of the analysed
// process in `r.cuda_graphs`, a note where the kernels carry no graph ids, and the recapture finding when most
// measured steps capture or instantiate.
void add_cuda_graphs(const Trace& trace, const Scope& sc, const AnalysisOptions& opt, AnalysisResult& r);

}  // namespace tb::prof::detail
