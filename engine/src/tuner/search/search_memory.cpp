// What the tuner's windows held (search.h): each side's peak in a trial, and the batch-size rung that would
// not fit. A step's peak is what stays allocated between steps (weights, gradients, optimizer state) plus
// what the step's activations add, which grows with the batch; so the next rung's peak is predicted as
// held + (peak - held) * next / from, and a rung predicted past 95% of the device is not run: an
// out-of-memory trial costs a failed step, a revert and on a GPU a fragmented cache for the rest of the run.
#include <algorithm>

#include "tuner/search/search.h"

namespace tb::engine::search {

namespace {
constexpr double kFitShare = 0.95;  // of the device's memory, the most a predicted peak may take

std::string gib(int64_t b) { return fmt(double(b) / double(int64_t(1) << 30), 2) + " GiB"; }
}  // namespace

void Tuner::note_memory(const Config& c, const measure::Window& m) {
  int64_t batch = 0;
  if (parse_int(value_in(c, "batch_size"), batch) && batch >= memory_.largest_batch) {
    memory_.largest_batch_peak = batch > memory_.largest_batch ? m.peak_memory_bytes : std::max(memory_.largest_batch_peak, m.peak_memory_bytes);
    memory_.largest_batch = batch;
  }
  if (m.peak_memory_bytes < 0) return;
  memory_.seen[config_key(c)] = {m.peak_memory_bytes, m.held_memory_bytes};
  memory_.total = std::max(memory_.total, m.memory_total_bytes);
}

void Tuner::fill_memory(Trial& t) {
  for (const auto& w : t.a) t.peak_before = std::max(t.peak_before, w.peak_memory_bytes);
  for (const auto& w : t.b) t.peak_after = std::max(t.peak_after, w.peak_memory_bytes);
  for (const auto* side : {&t.a, &t.b})
    for (const auto& w : *side) t.memory_total = std::max(t.memory_total, w.memory_total_bytes);
}

std::optional<std::string> Tuner::memory_short(const std::string& id, const std::string& from, const std::string& next) {
  if (id != "batch_size" || memory_.total <= 0) return std::nullopt;
  auto it = memory_.seen.find(config_key(current_));
  int64_t b0 = 0, b1 = 0;
  if (it == memory_.seen.end() || it->second.held < 0 || !parse_int(from, b0) || !parse_int(next, b1) || b0 <= 0)
    return std::nullopt;
  const Held& h = it->second;
  const double grows = double(std::max<int64_t>(0, h.peak - h.held));
  const double predicted = double(h.held) + grows * double(b1) / double(b0);
  if (predicted <= kFitShare * double(memory_.total)) return std::nullopt;
  return "memory: batch " + next + " would peak at ~" + gib(int64_t(predicted)) + " of the device's " +
         gib(memory_.total) + " (batch " + from + " peaked at " + gib(h.peak) + ", " + gib(h.held) +
         " of it held between steps)";
}

std::string Tuner::largest_fit() const {
  if (memory_.largest_batch <= 0) return "";
  std::string s = "; the largest batch that ran: " + std::to_string(memory_.largest_batch);
  if (memory_.largest_batch_peak >= 0)
    s += " (peak " + gib(memory_.largest_batch_peak) + (memory_.total > 0 ? " of " + gib(memory_.total) : std::string()) + ")";
  return s;
}

}  // namespace tb::engine::search
