#include "profiler/trace.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>
#include <new>
#include <set>
#include <unordered_map>

namespace tb::prof {

const char* to_string(EventKind k) {
  switch (k) {
    case EventKind::Range: return "range";
    case EventKind::Kernel: return "kernel";
    case EventKind::Memcpy: return "memcpy";
    case EventKind::Memset: return "memset";
    case EventKind::Runtime: return "runtime";
    case EventKind::Driver: return "driver";
    case EventKind::Sync: return "sync";
    case EventKind::Instant: return "instant";
    case EventKind::Counter: return "counter";
    case EventKind::Overhead: return "overhead";
  }
  return "?";
}

const char* to_string(TrackKind k) {
  switch (k) {
    case TrackKind::CpuThread: return "cpu";
    case TrackKind::GpuStream: return "gpu";
    case TrackKind::Counter: return "counter";
  }
  return "?";
}

// ---- memory ----

namespace detail {

namespace {
size_t mapped_length(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
}  // namespace

void* big_allocate(size_t bytes) {
  if (bytes >= kBigBytes) {
    // Huge pages need 2 MiB-aligned addresses: map 2 MiB more, keep the aligned part, give the rest back.
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t len = mapped_length(bytes);
    void* m = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const auto raw = reinterpret_cast<uintptr_t>(m);
    const uintptr_t aligned = (raw + kHuge - 1) / kHuge * kHuge;
    if (aligned > raw) munmap(m, aligned - raw);
    if (aligned + len < raw + len + kHuge) munmap(reinterpret_cast<void*>(aligned + len), raw + kHuge - aligned);
#ifdef MADV_HUGEPAGE
    madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // a hint, where THP is allowed
#endif
    return reinterpret_cast<void*>(aligned);
  }
  return ::operator new(bytes);
}

void big_deallocate(void* p, size_t bytes) {
  if (!p) return;
  if (bytes >= kBigBytes) munmap(p, mapped_length(bytes));
  else ::operator delete(p);
}

}  // namespace detail

// ---- Track ----

std::pair<uint32_t, uint32_t> Track::index_range(int64_t t0, int64_t t1) const {
  if (events_.empty() || t1 < t0) return {0, 0};
  // First block whose prefix max end reaches t0: no event before it can end at or after t0.
  auto bit = std::lower_bound(index_.begin(), index_.end(), t0,
                              [](const IndexEntry& b, int64_t t) { return b.max_end_prefix_ns < t; });
  if (bit == index_.end()) return {0, 0};
  const uint32_t first = bit->first;
  // Last: events are sorted by start; everything starting after t1 is out.
  auto eit = std::upper_bound(events_.begin() + first, events_.end(), t1,
                              [](int64_t t, const Event& e) { return t < e.start_ns; });
  const auto last = static_cast<uint32_t>(eit - events_.begin());
  if (last <= first) return {first, first};
  return {first, last};
}

// ---- Trace ----

struct Trace::Names {
  std::deque<std::string> storage;  // deque: elements never move, so the string_views below stay valid
  std::unordered_map<std::string_view, NameId> index;
  size_t bytes = 0;
};

Trace::Trace() : names_(std::make_unique<Names>()) { intern(""); }
Trace::Trace(Trace&&) noexcept = default;
Trace& Trace::operator=(Trace&&) noexcept = default;
Trace::~Trace() = default;

NameId Trace::intern(std::string_view s) {
  auto it = names_->index.find(s);
  if (it != names_->index.end()) return it->second;
  names_->storage.emplace_back(s);
  const auto id = static_cast<NameId>(names_->storage.size() - 1);
  names_->index.emplace(std::string_view(names_->storage.back()), id);
  names_->bytes += s.size() + sizeof(std::string) + 32;
  return id;
}

std::string_view Trace::name(NameId id) const {
  if (id >= names_->storage.size()) return {};
  return names_->storage[id];
}

size_t Trace::name_count() const { return names_->storage.size(); }

uint32_t Trace::counter_track(int64_t pid, const std::string& name) {
  int64_t next = 0;
  for (uint32_t i = 0; i < tracks_.size(); ++i) {
    const Track& t = tracks_[i];
    if (t.kind_ != TrackKind::Counter || t.pid_ != pid) continue;
    if (t.name_ == name) return i;
    next = std::max(next, t.tid_ + 1);
  }
  return track_for(TrackKind::Counter, pid, next, name);
}

uint32_t Trace::track_for(TrackKind kind, int64_t pid, int64_t tid, std::string_view name) {
  auto key = std::make_tuple(static_cast<int>(kind), pid, tid);
  auto it = track_index_.find(key);
  if (it != track_index_.end()) {
    Track& t = tracks_[it->second];
    if (!name.empty() && t.default_name_) {
      t.name_.assign(name);
      t.default_name_ = false;
    }
    return it->second;
  }
  Track t;
  t.kind_ = kind;
  t.pid_ = pid;
  t.tid_ = tid;
  t.default_name_ = name.empty();
  if (!name.empty()) {
    t.name_.assign(name);
  } else {
    switch (kind) {
      case TrackKind::CpuThread: t.name_ = "thread " + std::to_string(tid); break;
      case TrackKind::GpuStream: t.name_ = "GPU " + std::to_string(pid) + " stream " + std::to_string(tid); break;
      case TrackKind::Counter: t.name_ = "counter " + std::to_string(tid); break;
    }
  }
  t.sort_index_ = kind == TrackKind::CpuThread ? 0 : (kind == TrackKind::GpuStream ? (1LL << 40) : (1LL << 41));
  tracks_.push_back(std::move(t));
  const auto idx = static_cast<uint32_t>(tracks_.size() - 1);
  track_index_.emplace(key, idx);
  dirty_ = true;
  return idx;
}

void Trace::set_track_name(uint32_t track, std::string_view name) {
  if (track < tracks_.size() && !name.empty()) {
    tracks_[track].name_.assign(name);
    tracks_[track].default_name_ = false;
  }
}

void Trace::set_track_sort_index(uint32_t track, int64_t sort_index) {
  if (track < tracks_.size()) tracks_[track].sort_index_ = sort_index;
}

void Trace::reserve_events(uint32_t track, size_t n) {
  if (track < tracks_.size()) tracks_[track].events_.reserve(n);
}

EventVector& Trace::mutable_events(uint32_t track) {
  dirty_ = true;
  tracks_[track].sorted_ = false;
  return tracks_[track].events_;
}

void Trace::add_event(uint32_t track, const Event& e) {
  if (track >= tracks_.size()) return;
  Track& t = tracks_[track];
  t.events_.push_back(e);
  Event& b = t.events_.back();
  if (b.end_ns < b.start_ns) b.end_ns = b.start_ns;
  if (t.events_.size() > 1 && t.sorted_) {
    const Event& p = t.events_[t.events_.size() - 2];
    if (p.start_ns > b.start_ns || (p.start_ns == b.start_ns && p.end_ns < b.end_ns)) t.sorted_ = false;
  }
  dirty_ = true;
}

size_t Trace::event_count() const {
  size_t n = 0;
  for (const Track& t : tracks_) n += t.events_.size();
  return n;
}

size_t Trace::memory_bytes() const {
  size_t n = sizeof(Trace) + names_->bytes + names_->index.size() * 40;
  for (const Track& t : tracks_) {
    n += sizeof(Track) + t.name_.capacity() + t.events_.capacity() * sizeof(Event) +
         t.index_.capacity() * sizeof(Track::IndexEntry);
  }
  n += flows_.capacity() * sizeof(Flow);
  for (const auto& v : flow_of_dst_) n += v.capacity() * sizeof(uint32_t);
  n += track_index_.size() * 64;
  return n;
}

void Trace::finalize() {
  if (!dirty_) return;
  bool any = false;
  start_ns_ = 0;
  end_ns_ = 0;
  for (Track& t : tracks_) {
    auto& ev = t.events_;
    if (!t.sorted_) {
      std::stable_sort(ev.begin(), ev.end(), [](const Event& a, const Event& b) {
        if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
        return a.end_ns > b.end_ns;  // parent before child
      });
      t.sorted_ = true;
    }
    // Depth: a stack of open end times. Adjacent ranges (end == next start) are siblings.
    std::vector<int64_t> stack;
    t.max_depth_ = 0;
    for (Event& e : ev) {
      if (e.kind == EventKind::Counter) {
        e.depth = 0;
        continue;
      }
      while (!stack.empty() && stack.back() <= e.start_ns) stack.pop_back();
      e.depth = static_cast<uint8_t>(std::min<size_t>(stack.size(), 255));
      t.max_depth_ = std::max(t.max_depth_, e.depth);
      if (e.end_ns > e.start_ns) stack.push_back(e.end_ns);
    }
    // The index of index_range().
    t.index_.clear();
    t.index_.reserve((ev.size() + Track::kIndexEvents - 1) / Track::kIndexEvents);
    int64_t prefix = std::numeric_limits<int64_t>::min();
    for (size_t i = 0; i < ev.size(); i += Track::kIndexEvents) {
      const size_t n = std::min<size_t>(Track::kIndexEvents, ev.size() - i);
      for (size_t j = i; j < i + n; ++j) prefix = std::max(prefix, ev[j].end_ns);
      t.index_.push_back({static_cast<uint32_t>(i), prefix});
    }
    if (!ev.empty()) {
      const int64_t s = ev.front().start_ns, e = prefix;
      if (!any) {
        start_ns_ = s;
        end_ns_ = e;
        any = true;
      } else {
        start_ns_ = std::min(start_ns_, s);
        end_ns_ = std::max(end_ns_, e);
      }
    }
  }
  // Flows: correlate launches (runtime preferred over driver) with GPU work (kineto). Correlation ids are only
  // unique within a process: in a file holding several processes (concatenated ranks) the same id can name
  // one launch per process. Such a kernel goes to the process that launches unambiguously to its device.
  flows_.clear();
  struct Cand {
    uint64_t corr;
    int64_t pid;
    uint32_t ti, i;
    bool rt;
  };
  std::vector<Cand> cands;
  for (uint32_t ti = 0; ti < tracks_.size(); ++ti) {
    const Track& t = tracks_[ti];
    if (t.kind_ != TrackKind::CpuThread) continue;
    for (uint32_t i = 0; i < t.events_.size(); ++i) {
      const Event& e = t.events_[i];
      if (e.correlation == 0 || (e.kind != EventKind::Runtime && e.kind != EventKind::Driver)) continue;
      cands.push_back({e.correlation, t.pid_, ti, i, e.kind == EventKind::Runtime});
    }
  }
  // One candidate per (correlation, process): the runtime call if there is one, else the first driver call.
  std::stable_sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
    return std::tie(a.corr, a.pid, b.rt) < std::tie(b.corr, b.pid, a.rt);
  });
  cands.erase(std::unique(cands.begin(), cands.end(),
                          [](const Cand& a, const Cand& b) { return a.corr == b.corr && a.pid == b.pid; }),
              cands.end());
  auto range_of = [&](uint64_t corr) {
    return std::equal_range(cands.begin(), cands.end(), Cand{corr, 0, 0, 0, false},
                            [](const Cand& a, const Cand& b) { return a.corr < b.corr; });
  };
  if (!cands.empty()) {
    // Which process launches to which device, from the unambiguous ids.
    std::map<std::pair<int64_t, int64_t>, size_t> votes;  // (device, pid) -> count
    bool ambiguous = false;
    for (const Track& t : tracks_) {
      if (t.kind_ != TrackKind::GpuStream) continue;
      for (const Event& e : t.events_) {
        if (e.correlation == 0 || !is_gpu_activity(e.kind)) continue;
        auto [lo, hi] = range_of(e.correlation);
        if (hi - lo == 1) ++votes[{t.pid_, lo->pid}];
        ambiguous |= hi - lo > 1;
      }
    }
    std::map<int64_t, int64_t> owner;  // device -> the process most of its unambiguous work came from
    if (ambiguous) {
      std::map<int64_t, size_t> best;
      for (const auto& [k, n] : votes)
        if (n > best[k.first]) best[k.first] = n, owner[k.first] = k.second;
    }
    for (uint32_t ti = 0; ti < tracks_.size(); ++ti) {
      const Track& t = tracks_[ti];
      if (t.kind_ != TrackKind::GpuStream) continue;
      for (uint32_t i = 0; i < t.events_.size(); ++i) {
        const Event& e = t.events_[i];
        if (e.correlation == 0 || !is_gpu_activity(e.kind)) continue;
        auto [lo, hi] = range_of(e.correlation);
        const Cand* c = hi - lo == 1 ? &*lo : nullptr;
        if (hi - lo > 1) {
          auto o = owner.find(t.pid_);
          for (auto it = lo; o != owner.end() && it != hi; ++it)
            if (it->pid == o->second) c = &*it;
        }
        if (c) flows_.push_back(Flow{e.correlation, c->ti, c->i, ti, i});
      }
    }
  }
  std::sort(flows_.begin(), flows_.end(), [](const Flow& a, const Flow& b) {
    return std::tie(a.src_track, a.src_event, a.dst_track, a.dst_event) <
           std::tie(b.src_track, b.src_event, b.dst_track, b.dst_event);
  });
  flow_of_dst_.assign(tracks_.size(), {});
  for (uint32_t i = 0; i < flows_.size(); ++i) {
    auto& v = flow_of_dst_[flows_[i].dst_track];
    if (v.empty()) v.assign(tracks_[flows_[i].dst_track].events_.size(), UINT32_MAX);
    v[flows_[i].dst_event] = i;
  }
  dirty_ = false;
}

