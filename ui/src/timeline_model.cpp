#include "ui/timeline_model.h"

#include <cctype>
#include <tuple>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <unordered_map>

namespace tb::ui {

const char* eventCatName(EventCat c) {
  switch (c) {
    case EventCat::Range: return "range";
    case EventCat::Step: return "step";
    case EventCat::DataWait: return "data wait";
    case EventCat::Runtime: return "runtime API";
    case EventCat::Sync: return "sync";
    case EventCat::Kernel: return "kernel";
    case EventCat::Memcpy: return "memcpy";
    case EventCat::Memset: return "memset";
    case EventCat::GpuAnnotation: return "GPU annotation";
    case EventCat::Other: return "other";
    case EventCat::StepDetailed: return "step (detailed)";
    case EventCat::Count: break;
  }
  return "other";
}

void Lane::push(int64_t s, int64_t e, uint32_t n, EventCat c, int64_t correlation, uint32_t a) {
  if (e < s) e = s;
  start.push_back(s);
  end.push_back(e);
  name.push_back(n);
  cat.push_back(c);
  corr.push_back(correlation);
  args.push_back(a);
}

void Lane::finalize() {
  const size_t n = start.size();
  if (!std::is_sorted(start.begin(), start.end())) {
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return start[a] < start[b]; });
    auto permute = [&](auto& v) {
      auto copy = v;
      for (size_t i = 0; i < n; ++i) v[i] = copy[order[i]];
    };
    permute(start);
    permute(end);
    permute(name);
    permute(cat);
    permute(corr);
    permute(args);
  }
  max_end.resize(n);
  int64_t m = INT64_MIN;
  for (size_t i = 0; i < n; ++i) max_end[i] = m = std::max(m, end[i]);
  const size_t nb = (n + kBlock - 1) / kBlock;
  block_min_start.assign(nb, INT64_MAX);
  block_max_end.assign(nb, INT64_MIN);
  for (size_t i = 0; i < n; ++i) {
    const size_t b = i / kBlock;
    block_min_start[b] = std::min(block_min_start[b], start[i]);
    block_max_end[b] = std::max(block_max_end[b], end[i]);
  }
}

size_t Lane::firstEndingAtOrAfter(int64_t t) const {
  // Blocks first (coarse), then inside the block: max_end is non-decreasing so lower_bound applies.
  return size_t(std::lower_bound(max_end.begin(), max_end.end(), t) - max_end.begin());
}

size_t Lane::firstStartingAtOrAfter(int64_t t, size_t from) const {
  const size_t n = start.size();
  if (from >= n) return n;
  if (start[from] >= t) return from;
  // Gallop over the block starts (small, cache-resident) from `from`'s block, then search inside one block:
  // a jump across a dense pixel touches a few cache lines instead of a long walk through `start`.
  const size_t nb = block_min_start.size();
  size_t lo = std::min(from / kBlock + 1, nb), hi = lo, step = 1;
  while (hi < nb && block_min_start[hi] < t) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  hi = std::min(hi, nb);
  lo = std::min(lo, hi);
  const size_t bb = size_t(std::lower_bound(block_min_start.begin() + lo, block_min_start.begin() + hi, t) - block_min_start.begin());
  const size_t a = std::max(from, bb == 0 ? size_t(0) : (bb - 1) * kBlock);
  const size_t e = std::min(n, bb * kBlock);
  if (a >= e) return e;
  return size_t(std::lower_bound(start.begin() + a, start.begin() + e, t) - start.begin());
}

struct TimelineData::NameIndex {
  std::unordered_map<std::string, uint32_t> map;
};

uint32_t TimelineData::intern(const std::string& s) {
  if (!index_) {
    index_ = std::make_shared<NameIndex>();
    if (names.empty()) names.emplace_back();
    for (uint32_t i = 0; i < names.size(); ++i) index_->map.emplace(names[i], i);
  }
  auto [it, inserted] = index_->map.emplace(s, uint32_t(names.size()));
  if (inserted) names.push_back(s);
  return it->second;
}

