// The parts of the CUPTI collector that need neither CUPTI nor a GPU (profiler/cupti_collector.h): the clock
// mapping, the API names, the activity kinds by name. Built and tested everywhere.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "profiler/cupti_collector.h"

namespace tb::prof {

// ---- ClockAlignment ----

void ClockAlignment::add_sample(int64_t mono_before, int64_t cupti_ns, int64_t mono_after) {
  if (mono_after < mono_before) std::swap(mono_before, mono_after);
  const int64_t mid = mono_before + (mono_after - mono_before) / 2;
  Sample s{cupti_ns, cupti_ns - mid, (mono_after - mono_before) / 2};
  auto it = std::upper_bound(samples_.begin(), samples_.end(), cupti_ns,
                             [](int64_t t, const Sample& x) { return t < x.cupti_ns; });
  samples_.insert(it, s);
  // The mapping must keep the order of every two CUPTI times (a kernel's end after its start, a child inside
  // its parent). Between two samples it is linear, so it keeps the order iff each sample maps later than the
  // one before it; a bracket stretched by preemption (its midpoint far off the true instant) next to a close,
  // precise one breaks that. Of two samples that disagree, the one with the wider bracket goes.
  for (size_t i = 1; i < samples_.size();) {
    const Sample &a = samples_[i - 1], &b = samples_[i];
    if (b.cupti_ns - b.offset_ns >= a.cupti_ns - a.offset_ns) {
      ++i;
      continue;
    }
    samples_.erase(samples_.begin() + std::ptrdiff_t(a.uncertainty_ns > b.uncertainty_ns ? i - 1 : i));
    i = 1;
  }
}

int64_t ClockAlignment::to_mono(int64_t cupti_ns) const {
  if (samples_.empty()) return cupti_ns;
  if (samples_.size() == 1 || cupti_ns <= samples_.front().cupti_ns) return cupti_ns - samples_.front().offset_ns;
  if (cupti_ns >= samples_.back().cupti_ns) return cupti_ns - samples_.back().offset_ns;
  auto hi = std::upper_bound(samples_.begin(), samples_.end(), cupti_ns,
                             [](int64_t t, const Sample& x) { return t < x.cupti_ns; });
  auto lo = hi - 1;
  const int64_t span = hi->cupti_ns - lo->cupti_ns;
  if (span <= 0) return cupti_ns - lo->offset_ns;
  // Interpolate the offset (drift between the two clocks is linear over a flush interval).
  const long double f = static_cast<long double>(cupti_ns - lo->cupti_ns) / static_cast<long double>(span);
  const int64_t off = lo->offset_ns + static_cast<int64_t>(std::llround(f * (hi->offset_ns - lo->offset_ns)));
  return cupti_ns - off;
}

int64_t ClockAlignment::last_offset_ns() const { return samples_.empty() ? 0 : samples_.back().offset_ns; }
int64_t ClockAlignment::last_uncertainty_ns() const { return samples_.empty() ? 0 : samples_.back().uncertainty_ns; }

// ---- API names ----

std::string strip_api_version(const char* name) {
  if (!name) return {};
  std::string s(name);
  const auto pos = s.rfind("_v");
  if (pos != std::string::npos && pos + 2 < s.size() &&
      std::all_of(s.begin() + static_cast<long>(pos) + 2, s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    s.resize(pos);
  }
  return s;
}

bool is_blocking_sync_api(std::string_view n) {
  static constexpr std::string_view kSync[] = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
      "cudaMemcpy",            "cudaMemcpy2D",          "cudaMemcpy3D",         "cudaMemcpyToSymbol",
      "cudaMemcpyFromSymbol",  "cudaMemcpyPeer",        "cuCtxSynchronize",
      "cuStreamSynchronize",   "cuEventSynchronize",    "cuMemcpyHtoD",         "cuMemcpyDtoH",
      "cuMemcpy",              "cuMemcpyDtoD",          "cuMemcpyPeer"};
  for (std::string_view s : kSync)
    if (n == s) return true;
  // Driver spellings carry _v2 suffixes when not stripped.
  if (n.size() > 3 && n.substr(n.size() - 3) == "_v2") return is_blocking_sync_api(n.substr(0, n.size() - 3));
  return false;
}

// ---- Activity kinds ----

namespace {
constexpr std::pair<std::string_view, uint32_t> kKindNames[] = {
    {"kernel", kCuptiKernel},   {"memcpy", kCuptiMemcpy}, {"memset", kCuptiMemset},     {"runtime", kCuptiRuntime},
    {"driver", kCuptiDriver},   {"sync", kCuptiSync},     {"external", kCuptiExternal}, {"overhead", kCuptiOverhead},
    {"queries", kCuptiQueries}, {"callbacks", kCuptiCallbacks}};
}  // namespace

Result<uint32_t> parse_cupti_kinds(std::string_view names) {
  uint32_t kinds = 0;
  size_t at = 0;
  while (at <= names.size()) {
    size_t end = names.find(',', at);
    if (end == std::string_view::npos) end = names.size();
    std::string_view n = names.substr(at, end - at);
    while (!n.empty() && n.front() == ' ') n.remove_prefix(1);
    while (!n.empty() && n.back() == ' ') n.remove_suffix(1);
    at = end + 1;
    if (n.empty()) continue;
    if (n == "all" || n == "default") {
      kinds |= n == "all" ? uint32_t(kCuptiAll) : uint32_t(kCuptiDefault);
      continue;
    }
    uint32_t bit = 0;
    for (const auto& [name, b] : kKindNames)
      if (n == name) bit = b;
    if (!bit) {
      std::string known;
      for (const auto& [name, b] : kKindNames) known += std::string(known.empty() ? "" : ", ") + std::string(name);
      return Error{"unknown CUPTI activity kind '" + std::string(n) + "' (known: " + known + ", all, default)"};
    }
    kinds |= bit;
  }
  if (kinds & (kCuptiAll | kCuptiCallbacks)) return kinds;
  return kinds ? kinds | uint32_t(kCuptiAll) : uint32_t(kCuptiDefault);  // only "queries": every kind
}

std::string cupti_kinds_text(uint32_t kinds) {
  std::string out;
  if ((kinds & kCuptiAll) == kCuptiAll) {
    out = "all";
    kinds &= ~uint32_t(kCuptiAll);
  }
  for (const auto& [name, b] : kKindNames)
    if (kinds & b) out += std::string(out.empty() ? "" : ",") + std::string(name);
  return out;
}

}  // namespace tb::prof
