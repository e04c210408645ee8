// Widget-free timeline logic: the draw-friendly event store, the time<->pixel mapping and the level-of-detail
// draw-list builder. Nothing here touches a QWidget or a QPainter, so it is tested without a window and the
// draw list can be built on a worker thread (tracy/orbit: the UI thread only draws).
//
// Invariants
// - Times are int64 nanoseconds on one clock (the trace's). Every Lane is sorted by start; events in one lane
//   do not overlap in a well-nested trace, but GPU streams from real collectors occasionally do by a few ns,
//   so a lane also keeps `max_end` (prefix maximum of end) and blocks of kBlock events with min start / max
//   end: the first possibly-visible event is found by binary search on max_end, never by a scan.
// - Folding: consecutive events narrower than kFoldPx pixels are merged into one "folded" item; when an event
//   ends inside the current pixel the builder jumps to the first event starting at the next pixel by binary
//   search, so a lane costs O(visible pixels + visible wide events), not O(events).
// - TimelineData is immutable once handed to the widget (shared_ptr<const>); live updates build a new one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tb::ui {

enum class EventCat : uint8_t {
  Range,    // CPU range (ours, NVTX, Kineto cpu_op / user_annotation)
  Step,     // a training step range
  DataWait, // the training thread waiting for a batch
  Runtime,  // CUDA runtime / driver API call
  Sync,     // a blocking sync (host call or Kineto cuda_sync)
  Kernel,
  Memcpy,
  Memset,
  GpuAnnotation,  // gpu_user_annotation: shown, not counted as GPU activity
  Other,
  StepDetailed,   // a step of the step lane that ran inside a trace chunk: its detail is drawn below
  Count
};

const char* eventCatName(EventCat c);

enum class TrackKind : uint8_t { CpuThread, GpuStream, Other };

// One depth level of a track. Parallel arrays (columns) keep the hot loop cache-friendly.
struct Lane {
  static constexpr size_t kBlock = 256;
  std::vector<int64_t> start, end;
  std::vector<int64_t> max_end;      // prefix maximum of end (for binary search of the first visible event)
  std::vector<uint32_t> name;        // index into TimelineData::names
  std::vector<EventCat> cat;
  std::vector<int64_t> corr;         // correlation id linking launch <-> kernel; 0 = none
  std::vector<uint32_t> args;        // index into TimelineData::args (0 = none)
  std::vector<int64_t> block_min_start, block_max_end;  // per kBlock events

  size_t size() const { return start.size(); }
  // Appends one event; events must arrive sorted by start (finalize() sorts otherwise).
  void push(int64_t s, int64_t e, uint32_t n, EventCat c, int64_t correlation = 0, uint32_t a = 0);
  // Sorts by start when needed and rebuilds max_end and the blocks. Call once after filling.
  void finalize();
  // First index whose event may end at or after t (all earlier events end before t).
  size_t firstEndingAtOrAfter(int64_t t) const;
  // First index whose start is >= t, searching from `from`.
  size_t firstStartingAtOrAfter(int64_t t, size_t from) const;
};

struct Track {
  std::string name;        // "CPU thread 1234 (main)", "GPU 0 stream 7"
  TrackKind kind = TrackKind::CpuThread;
  // The row group it is drawn under: "process 4242" for the threads of one rank of a multi-process trace
  // (ranks of a data-parallel job), "" for none; GPU streams group by device (rowGroupOf).
  std::string group;
  int group_order = 0;     // CPU groups in this order (then sort_key inside a group)
  int64_t sort_key = 0;    // CPU threads first, then GPU streams
  std::vector<Lane> lanes; // index = nesting depth
};

// Analysis bands painted over the timeline (loader stall, launch gap, sync) with their totals.
// OutsideTraining: time between training iterations (a script's validation, checkpoints, logging), which no
// step holds and no throughput window counts.
// Profiler: TuneBench's own time (a trace chunk boundary), a band of its own so that it is never read as the
// program's.
enum class BandKind : uint8_t { LoaderStall, LaunchGap, Sync, Selection, OutsideTraining, Profiler };
struct Band {
  BandKind kind;
  int64_t start, end;
};

// A point in time drawn as a full-height line with its label: trace-wide instants (Kineto's "Record Window
// End") and the engine's config changes (where a toggle took effect).
struct Marker {
  int64_t t = 0;
  uint32_t name = 0;  // index into names
  int64_t arg = 0;    // config revision for config_change, else 0
};

// A memory counter of the trace (bytes by time, sorted): the device's allocated and reserved bytes, the host's
// resident set, drawn as a strip under the rows (TimelineWidget::paintMemory).
struct MemorySeries {
  std::string name;  // "memory: device allocated", ...
  std::vector<int64_t> t;
  std::vector<double> v;
};

