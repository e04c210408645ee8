// Inductor's generated kernels as they ran (analysis_kernels.cpp), part of the `regions` pass.
#pragma once

#include "analysis_step_spans.h"
#include "analysis_steps.h"
#include "profiler/analysis.h"

namespace tb::prof::detail {

// Each generated kernel's runs over `steps`, with its ops and user lines, the top ones in `out` (left empty
// when none ran).
void add_compiled_kernels(const Trace& trace, const Scope& sc, const StepSpans& steps, CompiledKernels& out);

}  // namespace tb::prof::detail
