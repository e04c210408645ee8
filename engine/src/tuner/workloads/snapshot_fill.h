// The tuner's Snapshot (engine/tuner.h) from an analysed trace: where a step's time went, the bottleneck in
// one word and the top findings. Shared by the in-process workload (its own recorder) and the multi-rank one
// (rank 0 of the group's merged trace). Torch-free, private to the engine.
#pragma once

#include "engine/tuner.h"
#include "profiler/analysis.h"

namespace tb::engine {

// Fills breakdown_ms, bottleneck, worst stall, findings (and step_ms when unset) from `a`, which has steps.
// On the CPU a data-parallel rank's wait for its all-reduces (exposed communication) is its own part,
// "comm wait", and the bottleneck "comm" when it takes more than 15% of the step; without communication the
// parts are those of a single process. TuneBench's own time is a last part of its own (kProfilerPart), taken
// out of "other". Findings about the recording itself (collector off) are left out.
void fill_snapshot(Snapshot& s, const prof::AnalysisResult& a);

// A group's snapshot from its merged trace: each rank's process (`ranks`: pid and label, rank 0 first)
// analysed on its own, rank 0's step filled as above, and the straggler finding (profiler/ranks.h) first.
// Says so in the findings when rank 0 has no steps.
void fill_group_snapshot(Snapshot& s, const prof::Trace& trace, const std::vector<std::pair<int64_t, std::string>>& ranks);

}  // namespace tb::engine