struct TimelineData {
  std::vector<Track> tracks;
  std::vector<MemorySeries> memory;
  // The loader's queue (a script's "loader: batches ready" / "... in flight" counters, python/tunebench/hooks/
  // loader_lanes.py): batches by time, drawn as a strip under the memory strip (TimelineWidget::paintQueue).
  std::vector<MemorySeries> queue;
  std::vector<Marker> markers;     // sorted by time after finalize()
  std::vector<std::string> names;  // names[0] = ""
  std::vector<std::string> args;   // pretty "k: v" lines per event; args[0] = ""
  std::vector<Band> bands;
  int64_t t_min = 0, t_max = 0;    // extent of all events
  int64_t stall_total_ns = 0, gap_total_ns = 0;
  int stall_count = 0, gap_count = 0;
  int64_t outside_total_ns = 0;
  int outside_count = 0;
  int64_t profiler_total_ns = 0;   // TuneBench's own time (BandKind::Profiler)
  int profiler_count = 0;
  std::string source;              // file it came from, or "live run"

  uint32_t intern(const std::string& s);  // linear-time map lookup via the index below
  void finalize();  // finalizes lanes, drops tracks with nothing to draw, sorts tracks and markers, computes the extent
  size_t eventCount() const;

 private:
  struct NameIndex;
  std::shared_ptr<NameIndex> index_;
};

// Pure mapping between nanoseconds and pixels for a view [start, end) over `width` pixels.
class TimeMapper {
 public:
  static constexpr double kMinSpanNs = 100.0;  // deepest zoom: 100 ns across the view

  TimeMapper() = default;
  TimeMapper(double start_ns, double end_ns, double width_px) { setView(start_ns, end_ns); setWidth(width_px); }

  void setWidth(double w) { width_ = w < 1 ? 1 : w; }
  void setView(double start_ns, double end_ns);
  double start() const { return start_; }
  double end() const { return end_; }
  double span() const { return end_ - start_; }
  double width() const { return width_; }
  double nsPerPx() const { return span() / width_; }

  double toPx(double t_ns) const { return (t_ns - start_) * width_ / span(); }
  double toNs(double px) const { return start_ + px * span() / width_; }

  // factor > 1 zooms in, keeping the time under `px` fixed.
  void zoomAround(double px, double factor);
  void panPx(double dx);                          // positive: the content moves right (view goes earlier)
  void fit(int64_t t0, int64_t t1, double margin_frac = 0.02);
  // Keeps the view from drifting far outside [t0, t1].
  void clampTo(int64_t t0, int64_t t1);

 private:
  double start_ = 0, end_ = 1e6, width_ = 1000;
};

// One rectangle to paint, in time units so a stale list can be re-projected while a new one is built.
struct DrawItem {
  int64_t start, end;
  uint32_t row;       // global row index (track lanes stacked)
  uint32_t name;      // 0 for folded items
  uint32_t count;     // 1, or the number of folded events
  EventCat cat;
  uint32_t track, lane, index;  // source event (first one for folded items)
};

// An event of TimelineData: tracks[track].lanes[lane], event `index`.
struct EventRef {
  uint32_t track = 0, lane = 0;
  size_t index = 0;
};
// Find (Ctrl+F): the first event after `after` (by start, then track, lane, index; from the beginning when
// `after` is null) whose name contains `needle`, ignoring case; wraps around to the first match. Name
// matching runs once over the string table, then each lane is scanned from its first event at or after the
// start time, so a search costs the events after that time at most.
std::optional<EventRef> findNextEvent(const TimelineData& d, const std::string& needle, const EventRef* after);

// Summaries (the Analysis panel's "Selection" tab): kernels and ops of the timeline that start inside
// [t0, t1], by name: count and total time, longest total first. Memcpy/memset count as kernels' neighbours
// (category kept), CPU ranges and runtime calls as ops.
struct NameSummary {
  uint32_t name = 0;  // index into TimelineData::names
  bool gpu = false;   // kernel / memcpy / memset
  uint64_t count = 0;
  int64_t total_ns = 0;
};
std::vector<NameSummary> summarizeRange(const TimelineData& d, int64_t t0, int64_t t1);

struct RowInfo {
  uint32_t track, lane;
  bool header;         // first lane of its track
  bool group = false;  // a group's header row ("GPU 0", "process 4242") above its tracks: no events, lane = kGroupLane
  static constexpr uint32_t kGroupLane = 0xffffffffu;
};

// "GPU 0" for a GPU track named "GPU 0 stream 7" / "GPU 0 device-wide" / "GPU 0 stream 7 memcpy", else "".
std::string gpuGroupOf(const std::string& track_name);
// The header a track's rows sit under: its `group`, else its GPU ("GPU 0"), else "" (no header).
std::string rowGroupOf(const Track& track);

struct DrawList {
  std::vector<DrawItem> items;
  uint64_t generation = 0;
  double view_start = 0, view_end = 0, width = 0;
  size_t folded_events = 0;  // events merged into folded items (LOD effectiveness)
  double build_ms = 0;       // time the build took (set by the widget)
};

// Rows in display order: each track contributes one row per lane.
std::vector<RowInfo> layoutRows(const TimelineData& data);

// Builds the draw list for `view` over `rows[first_row, last_row)`. kFoldPx: items narrower are merged.
constexpr double kFoldPx = 3.0;
DrawList buildDrawList(const TimelineData& data, const std::vector<RowInfo>& rows, const TimeMapper& view,
                       size_t first_row, size_t last_row);

// Synthetic data for the bench and tests: `n` events spread over CPU/GPU tracks with nesting.
std::shared_ptr<TimelineData> makeSyntheticTimeline(size_t n, uint64_t seed = 1);

}  // namespace tb::ui
