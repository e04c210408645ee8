#include "ui/trace_loader.h"

#include <algorithm>
#include <map>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "profiler/compiled_kernels.h"
#include "profiler/range_names.h"
#include "profiler/trace_io.h"

namespace tb::ui {

namespace {

EventCat categorize(const tb::prof::Event& e, std::string_view name, tb::prof::TrackKind tk, bool lane) {
  using K = tb::prof::EventKind;
  switch (e.kind) {
    case K::Kernel: return EventCat::Kernel;
    case K::Memcpy: return EventCat::Memcpy;
    case K::Memset: return EventCat::Memset;
    case K::Runtime:
    case K::Driver: return (e.flags & tb::prof::kFlagBlockingSync) ? EventCat::Sync : EventCat::Runtime;
    case K::Sync: return EventCat::Sync;
    case K::Range:
      if (tk == tb::prof::TrackKind::GpuStream) return EventCat::GpuAnnotation;
      if (lane) {  // the step lane: every step from the step stream, the detailed ones brighter
        namespace n = tb::prof::names;
        if (name == n::kLaneStep) return e.detail != tb::prof::kNoName ? EventCat::StepDetailed : EventCat::Step;
        if (name == n::kLaneDataWait) return EventCat::DataWait;
        if (name == n::kLaneOutside) return EventCat::Other;
        // A recompile, a graph break, a failed compile: marks to find, in the colour of what stands out.
        if (name == n::kLaneRecompile || name == n::kLaneGraphBreak || name == n::kLaneCompileFailed)
          return EventCat::Sync;
        return EventCat::Range;
      }
      if (name == "step" || name.rfind("ProfilerStep#", 0) == 0) return EventCat::Step;
      if (name == "data_wait" || (name.rfind("enumerate(DataLoader)", 0) == 0 && name.size() >= 8 &&
                                  name.substr(name.size() - 8) == "__next__"))
        return EventCat::DataWait;
      if (name == "sync") return EventCat::Sync;
      return EventCat::Range;
    default: return EventCat::Other;
  }
}

const char* memcpyKindName(tb::prof::MemcpyKind k) {
  switch (k) {
    case tb::prof::MemcpyKind::HtoD: return "HtoD";
    case tb::prof::MemcpyKind::DtoH: return "DtoH";
    case tb::prof::MemcpyKind::DtoD: return "DtoD";
    case tb::prof::MemcpyKind::HtoH: return "HtoH";
    case tb::prof::MemcpyKind::PtoP: return "PtoP";
    default: return "?";
  }
}

}  // namespace

std::shared_ptr<TimelineData> toTimeline(const tb::prof::Trace& trace, const tb::prof::AnalysisResult* a) {
  auto d = std::make_shared<TimelineData>();
  d->names.reserve(trace.name_count() + 1);
  // Same string table order as the trace so name ids map 1:1 (entry 0 is "" in both).
  for (size_t i = 0; i < trace.name_count(); ++i) d->intern(std::string(trace.name(tb::prof::NameId(i))));
  d->args.emplace_back();
  // Several processes with threads (the ranks of a data-parallel job, merged): a row group per process, ranks
  // in rank order. Kineto's pseudo processes (negative pids) stay ungrouped.
  std::vector<int64_t> cpu_pids;
  for (const tb::prof::Track& pt : trace.tracks())
    if (pt.kind() == tb::prof::TrackKind::CpuThread && !pt.empty() && pt.pid() >= 0 &&
        std::find(cpu_pids.begin(), cpu_pids.end(), pt.pid()) == cpu_pids.end())
      cpu_pids.push_back(pt.pid());
  tb::prof::sort_processes(trace.meta(), cpu_pids);
  // With every step on the step lane, the chunks' "untraced steps" markers say nothing more: a gap has its steps.
  const bool has_lane = std::any_of(trace.tracks().begin(), trace.tracks().end(), [](const tb::prof::Track& t) {
    return tb::prof::is_step_lane(t) && t.kind() == tb::prof::TrackKind::CpuThread && !t.empty();
  });
  // A CUDA graph's replays by (graph, the launch's correlation id): a graph kernel's details say which replay of
  // how many ran it, and in which step (the analysis's cuda_graphs; none without an analysis).
  std::map<std::pair<uint32_t, uint64_t>, std::string> replay_of;
  if (a)
    for (const auto& g : a->cuda_graphs.graphs)
      for (size_t i = 0; i < g.replay_list.size(); ++i) {
        const auto& x = g.replay_list[i];
        replay_of[{g.graph, x.correlation}] = "replay " + std::to_string(i + 1) + " of " + std::to_string(g.replay_list.size()) +
                                              (x.step >= 0 ? ", step " + std::to_string(x.step) : std::string());
      }
  // The lane's memory after every step holds the chunks' own (the same readings of their steps): drawn once.
  std::vector<std::string> lane_counters;
  for (const tb::prof::Track& pt : trace.tracks())
    if (pt.kind() == tb::prof::TrackKind::Counter && !pt.empty() && tb::prof::is_step_lane(pt))
      lane_counters.emplace_back(trace.name(pt.events().front().name));
  // Inductor's kernels: the details of one say the ops it fuses and the user's lines it computes (the compile
  // lane's, else its name's ops). One text per kernel name, shared by its runs.
  const auto compiled = tb::prof::lane_kernels(trace);
  constexpr uint32_t kUnseen = UINT32_MAX;
  std::vector<uint32_t> note_of(trace.name_count(), kUnseen);
  auto kernelNote = [&](tb::prof::NameId n) -> uint32_t {
    if (n >= note_of.size()) return 0;
    uint32_t& at = note_of[n];
    if (at != kUnseen) return at;
    const std::string_view name = trace.name(n);
    if (!tb::prof::is_inductor_kernel_name(name)) return at = 0;
    tb::prof::LaneKernel k;
    if (const auto it = compiled.find(name); it != compiled.end()) k = it->second;
    else k.name = std::string(tb::prof::inductor_kernel_name(name));
    at = uint32_t(d->args.size());
    d->args.push_back(tb::prof::kernel_note(k));
    return at;
  };
  for (const tb::prof::Track& pt : trace.tracks()) {
    if (pt.kind() == tb::prof::TrackKind::Counter && !pt.empty()) {
      // The memory counters (the engine's after every step, torch.profiler's profile_memory totals) and a
      // script's loader queue: strips under the rows. A counter track holds one name.
      const std::string cname(trace.name(pt.events().front().name));
      if (!tb::prof::is_step_lane(pt) &&
          std::find(lane_counters.begin(), lane_counters.end(), cname) != lane_counters.end())
        continue;
      auto series = [&] {
        MemorySeries s;
        s.name = cname;
        for (const tb::prof::Event& e : pt.events()) {
          s.t.push_back(e.start_ns);
          s.v.push_back(e.value);
        }
        return s;
      };
      if (cname.rfind("memory: ", 0) == 0) d->memory.push_back(series());
      else if (cname.rfind("loader: batches ", 0) == 0) d->queue.push_back(series());  // a script's loader queue
      continue;
    }
    if (pt.kind() == tb::prof::TrackKind::Counter || pt.empty()) continue;
    Track t;
    t.kind = pt.kind() == tb::prof::TrackKind::GpuStream ? TrackKind::GpuStream : TrackKind::CpuThread;
    t.name = pt.name();
    if (t.name.empty())
      t.name = t.kind == TrackKind::GpuStream ? "GPU " + std::to_string(pt.pid()) + " stream " + std::to_string(pt.tid())
                                              : "thread " + std::to_string(pt.tid());
    t.sort_key = (pt.sort_index() * 1'000'000 + pt.tid()) * 2;
    if (t.kind == TrackKind::CpuThread && cpu_pids.size() > 1 && pt.pid() >= 0) {
      t.group = tb::prof::process_label(trace.meta(), pt.pid());
      t.group_order = int(std::find(cpu_pids.begin(), cpu_pids.end(), pt.pid()) - cpu_pids.begin()) + 1;
    }
    t.lanes.resize(size_t(pt.max_depth()) + 1);
    // memcpy/memset get their own row under their stream (as in Nsight Systems): copies overlapping kernels
    // would otherwise hide in the kernel row.
    Track copies;
    copies.kind = TrackKind::GpuStream;
    copies.name = t.name + " · memcpy/memset";
    copies.sort_key = t.sort_key + 1;
    copies.lanes.resize(1);
    const bool marker_track = pt.name() == tb::prof::kGlobalMarkersTrack;
    const bool lane_track = tb::prof::is_step_lane(pt);
    for (const tb::prof::Event& e : pt.events()) {
      const std::string_view name = trace.name(e.name);
      if (has_lane && name == "TuneBench: untraced steps") continue;
      if (e.kind == tb::prof::EventKind::Instant && (marker_track || name == tb::prof::names::kConfigChange))
        d->markers.push_back({e.start_ns, e.name, e.arg == tb::prof::kNoArg ? 0 : e.arg});
      if (e.kind == tb::prof::EventKind::Instant || e.kind == tb::prof::EventKind::Counter) continue;
      std::string args;
      if (e.detail != tb::prof::kNoName) args = std::string(trace.name(e.detail));
      if (e.kind == tb::prof::EventKind::Memcpy || e.kind == tb::prof::EventKind::Memset) {
        if (e.arg != tb::prof::kNoArg) args += (args.empty() ? "" : "\n") + std::string("bytes: ") + std::to_string(e.arg);
        if (e.kind == tb::prof::EventKind::Memcpy) args += (args.empty() ? "" : "\n") + std::string("kind: ") + memcpyKindName(e.memcpy_kind());
      } else if (e.arg != tb::prof::kNoArg && e.kind == tb::prof::EventKind::Range) {
        args += (args.empty() ? "" : "\n") + std::string("arg: ") + std::to_string(e.arg);
      }
      if (e.graph && tb::prof::is_gpu_activity(e.kind)) {
        std::string g = "CUDA graph " + std::to_string(e.graph);
        if (const uint64_t node = e.graph_node()) g += ", node " + std::to_string(node);
        if (auto it = replay_of.find({e.graph, e.correlation}); it != replay_of.end()) g += "\n" + it->second;
        args += (args.empty() ? "" : "\n") + g;
      }
      uint32_t ai = 0;
      const bool kernel_run = pt.kind() == tb::prof::TrackKind::GpuStream ? e.kind == tb::prof::EventKind::Kernel
                                                                          : e.kind == tb::prof::EventKind::Range;
      if (const uint32_t note = kernel_run && !lane_track ? kernelNote(e.name) : 0; note) {
        if (args.empty()) ai = note;
        else args = d->args[note] + "\n" + args;
      }
      if (!args.empty()) {
        ai = uint32_t(d->args.size());
        d->args.push_back(std::move(args));
      }
      const bool copy = pt.kind() == tb::prof::TrackKind::GpuStream &&
                        (e.kind == tb::prof::EventKind::Memcpy || e.kind == tb::prof::EventKind::Memset);
      Lane& lane = copy ? copies.lanes[0] : t.lanes[std::min<size_t>(e.depth, t.lanes.size() - 1)];
      lane.push(e.start_ns, e.end_ns, e.name, categorize(e, name, pt.kind(), lane_track), int64_t(e.correlation), ai);
    }
    d->tracks.push_back(std::move(t));
    if (!copies.lanes[0].start.empty()) d->tracks.push_back(std::move(copies));
  }
  if (a) {
    for (const auto& iv : a->loader_stall_intervals) d->bands.push_back({BandKind::LoaderStall, iv.t0, iv.t1});
    for (const auto& iv : a->launch_gap_intervals) d->bands.push_back({BandKind::LaunchGap, iv.t0, iv.t1});
    for (const auto& sp : a->sync_points) d->bands.push_back({BandKind::Sync, sp.interval.t0, sp.interval.t1});
    for (const auto& iv : a->outside_training_intervals) d->bands.push_back({BandKind::OutsideTraining, iv.t0, iv.t1});
    for (const auto& iv : a->profiler_intervals) d->bands.push_back({BandKind::Profiler, iv.t0, iv.t1});
    std::sort(d->bands.begin(), d->bands.end(), [](const Band& x, const Band& y) { return x.start < y.start; });
    d->stall_total_ns = a->loader_stall_ns;
    d->gap_total_ns = a->launch_gap_ns;
    d->stall_count = int(a->loader_stall_count);
    d->gap_count = int(a->launch_gap_count);
    d->outside_total_ns = a->outside_training_ns;
    d->outside_count = int(a->outside_training_count);
    d->profiler_total_ns = a->profiler_ns;
    d->profiler_count = int(a->profiler_count);
  }
  d->source = trace.meta().source_path;
  d->finalize();
  return d;
}

LoadedTrace analyzeAndConvert(const tb::prof::Trace& trace, const QStringList& sources) {
  LoadedTrace out;
  out.sources = sources;
  out.meta = trace.meta();
  out.source_events = trace.event_count();
  out.analysis = std::make_shared<tb::prof::AnalysisResult>(tb::prof::analyze(trace));
  // The ranks of a data-parallel job in one file: each analysed on its own, then compared (profiler/ranks.h).
  if (const auto pids = tb::prof::processes_with_steps(trace); pids.size() > 1) {
    std::vector<tb::prof::AnalysisResult> per_rank;
    std::vector<std::string> labels;
    for (int64_t pid : pids) {
      tb::prof::AnalysisOptions o;
      o.pid = pid;
      per_rank.push_back(tb::prof::analyze(trace, o));
      labels.push_back(tb::prof::process_label(trace.meta(), pid));
    }
    out.ranks = std::make_shared<tb::prof::RankAnalysis>(tb::prof::analyze_ranks(per_rank, labels));
  }
  out.timeline = toTimeline(trace, out.analysis.get());
  out.ok = true;
  return out;
}

namespace {

// The dropped Trace lives in many small blocks that glibc keeps in the worker thread's arena; hand them
// back so the window's resident size really falls to the draw store.
void releaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// One file, or several chunks merged into one finalized trace, with a live script's step lane when one is
// given; per-file errors are collected, and why a lane is not drawn goes to `lane_note`.
std::unique_ptr<tb::prof::Trace> loadMerged(const QStringList& paths, QStringList& errors,
                                            const StepLaneInput* lane = nullptr, QString* lane_note = nullptr) {
  if (paths.size() == 1 && !lane) {
    auto r = tb::prof::load_trace(paths.front().toStdString());
    if (!r.ok()) {
      errors << QStringLiteral("cannot open %1: %2").arg(paths.front(), QString::fromStdString(r.error().to_string()));
      return nullptr;
    }
    return std::move(r.value());
  }
  // A live script's chunks, its loader's lanes among them (on the monotonic clock until a chunk places them).
  tb::prof::ChunkMerger merger;
  size_t chunks = 0;
  for (const QString& p : paths) {
    auto r = tb::prof::load_trace(p.toStdString());
    if (!r.ok()) {
      errors << QStringLiteral("%1: %2").arg(p, QString::fromStdString(r.error().to_string()));
      continue;
    }
    ++chunks;
    merger.add(std::move(r.value()));
  }
  const std::optional<int64_t> offset = merger.offset_ns();
  auto merged = merger.take();
  merged->meta().extra.erase("tunebench_clock_offset_us");
  if (lane && !lane->steps.empty()) {
    // The steps are on the monotonic clock; chunks state theirs against it. Before the first chunk the lane is
    // the whole trace, on its own clock; chunks that state no offset cannot be lined up with it.
    if (offset || chunks == 0) {
      tb::prof::add_step_lane(*merged, lane->steps, lane->outside, offset.value_or(0));
      tb::prof::add_compile_lane(*merged, lane->compiles, offset.value_or(0));
      merged->meta().extra["tunebench_run"] = "script";
    } else if (lane_note) {
      *lane_note = QStringLiteral("the trace chunks state no clock offset: every step cannot be drawn beside them");
    }
  }
  merged->finalize();
  return merged;
}

}  // namespace

LoadedTrace loadTraceFile(const QString& path) {
  QStringList errors;
  auto t = loadMerged({path}, errors);
  LoadedTrace out;
  if (!t) {
    out.error = errors.join("; ");
    return out;
  }
  if (t->event_count() == 0) {
    out.error = QStringLiteral("cannot open %1: the trace holds no events").arg(path);
    return out;
  }
  out = analyzeAndConvert(*t, {path});
  t.reset();
  releaseFreedMemory();
  return out;
}

LoadedTrace loadTraceChunks(const QStringList& paths, std::shared_ptr<const StepLaneInput> lane) {
  QStringList errors;
  QString lane_note;
  const bool any = !paths.isEmpty() || (lane && !lane->steps.empty());
  auto merged = any ? loadMerged(paths, errors, lane.get(), &lane_note) : nullptr;
  if (!merged || merged->event_count() == 0) {
    LoadedTrace out;
    out.error = errors.isEmpty() ? QStringLiteral("no events in the trace chunks") : errors.join("; ");
    return out;
  }
  LoadedTrace out = analyzeAndConvert(*merged, paths);
  if (lane_note.isEmpty()) out.lane = std::move(lane);
  out.lane_note = lane_note;
  merged.reset();
  releaseFreedMemory();
  if (!errors.isEmpty()) out.error = errors.join("; ");  // partial: ok stays true
  return out;
}

QString exportChromeTrace(const LoadedTrace& t, const QString& path) {
  if (!t.ok || (t.sources.isEmpty() && !t.lane)) return QStringLiteral("no trace to export");
  QStringList errors;
  auto trace = loadMerged(t.sources, errors, t.lane.get());
  if (!trace || !errors.isEmpty()) return QStringLiteral("cannot re-read the trace for export: %1").arg(errors.join("; "));
  // The view was built from these files; if they changed since, the export would not be what is shown.
  if (trace->event_count() != t.source_events)
    return QStringLiteral("the trace files changed since they were opened; open them again to export");
  const auto st = tb::prof::write_chrome_trace(*trace, path.toStdString(),
                                               t.analysis ? t.analysis->findings : std::vector<tb::prof::Finding>{});
  return st.ok() ? QString() : QString::fromStdString(st.error().to_string());
}

}  // namespace tb::ui
