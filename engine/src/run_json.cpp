// The run protocol's JSON for what a run measures (engine/run_json.h).
#include "engine/run_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "client/protocol.h"
#include "measure/stats.h"

namespace tb::engine {

namespace {
std::string gib_text(int64_t b) {
  char x[32];
  std::snprintf(x, sizeof x, "%.2f GiB", double(b) / double(int64_t(1) << 30));
  return x;
}
}  // namespace

nlohmann::json memory_summary_json(const std::vector<StepRecord>& steps) {
  int64_t rss = -1, alloc = -1, reserved = -1, peak = -1, total = -1, retries = -1, ooms = -1;
  int64_t peak_step = -1;
  for (const auto& r : steps) {
    const StepMemory& m = r.memory;
    rss = std::max(rss, m.host_rss_bytes);
    alloc = std::max(alloc, m.device_allocated_bytes);
    reserved = std::max(reserved, m.device_reserved_bytes);
    if (m.device_peak_bytes > peak) {
      peak = m.device_peak_bytes;
      peak_step = r.index;
    }
    total = std::max(total, m.device_total_bytes);
    retries = std::max(retries, m.device_alloc_retries);
    ooms = std::max(ooms, m.device_ooms);
  }
  if (rss < 0 && alloc < 0) return nullptr;
  nlohmann::json j = nlohmann::json::object();
  if (rss >= 0) j["host_rss_peak"] = rss;
  if (alloc >= 0) {
    j["device_allocated_peak"] = alloc;
    j["device_reserved_peak"] = reserved;
    j["device_step_peak"] = peak;
    j["device_step_peak_at"] = peak_step;
    j["device_alloc_retries"] = retries;
    j["device_ooms"] = ooms;
  }
  if (total > 0) {
    j["device_total"] = total;
    j["device_headroom"] = total - std::max(peak, reserved);  // what the largest step left of the device
  }
  return j;
}

std::string memory_summary_text(const nlohmann::json& s) {
  if (!s.is_object()) return "";
  std::string t = "memory:";
  if (s.contains("host_rss_peak")) t += " peak host RSS " + gib_text(s["host_rss_peak"].get<int64_t>());
  if (s.contains("device_step_peak")) {
    t += (t.size() > 7 ? ";" : "") + std::string(" device peak ") + gib_text(s["device_step_peak"].get<int64_t>()) +
         " allocated (step " + std::to_string(s["device_step_peak_at"].get<int64_t>()) + "), " +
         gib_text(s["device_reserved_peak"].get<int64_t>()) + " reserved";
    if (s.contains("device_total"))
      t += ", of " + gib_text(s["device_total"].get<int64_t>()) + " (" + gib_text(s["device_headroom"].get<int64_t>()) + " free at the peak)";
    if (s.value("device_alloc_retries", int64_t(0)) > 0)
      t += "; " + std::to_string(s["device_alloc_retries"].get<int64_t>()) + " cudaMalloc retries";
  }
  return t;
}

std::string memory_state_text(const StepMemory& m) {
  if (m.device_peak_bytes >= 0)
    return "device peak " + gib_text(m.device_peak_bytes) +
           (m.device_total_bytes > 0 ? " of " + gib_text(m.device_total_bytes) : std::string());
  if (m.host_rss_bytes >= 0) return "host RSS " + gib_text(m.host_rss_bytes);
  return "";
}

std::string memory_fit_text(int64_t batch, const StepMemory& m) {
  const std::string s = memory_state_text(m);
  return s.empty() ? s : "batch " + std::to_string(batch) + ": " + s;
}

void add_step_memory(measure::Window& w, const StepMemory& m) {
  const int64_t peak = m.device_peak_bytes >= 0 ? m.device_peak_bytes : m.host_rss_bytes;
  w.peak_memory_bytes = std::max(w.peak_memory_bytes, peak);
  w.held_memory_bytes = std::max(w.held_memory_bytes, m.device_allocated_bytes);
  w.memory_total_bytes = std::max(w.memory_total_bytes, m.device_total_bytes);
}

nlohmann::json config_json(const Config& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : c) j[k] = v;
  return j;
}

