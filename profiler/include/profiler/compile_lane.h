// The compile lane: what torch.compile did in a script's run (the launcher's `compile` messages, read from
// PyTorch's own structured trace), on a row of the step lane's pseudo-process under its steps. A compile runs
// inside a step (the first call of a compiled function, a recompile when a guard fails), so without it the
// step that compiled is merely slow and the run reads as drifting.
//
// The row ("torch.compile") holds, per compile of a frame: depth 0 a `names::kLaneCompile` range (arg: the
// frame's compile index, 0 for its first and 1.. for recompiles; detail: the frame's label, "forward at
// /abs/train.py:16", with " (backward)" after the frame's name for a lazily compiled backward), inside it its
// phases (Dynamo's bytecode tracing, AOT autograd, Inductor, code generation, guards: they may nest), and at its
// start zero-length markers the lane's findings read: `names::kLaneRecompile` (detail: the guard that failed),
// `names::kLaneGraphBreak` (arg: the user's line; detail: the file, a newline, the reason) and
// `names::kLaneCompileFailed` (detail: why), `names::kLaneKernel` (one per kernel Inductor generated; detail:
// profiler/compiled_kernels.h's), and `names::kLaneCompileId` (detail: the compile's id "F/C",
// Dynamo's frame F and its C-th compile). torch.profiler names each run of that compile's code
// "Torch-Compiled Region: F/C", so the id marker is what lets a reader of a written trace put the frame's label
// on its runs (analysis_regions.cpp). Times are the monotonic clock's, moved by the chunks' offset as the step
// lane's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "profiler/trace.h"

namespace tb::prof {

inline constexpr int64_t kCompileLaneTid = 3;
inline constexpr const char* kCompileLaneTrackName = "torch.compile";

struct LaneGraphBreak {
  std::string reason, file;
  int64_t line = 0;
};

// A line of the user's code that a compiled kernel computes (Inductor's provenance: the graph nodes' stacks).
struct SourceLine {
  std::string file;
  int64_t line = 0;
  std::string code;  // the line's text, as the stack showed it ("" when it did not)
  bool operator==(const SourceLine&) const = default;
};

// A kernel Inductor generated for a compile (profiler/compiled_kernels.h reads them back from a trace).
struct LaneKernel {
  std::string name;   // Inductor's: "cpp_fused_add_relu_0", "triton_poi_fused_addmm_gelu_2"
  std::string range;  // what its runs are called in a trace ("graph_0_cpp_fused_add_relu_0"); "" for `name`
  std::vector<std::string> ops;  // the ATen ops its code says it fuses; empty: its name says them
  std::vector<SourceLine> lines;
};

struct LaneCompilePhase {
  std::string name;  // the launcher's: "dynamo", "aot", "inductor", "codegen", "guards" (others kept as they are)
  int64_t t_ns = 0, dur_ns = 0;
};

// One compile of one frame (a `compile` message).
struct LaneCompile {
  std::string id;      // "F/C": frame F's C-th compile
  std::string frame;   // the code object's name ("forward", "torch_dynamo_resume_in_forward_at_18")
  std::string file;
  int64_t line = 0;    // the frame's first line
  int64_t t_ns = 0, dur_ns = 0;
  bool backward = false;  // the lazily compiled backward of the frame's graph
  std::vector<LaneCompilePhase> phases;
  std::string recompile;  // the guard that failed ("" for a frame's first compile)
  std::vector<LaneGraphBreak> breaks;
  std::string failed;     // why the compile failed ("": it did not)
  std::vector<LaneKernel> kernels;  // the kernels Inductor generated (or loaded) for it

  int64_t frame_compile_index() const;  // C of "F/C" (0 when the id says none)
  std::string frame_label() const;      // "forward at /abs/train.py:16"
};

// Adds the row to `trace` (nothing when `compiles` is empty); the caller finalize()s the trace afterwards.
void add_compile_lane(Trace& trace, std::span<const LaneCompile> compiles, int64_t offset_ns);

// The phase's name on the timeline for the launcher's word ("dynamo" -> "Dynamo: bytecode tracing").
std::string compile_phase_title(const std::string& phase);

}  // namespace tb::prof
