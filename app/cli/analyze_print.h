// `tunebench-cli analyze`'s readable summary: the GPU time by cause, the steps, the top kernels, the
// findings, and the ranks of a data-parallel job.
#pragma once

#include <cstdio>

#include "profiler/analysis.h"
#include "profiler/ranks.h"
#include "profiler/trace.h"

namespace tb::cli {

void print_summary(const prof::Trace& trace, const prof::AnalysisResult& r, FILE* out);
void print_ranks(const prof::RankAnalysis& ra, FILE* out);
// The CUDA graphs' replays and nodes and the captures (analyze_print_graphs.cpp); nothing when none ran.
void print_cuda_graphs(const prof::CudaGraphs& c, FILE* out);

}  // namespace tb::cli