nlohmann::json step_json(const StepRecord& r) {
  nlohmann::json j = {{"i", r.index},           {"samples", r.samples}, {"wall_ns", r.wall_ns}, {"minor_faults", r.minor_faults},
                      {"data_wait_ns", r.data_wait_ns}, {"h2d_ns", r.h2d_ns}, {"config_rev", r.config_rev},
                      {"warmup", r.warmup},     {"skipped", r.skipped}, {"optimizer_step", r.optimizer_step},
                      {"t_ns", r.start_ns}};
  if (std::isfinite(r.loss))
    j["loss"] = r.loss;
  else
    j["loss"] = nullptr;
  if (r.loss_scale > 0) j["loss_scale"] = r.loss_scale;
  if (r.evaluations > 0) j["evaluations"] = r.evaluations;
  if (r.memory.measured()) j["memory"] = memory_json(r.memory);
  return j;
}

nlohmann::json memory_json(const StepMemory& m) {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* k, int64_t v) {
    if (v >= 0) j[k] = v;
  };
  put("host_rss", m.host_rss_bytes);
  put("device_allocated", m.device_allocated_bytes);
  put("device_reserved", m.device_reserved_bytes);
  put("device_peak", m.device_peak_bytes);
  put("device_alloc_retries", m.device_alloc_retries);
  put("device_ooms", m.device_ooms);
  put("device_total", m.device_total_bytes);
  return j;
}

StepMemory memory_of_json(const nlohmann::json& j) {
  StepMemory m;
  if (!j.is_object()) return m;
  auto get = [&](const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<int64_t>() : int64_t(-1); };
  m.host_rss_bytes = get("host_rss");
  m.device_allocated_bytes = get("device_allocated");
  m.device_reserved_bytes = get("device_reserved");
  m.device_peak_bytes = get("device_peak");
  m.device_alloc_retries = get("device_alloc_retries");
  m.device_ooms = get("device_ooms");
  m.device_total_bytes = get("device_total");
  return m;
}

std::vector<measure::StepTiming> measured_timings(const std::vector<StepRecord>& steps) {
  std::vector<measure::StepTiming> out;
  for (const auto& r : steps)
    if (!r.warmup && r.wall_ns > 0)
      out.push_back({client::protocol::evaluated_samples(r.samples, r.evaluations), r.start_ns, r.wall_ns,
                     r.data_wait_ns, r.minor_faults});
  return out;
}

nlohmann::json tracing_cost_json(const std::vector<StepRecord>& steps,
                                 const std::vector<std::pair<int64_t, int64_t>>& traced) {
  std::vector<double> ms[2];
  for (const auto& r : steps) {
    if (r.warmup || r.wall_ns <= 0) continue;
    ms[in_traced(r.index, traced)].push_back(double(r.wall_ns) * 1e-6);
  }
  if (ms[0].size() < 5 || ms[1].size() < 5) return nullptr;
  // Each side's typical step, per step, not per sample (a script whose batch cannot be told counts no
  // samples): the mean of its steps without the slowest tenth. Not the plain mean: one of the ~10 untraced
  // steps descheduled on a busy machine (10 ms against 0.1 ms steps) made the untraced side slower than the
  // traced one. Not the median: a loader-bound script's steps alternate (3 and 35 ms: two workers' batches come
  // together), and the median of either side falls on one mode or the other (0.38x "cost" on equal sides).
  auto typical = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    v.resize(v.size() - v.size() / 10);
    double sum = 0;
    for (double x : v) sum += x;
    return sum / double(v.size());
  };
  const double untraced_ms = typical(ms[0]), traced_ms = typical(ms[1]);
  return {{"untraced_steps", ms[0].size()}, {"traced_steps", ms[1].size()}, {"untraced_step_ms", untraced_ms},
          {"traced_step_ms", traced_ms}, {"traced_speed", untraced_ms / traced_ms}};
}