void TimelineData::finalize() {
  if (names.empty()) names.emplace_back();
  if (args.empty()) args.emplace_back();
  std::stable_sort(tracks.begin(), tracks.end(), [](const Track& a, const Track& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.group_order != b.group_order) return a.group_order < b.group_order;
    return a.sort_key < b.sort_key;
  });
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (auto& t : tracks) {
    while (!t.lanes.empty() && t.lanes.back().size() == 0) t.lanes.pop_back();
    for (auto& l : t.lanes) {
      l.finalize();
      if (l.size()) {
        lo = std::min(lo, l.start.front());
        hi = std::max(hi, l.max_end.back());
      }
    }
  }
  // A track of instants only (markers, counters' threads) would be an empty row.
  tracks.erase(std::remove_if(tracks.begin(), tracks.end(), [](const Track& t) { return t.lanes.empty(); }), tracks.end());
  std::sort(markers.begin(), markers.end(), [](const Marker& a, const Marker& b) { return a.t < b.t; });
  for (auto& b : bands) {
    lo = std::min(lo, b.start);
    hi = std::max(hi, b.end);
  }
  if (lo > hi) lo = hi = 0;
  t_min = lo;
  t_max = hi;
}

size_t TimelineData::eventCount() const {
  size_t n = 0;
  for (auto& t : tracks)
    for (auto& l : t.lanes) n += l.size();
  return n;
}

void TimeMapper::setView(double s, double e) {
  if (!(e - s >= kMinSpanNs)) {
    const double mid = 0.5 * (s + e);
    s = mid - kMinSpanNs / 2;
    e = mid + kMinSpanNs / 2;
  }
  start_ = s;
  end_ = e;
}

void TimeMapper::zoomAround(double px, double factor) {
  if (!(factor > 0)) return;
  const double anchor = toNs(px);
  double new_span = span() / factor;
  if (new_span < kMinSpanNs) new_span = kMinSpanNs;
  const double frac = px / width_;
  setView(anchor - frac * new_span, anchor - frac * new_span + new_span);
}

void TimeMapper::panPx(double dx) {
  const double dt = dx * nsPerPx();
  start_ -= dt;
  end_ -= dt;
}

void TimeMapper::fit(int64_t t0, int64_t t1, double margin_frac) {
  double s = double(t0), e = double(t1);
  if (e <= s) e = s + 1000;
  const double m = (e - s) * margin_frac;
  setView(s - m, e + m);
}

void TimeMapper::clampTo(int64_t t0, int64_t t1) {
  // Never off the data: at most a 2% margin on either side, and zooming out stops at the whole trace.
  const double total = std::max(double(t1 - t0), kMinSpanNs);
  const double lo = double(t0) - 0.02 * total, hi = double(t1) + 0.02 * total;
  if (span() >= hi - lo) {
    setView(lo, hi);
    return;
  }
  if (start_ < lo) panPx(-(lo - start_) / nsPerPx());
  if (end_ > hi) panPx((end_ - hi) / nsPerPx());
}

std::string gpuGroupOf(const std::string& name) {
  if (name.rfind("GPU ", 0) != 0) return {};
  size_t i = 4;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return i > 4 ? name.substr(0, i) : std::string();
}

std::string rowGroupOf(const Track& tr) {
  if (!tr.group.empty()) return tr.group;
  return tr.kind == TrackKind::GpuStream ? gpuGroupOf(tr.name) : std::string();
}

std::vector<RowInfo> layoutRows(const TimelineData& data) {
  std::vector<RowInfo> rows;
  std::string group;  // the group (a GPU, a rank's process) the rows are in
  for (uint32_t t = 0; t < data.tracks.size(); ++t) {
    const auto& tr = data.tracks[t];
    // A row group per device and per process of a multi-process trace: a header row before its first track.
    const std::string g = rowGroupOf(tr);
    if (!g.empty() && g != group) rows.push_back({t, RowInfo::kGroupLane, false, true});
    group = g;
    if (tr.lanes.empty()) {
      rows.push_back({t, 0, true});
      continue;
    }
    for (uint32_t l = 0; l < tr.lanes.size(); ++l) rows.push_back({t, l, l == 0});
  }
  return rows;
}

static bool isGpuWork(EventCat c) { return c == EventCat::Kernel || c == EventCat::Memcpy || c == EventCat::Memset; }
static bool isStep(EventCat c) { return c == EventCat::Step || c == EventCat::StepDetailed; }

