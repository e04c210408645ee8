// Trace I/O: reads our own traces, Chrome trace JSON and PyTorch-profiler (Kineto) traces, plain or gzip;
// writes Chrome trace JSON that Perfetto UI and chrome://tracing open and that load_trace reads back.
//
// Errors are values: a bad file gives an Error with one line and, for JSON errors, the byte offset into the
// decompressed text. Nothing here throws or aborts on any input (fuzzed: tests/fuzz).
//
// Mapping (Kineto `cat` -> EventKind): cpu_op, user_annotation, python_function, Trace -> Range on a CPU
// track; gpu_user_annotation -> Range on its GPU stream track; kernel -> Kernel; gpu_memcpy -> Memcpy;
// gpu_memset -> Memset; cuda_runtime -> Runtime; cuda_driver -> Driver; cuda_sync -> Sync (on the GPU row);
// "i"/"I" -> Instant; "C" -> Counter; ac2g flows are rebuilt from args.correlation. GPU rows are recognised
// by category (kernel, gpu_memcpy, gpu_memset, gpu_user_annotation, cuda_sync) or our tb_kind; tracks on GPU rows
// are (device = args.device or pid, stream = args.stream or tid). Timestamps and durations are microseconds
// (Chrome's unit whatever displayTimeUnit says) and are parsed from the number's text, so a Kineto
// "1712195495506161.288" keeps its nanoseconds (a double would not). Unknown phases/categories are skipped or
// kept as plain ranges; flows are not read from s/f events but rebuilt from correlation ids.
//
// Our own export is Chrome trace JSON with a "tunebench" top-level object (metadata: device, versions,
// collector state/reason, dropped records) and "args": {"tb_kind", "correlation", "arg" | "bytes", "detail",
// "device", "stream"} on events so the round trip keeps kinds, times (ns), correlation and metadata (depth is
// recomputed); flows are ph "s"/"f" pairs (id = correlation, cat "ac2g"); findings are global instant events
// (cat "tunebench_finding", skipped when read back: they are re-derived by analyze()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/analysis.h"
#include "profiler/result.h"
#include "profiler/compile_lane.h"
#include "profiler/step_lane.h"
#include "profiler/trace.h"

namespace tb::prof {

// Name of the CPU track that holds a foreign trace's global-scope instants ("s": "g"): trace-wide markers
// such as Kineto's "Record Window End", which the timeline draws as full-height lines.
inline constexpr const char* kGlobalMarkersTrack = "global markers";

// How a text was parsed: in how many pieces, and whether a piece failed so the whole text was parsed again
// (then the error, if any, is the one-go parse's, with offsets into the file).
struct ParseStats {
  size_t pieces = 0;  // 1: in one go
  bool fell_back = false;
  bool streamed = false;  // the pieces were parsed as the text arrived (read or inflated on a thread)
};

struct LoadOptions {
  // Refuse inputs larger than this after decompression (absurd sizes, gzip bombs). 0 = no limit.
  size_t max_bytes = size_t(16) << 30;
  // JSON texts of piece_min bytes or more are parsed in pieces of about piece_bytes, each a run of whole
  // traceEvents (the parser's index stays small and in cache: 2x faster on 150 MB). The result is the same
  // as one parse; tests set both small to cut tiny traces. piece_min = 0 turns pieces off.
  size_t piece_min = size_t(8) << 20;
  size_t piece_bytes = size_t(1) << 20;
  ParseStats* stats = nullptr;  // filled when set
};

// Loads a trace file (.json or .json.gz; gzip is detected by its magic bytes, not the name) and finalizes it.
Result<std::unique_ptr<Trace>> load_trace(const std::string& path, const LoadOptions& options = {});
// Same, from bytes in memory (possibly gzip). `source_name` is used in messages and metadata only.
Result<std::unique_ptr<Trace>> parse_trace(std::string_view bytes, std::string_view source_name = "<memory>",
                                           const LoadOptions& options = {});

// Loaded chunk files of a script's trace merged into one, in order (not finalized). A file on the monotonic
// clock (its top field "tunebench_clock" is "monotonic": the loader's lanes, python/tunebench/hooks/
// loader_lanes.py) is moved onto the chunks' clock by the offset a chunk states ("tunebench_clock_offset_us",
// the same for every chunk of a run); one that comes before any chunk that states it waits for one, and is left
// out (`unplaced`) when none does. The first chunk's metadata is the merged trace's.
class ChunkMerger {
 public:
  void add(std::unique_ptr<Trace> part);
  // The merged trace (finalize() it); the waiting monotonic files are then left out.
  std::unique_ptr<Trace> take();
  size_t unplaced() const { return unplaced_; }
  // The chunks' clock less the monotonic clock, as the first chunk that states it said (what moves the loader's
  // lanes and the step lane onto the chunks' clock); nullopt until one does. Still known after take().
  std::optional<int64_t> offset_ns() const { return have_offset_ ? std::optional<int64_t>(offset_ns_) : std::nullopt; }

 private:
  std::unique_ptr<Trace> merged_ = std::make_unique<Trace>();
  std::vector<std::unique_ptr<Trace>> waiting_;
  bool have_offset_ = false;
  int64_t offset_ns_ = 0;
  size_t unplaced_ = 0;
};

// A script's torch.profiler chunks (the launcher's, in order; its loader lanes among them) as one finalized
// trace of the run, marked as a script's (the analysis then proposes the launcher's knobs). With `steps` or
// `outside` (the run's step stream), the step lane (profiler/step_lane.h) is added on the chunks' clock, and with
// `compiles` the compile lane (profiler/compile_lane.h); when no chunk states its clock's offset the lanes could
// not be placed and are left out.
Result<std::unique_ptr<Trace>> merge_script_chunks(const std::vector<std::string>& chunks,
                                                   std::span<const LaneStep> steps = {},
                                                   std::span<const LaneOutside> outside = {},
                                                   std::span<const LaneCompile> compiles = {});

// Writes Chrome trace JSON (gzip when the path ends in .gz). Findings become instant events.
Status write_chrome_trace(const Trace& trace, const std::string& path, const std::vector<Finding>& findings = {});
// The same JSON as a string.
std::string to_chrome_trace_json(const Trace& trace, const std::vector<Finding>& findings = {});

}  // namespace tb::prof
