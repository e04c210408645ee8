// The statistics of analyze() (private, analysis_stats.cpp): kernels, host ops, launch outliers.
#pragma once

#include "analysis_idle.h"
#include "analysis_steps.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

// The top kernels by GPU time, the matmul and tensor-core shares (and the tensor-core finding).
void kernel_statistics(const Trace& trace, const GpuSide& g, const AnalysisOptions& opt, AnalysisResult& r);
// Launch calls and launch->start delays far beyond the trace's median, where the GPU waited for them.
void launch_outliers(const Trace& trace, const GpuSide& g, AnalysisResult& r);
// The host ops of the analysed process by self time.
void op_statistics(const Trace& trace, const Scope& sc, const AnalysisOptions& opt, AnalysisResult& r);

}  // namespace tb::prof::detail