DrawList buildDrawList(const TimelineData& data, const std::vector<RowInfo>& rows, const TimeMapper& view,
                       size_t first_row, size_t last_row) {
  DrawList out;
  out.view_start = view.start();
  out.view_end = view.end();
  out.width = view.width();
  const double ns_per_px = view.nsPerPx();
  const double fold_ns = kFoldPx * ns_per_px;
  const int64_t v0 = int64_t(std::floor(view.start()));
  const int64_t v1 = int64_t(std::ceil(view.end()));
  last_row = std::min(last_row, rows.size());
  for (size_t r = first_row; r < last_row; ++r) {
    const RowInfo& ri = rows[r];
    if (ri.track >= data.tracks.size() || ri.lane >= data.tracks[ri.track].lanes.size()) continue;
    const Lane& L = data.tracks[ri.track].lanes[ri.lane];
    const size_t n = L.size();
    size_t i = L.firstEndingAtOrAfter(v0);
    while (i < n && L.start[i] <= v1) {
      const int64_t s = L.start[i], e = L.end[i];
      if (double(e - s) >= fold_ns) {
        out.items.push_back({s, e, uint32_t(r), L.name[i], 1, L.cat[i], ri.track, ri.lane, uint32_t(i)});
        ++i;
        continue;
      }
      // Fold a run of sub-3px events. Each iteration either jumps past everything starting inside the
      // run's last pixel (binary search) or absorbs one event that starts in a later pixel, so the cost is
      // bounded by the pixels the run covers, not by the events in it.
      DrawItem run{s, e, uint32_t(r), 0, 1, L.cat[i], ri.track, ri.lane, uint32_t(i)};
      bool mixed = false, gpu_work = isGpuWork(L.cat[i]);
      // Steps folded together stay steps (the step lane zoomed out), detailed when any of them is.
      bool steps_only = isStep(L.cat[i]), detailed = L.cat[i] == EventCat::StepDetailed;
      ++i;
      while (i < n && L.start[i] <= v1) {  // a run never extends past the view
        const double next_px_boundary = view.toNs(std::floor(view.toPx(double(run.end))) + 1.0);
        const size_t j = L.firstStartingAtOrAfter(int64_t(std::ceil(next_px_boundary)), i);
        if (j > i) {
          // Events start sorted and (within one depth) do not overlap, so a wide event among those starting in
          // this pixel is the last one: it ends the run and is drawn on its own by the outer loop.
          const size_t k = double(L.end[j - 1] - L.start[j - 1]) >= fold_ns ? j - 1 : j;
          if (k > i) {
            run.count += uint32_t(k - i);
            run.end = std::max(run.end, L.max_end[k - 1]);
            if (L.cat[k - 1] != run.cat) mixed = true;
            gpu_work |= isGpuWork(L.cat[k - 1]);
            steps_only &= isStep(L.cat[k - 1]);
            detailed |= L.cat[k - 1] == EventCat::StepDetailed;
            i = k;
          }
          if (k < j) break;
          continue;
        }
        if (double(L.start[i] - run.end) > ns_per_px) break;       // a visible gap ends the run
        if (double(L.end[i] - L.start[i]) >= fold_ns) break;        // a wide event is drawn on its own
        run.end = std::max(run.end, L.end[i]);
        if (L.cat[i] != run.cat) mixed = true;
        gpu_work |= isGpuWork(L.cat[i]);
        steps_only &= isStep(L.cat[i]);
        detailed |= L.cat[i] == EventCat::StepDetailed;
        ++run.count;
        ++i;
      }
      if (run.count > 1) out.folded_events += run.count;
      // A mixed run on a GPU row is still GPU work (kernels interleaved with memsets / sync markers).
      if (mixed) run.cat = steps_only ? (detailed ? EventCat::StepDetailed : EventCat::Step)
                         : gpu_work   ? EventCat::Kernel
                                      : EventCat::Other;
      out.items.push_back(run);
    }
  }
  return out;
}