std::string tracing_cost_text(const nlohmann::json& cost) {
  if (!cost.is_object()) return "";
  const double speed = cost.value("traced_speed", 1.0);
  if (!(speed < 0.95)) return "";
  char b[320];
  std::snprintf(b, sizeof b,
                "tracing cost: the %lld traced steps ran at %.2fx the speed of the %lld untraced ones "
                "(%.3f against %.3f ms a step): the trace's times are stretched by its own recording",
                static_cast<long long>(cost.value("traced_steps", int64_t(0))), speed,
                static_cast<long long>(cost.value("untraced_steps", int64_t(0))), cost.value("traced_step_ms", 0.0),
                cost.value("untraced_step_ms", 0.0));
  return b;
}

nlohmann::json throughput_json(const std::vector<StepRecord>& steps, const measure::SystemLoad& load) {
  const auto timings = measured_timings(steps);
  std::vector<double> rates;
  double samples = 0, seconds = 0, faults = 0;
  for (const auto& t : timings) {
    rates.push_back(double(t.samples) * 1e9 / double(t.wall_ns));
    samples += double(t.samples);
    seconds += double(t.wall_ns) * 1e-9;
    faults += double(t.minor_faults);
  }
  const auto windows = measure::windows_of(timings, kVerdictWindow);
  std::vector<double> wt;
  for (const auto& w : windows) wt.push_back(w.throughput());
  const double overall = seconds > 0 ? samples / seconds : 0.0;
  nlohmann::json j = {{"samples_per_s", overall},
                      {"median", windows.empty() ? overall : measure::median(wt)},
                      {"step_median", rates.empty() ? 0.0 : measure::median(rates)},
                      {"unit", "samples/s"},
                      {"measured_steps", rates.size()},
                      {"window_steps", kVerdictWindow},
                      {"windows", wt},
                      {"page_faults_per_step", rates.empty() ? 0.0 : faults / double(rates.size())}};
  if (!rates.empty()) {
    j["p10"] = measure::quantile(rates, 0.1);
    j["p90"] = measure::quantile(rates, 0.9);
  }
  const auto noise = measure::assess_noise(windows, load);
  j["noise"] = {{"verdict", noise.verdict}, {"text", noise.text}, {"cv", noise.cv}, {"drift", noise.drift},
                {"windows", noise.windows}};
  if (load.readable())
    j["noise"]["load"] = {{"loadavg_1min", std::isfinite(load.loadavg_1min) ? nlohmann::json(load.loadavg_1min) : nlohmann::json()},
                          {"steal_share", std::isfinite(load.steal_share) ? nlohmann::json(load.steal_share) : nlohmann::json()},
                          {"cores", load.cores}};
  return j;
}

nlohmann::json run_document(const Session& session, const nlohmann::json& d, const std::vector<StepRecord>& steps,
                            const measure::SystemLoad& load) {
  nlohmann::json out;
  for (const char* k : {"model", "data", "input", "classes", "device", "versions", "cpu_allocator", "intra_op_threads",
                        "warmup", "optimizer", "drift_checks"})
    out[k] = d.contains(k) ? d[k] : nlohmann::json();
  out["config"] = config_json(session.config());
  out["config_rev"] = session.revision();
  out["throughput"] = throughput_json(steps, load);
  out["memory"] = memory_summary_json(steps);
  out["counters"] = {{"skipped_steps", d.value("skipped_steps", nlohmann::json())},
                     {"nan_losses", d.value("nan_losses", nlohmann::json())},
                     {"optimizer_steps", d.value("optimizer_steps", nlohmann::json())},
                     {"loader", d.value("loader", nlohmann::json())}};
  nlohmann::json not_applicable = nlohmann::json::array();
  for (const auto& k : session.knobs())
    if (!k.applicability.applicable) not_applicable.push_back({{"id", k.info.id}, {"reason", k.applicability.reason}});
  out["not_applicable"] = not_applicable;
  nlohmann::json steps_json = nlohmann::json::array();
  for (const auto& r : steps) steps_json.push_back(step_json(r));
  out["steps"] = steps_json;
  return out;
}

}  // namespace tb::engine