const Flow* Trace::flow_from(uint32_t track, uint32_t event) const {
  auto it = std::lower_bound(flows_.begin(), flows_.end(), std::make_pair(track, event),
                             [](const Flow& f, const std::pair<uint32_t, uint32_t>& k) {
                               return std::tie(f.src_track, f.src_event) < std::tie(k.first, k.second);
                             });
  if (it == flows_.end() || it->src_track != track || it->src_event != event) return nullptr;
  return &*it;
}

const Flow* Trace::flow_to(uint32_t track, uint32_t event) const {
  if (track >= flow_of_dst_.size() || event >= flow_of_dst_[track].size()) return nullptr;
  const uint32_t i = flow_of_dst_[track][event];
  return i == UINT32_MAX ? nullptr : &flows_[i];
}

void Trace::merge(const Trace& other) {
  std::vector<NameId> remap(other.name_count());
  for (NameId i = 0; i < remap.size(); ++i) remap[i] = intern(other.name(i));
  for (const Track& ot : other.tracks_) {
    // A counter is its process's by name: its tid is only the order in which its file met it (the memory
    // counters of a chunk and the loader's queue of a lanes file both start at 0).
    const uint32_t ti = ot.kind_ == TrackKind::Counter ? counter_track(ot.pid_, ot.name_)
                                                       : track_for(ot.kind_, ot.pid_, ot.tid_, ot.name_);
    tracks_[ti].events_.reserve(tracks_[ti].events_.size() + ot.events_.size());
    for (Event e : ot.events_) {
      e.name = e.name < remap.size() ? remap[e.name] : kNoName;
      e.detail = e.detail < remap.size() ? remap[e.detail] : kNoName;
      add_event(ti, e);
    }
  }
  meta_.dropped_records += other.meta_.dropped_records;
  if (meta_.device.empty()) meta_.device = other.meta_.device;
  if (!other.meta_.collector_state.empty()) {
    meta_.collector_state = other.meta_.collector_state;
    meta_.collector_reason = other.meta_.collector_reason;
  }
  for (const auto& [k, v] : other.meta_.versions) meta_.versions.emplace(k, v);
  for (const auto& [k, v] : other.meta_.extra) meta_.extra.emplace(k, v);
  for (const auto& [pid, name] : other.meta_.process_names) meta_.process_names.emplace(pid, name);
  for (const auto& [k, v] : other.meta_.documents) meta_.documents.emplace(k, v);
  finalize();
}