std::shared_ptr<TimelineData> makeSyntheticTimeline(size_t n, uint64_t seed) {
  auto d = std::make_shared<TimelineData>();
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> kdur(1'000, 60'000), gap(200, 8'000);
  const int cpu_tracks = 4, gpu_tracks = 4;
  const uint32_t names[] = {d->intern("aten::conv2d"), d->intern("aten::relu"), d->intern("aten::add_"),
                            d->intern("cudaLaunchKernel"), d->intern("volta_sgemm_128x64_nn"),
                            d->intern("elementwise_kernel"), d->intern("Memcpy HtoD"), d->intern("step"),
                            d->intern("data_wait")};
  const size_t per_cpu = n * 2 / 5 / cpu_tracks, per_gpu = (n - per_cpu * cpu_tracks) / gpu_tracks;
  for (int t = 0; t < cpu_tracks; ++t) {
    Track tr;
    tr.name = "CPU thread " + std::to_string(1000 + t) + (t == 0 ? " (main)" : " (loader)");
    tr.kind = TrackKind::CpuThread;
    tr.sort_key = t;
    tr.lanes.resize(3);
    int64_t now = 0;
    size_t made = 0;
    while (made < per_cpu) {
      // One parent range with k children, each with one runtime call inside.
      const int k = 1 + int(rng() % 8);
      const int64_t p0 = now;
      int64_t c = p0 + 500;
      for (int j = 0; j < k && made < per_cpu; ++j) {
        const int64_t cd = kdur(rng);
        tr.lanes[1].push(c, c + cd, names[rng() % 3], EventCat::Range);
        tr.lanes[2].push(c + cd / 4, c + cd / 2, names[3], EventCat::Runtime, int64_t(made + 1));
        made += 2;
        c += cd + gap(rng) / 4;
      }
      tr.lanes[0].push(p0, c + 500, t == 0 ? names[7] : names[0], t == 0 ? EventCat::Step : EventCat::Range);
      ++made;
      now = c + 500 + gap(rng);
    }
    d->tracks.push_back(std::move(tr));
  }
  for (int t = 0; t < gpu_tracks; ++t) {
    Track tr;
    tr.name = "GPU 0 stream " + std::to_string(7 + t);
    tr.kind = TrackKind::GpuStream;
    tr.sort_key = t;
    tr.lanes.resize(1);
    int64_t now = 0;
    for (size_t j = 0; j < per_gpu; ++j) {
      const int64_t dur = kdur(rng) / 2;
      const int which = int(rng() % 10);
      const EventCat c = which == 0 ? EventCat::Memcpy : EventCat::Kernel;
      tr.lanes[0].push(now, now + dur, c == EventCat::Memcpy ? names[6] : names[4 + (which & 1)], c);
      now += dur + gap(rng) / 2;
    }
    d->tracks.push_back(std::move(tr));
  }
  d->source = "synthetic";
  d->finalize();
  return d;
}

}  // namespace tb::ui

namespace tb::ui {

std::optional<EventRef> findNextEvent(const TimelineData& d, const std::string& needle, const EventRef* after) {
  if (needle.empty()) return std::nullopt;
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string n = lower(needle);
  std::vector<char> match(d.names.size(), 0);
  bool any = false;
  for (size_t i = 1; i < d.names.size(); ++i) any |= (match[i] = lower(d.names[i]).find(n) != std::string::npos);
  if (!any) return std::nullopt;
  auto key = [&](const EventRef& r) {
    return std::make_tuple(d.tracks[r.track].lanes[r.lane].start[r.index], r.track, r.lane, r.index);
  };
  auto search = [&](const EventRef* from) -> std::optional<EventRef> {
    std::optional<EventRef> best;
    const int64_t t = from ? d.tracks[from->track].lanes[from->lane].start[from->index] : INT64_MIN;
    for (uint32_t ti = 0; ti < d.tracks.size(); ++ti) {
      const auto& lanes = d.tracks[ti].lanes;
      for (uint32_t li = 0; li < lanes.size(); ++li) {
        const Lane& L = lanes[li];
        for (size_t i = from ? L.firstStartingAtOrAfter(t, 0) : 0; i < L.size(); ++i) {
          if (best && L.start[i] > std::get<0>(key(*best))) break;  // cannot beat the best any more
          if (!match[L.name[i]]) continue;
          const EventRef r{ti, li, i};
          if (from && key(r) <= key(*from)) continue;
          if (!best || key(r) < key(*best)) best = r;
          break;  // the first match of a lane after `from` is its best
        }
      }
    }
    return best;
  };
  if (auto r = search(after)) return r;
  return after ? search(nullptr) : std::nullopt;
}

}  // namespace tb::ui

namespace tb::ui {

std::vector<NameSummary> summarizeRange(const TimelineData& d, int64_t t0, int64_t t1) {
  std::unordered_map<uint64_t, NameSummary> agg;  // key: name << 1 | gpu
  for (const Track& tr : d.tracks) {
    for (const Lane& L : tr.lanes) {
      for (size_t i = L.firstStartingAtOrAfter(t0, 0); i < L.size() && L.start[i] <= t1; ++i) {
        const EventCat c = L.cat[i];
        if (c == EventCat::Step || c == EventCat::StepDetailed || c == EventCat::GpuAnnotation || c == EventCat::Other)
          continue;
        const bool gpu = c == EventCat::Kernel || c == EventCat::Memcpy || c == EventCat::Memset;
        NameSummary& s = agg[(uint64_t(L.name[i]) << 1) | uint64_t(gpu)];
        s.name = L.name[i];
        s.gpu = gpu;
        ++s.count;
        s.total_ns += L.end[i] - L.start[i];
      }
    }
  }
  std::vector<NameSummary> out;
  out.reserve(agg.size());
  for (auto& [k, v] : agg) out.push_back(v);
  std::sort(out.begin(), out.end(), [](const NameSummary& a, const NameSummary& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

}  // namespace tb::ui