void Trace::shift_time(int64_t delta_ns) {
  if (delta_ns == 0) return;
  for (Track& t : tracks_)
    for (Event& e : t.events_) {
      e.start_ns += delta_ns;
      e.end_ns += delta_ns;
    }
  dirty_ = true;
  finalize();
}

void Trace::shift_time(int64_t at_a, int64_t delta_a, int64_t at_b, int64_t delta_b) {
  if (at_a == at_b || delta_a == delta_b) return shift_time(delta_b);
  // 128-bit products: an hour of nanoseconds times a drift of milliseconds overflows 64 bits.
  const auto delta = [&](int64_t t) {
    return delta_a + int64_t((__int128)(t - at_a) * (delta_b - delta_a) / (at_b - at_a));
  };
  for (Track& t : tracks_)
    for (Event& e : t.events_) {
      e.start_ns += delta(e.start_ns);
      e.end_ns += delta(e.end_ns);
    }
  dirty_ = true;
  finalize();
}

void Trace::move_pids(int64_t offset) {
  if (offset == 0) return;
  track_index_.clear();
  // A pseudo-process (negative: Kineto's rows, the step lane) moves down, so it stays one: moved up, a rank's
  // lane became a positive pid, a process of the job to every analysis.
  const auto moved = [offset](int64_t pid) { return pid < 0 ? pid - offset : pid + offset; };
  for (uint32_t i = 0; i < tracks_.size(); ++i) {
    tracks_[i].pid_ = moved(tracks_[i].pid_);
    track_index_.emplace(std::make_tuple(static_cast<int>(tracks_[i].kind_), tracks_[i].pid_, tracks_[i].tid_), i);
  }
  std::map<int64_t, std::string> names;
  for (auto& [pid, name] : meta_.process_names) names.emplace(moved(pid), std::move(name));
  meta_.process_names = std::move(names);
  dirty_ = true;
  finalize();
}

bool Trace::shares_pids_with(const Trace& other) const {
  // Processes and GPUs. A counter is not a process of its own (it is its process's, or at pid 0 in traces
  // from before counters had one), nor are Kineto's pseudo processes (negative pids).
  const auto own = [](const Track& t) { return t.kind_ != TrackKind::Counter && t.pid_ >= 0; };
  std::set<std::pair<int, int64_t>> mine;
  for (const Track& t : tracks_)
    if (own(t)) mine.emplace(static_cast<int>(t.kind_), t.pid_);
  for (const Track& t : other.tracks_)
    if (own(t) && mine.count({static_cast<int>(t.kind_), t.pid_})) return true;
  return false;
}

}  // namespace tb::prof
