// The parts of `run --script` that work on what the run collected (run_script_parts.h).
#include "run_script_parts.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "client/protocol.h"
#include "profiler/analysis.h"
#include "profiler/trace_io.h"

namespace tb::cli {

std::string merge_chunks(const std::vector<std::string>& chunks, const std::string& path,
                         client::LoaderVerdict& loader, const std::vector<prof::LaneStep>& steps,
                         const std::vector<prof::LaneOutside>& outside,
                         const std::vector<prof::LaneCompile>& compiles, std::unique_ptr<prof::Trace>* merged_out) {
  auto merged = prof::merge_script_chunks(chunks, steps, outside, compiles);
  if (!merged) return merged.error().to_string();
  const auto& tracks = (*merged)->tracks();
  const bool gpu = std::any_of(tracks.begin(), tracks.end(),
                               [](const prof::Track& t) { return t.kind() == prof::TrackKind::GpuStream; });
  if (loader.valid && loader.transfer_share < 0 && gpu) {  // a CPU trace has no copies: no analysis for them
    const prof::AnalysisResult r = prof::analyze(**merged);
    loader.add_trace_transfer(r.input_copy_ns(), r.own_ns());
  }
  if (loader.valid) (*merged)->meta().documents["loader"] = loader.to_json().dump();
  if (auto st = prof::write_chrome_trace(**merged, path); !st) return st.error().to_string();
  if (merged_out) *merged_out = std::move(*merged);
  return "";
}

std::vector<prof::LaneStep> lane_steps(const std::vector<engine::StepRecord>& records,
                                       const std::vector<nlohmann::json>& extras,
                                       const std::vector<std::pair<int64_t, int64_t>>& traced) {
  std::vector<prof::LaneStep> out;
  out.reserve(records.size());
  for (size_t k = 0; k < records.size(); ++k) {
    const engine::StepRecord& r = records[k];
    prof::LaneStep s;
    s.index = r.index;
    s.t_ns = r.start_ns;
    s.wall_ns = r.wall_ns;
    s.data_wait_ns = r.data_wait_ns;
    if (k < extras.size() && extras[k].is_object()) {
      const nlohmann::json& x = extras[k];
      auto ns = [&](const char* key) { return x.contains(key) && x[key].is_number() ? x[key].get<int64_t>() : 0; };
      s.forward_ns = ns("forward_ns");
      s.backward_ns = ns("backward_ns");
      s.optim_ns = ns("optim_ns");
    }
    s.traced = engine::in_traced(r.index, traced);
    s.warmup = r.warmup;
    s.skipped = r.skipped;
    s.host_rss = r.memory.host_rss_bytes;
    s.device_allocated = r.memory.device_allocated_bytes;
    s.evaluations = r.evaluations;
    out.push_back(s);
  }
  return out;
}

std::vector<prof::LaneOutside> lane_outside(const nlohmann::json& outside) {
  std::vector<prof::LaneOutside> out;
  if (!outside.is_array()) return out;
  for (const nlohmann::json& m : outside) {
    if (!m.is_object()) continue;
    prof::LaneOutside o;
    auto num = [&](const char* key, int64_t dflt) {
      return m.contains(key) && m[key].is_number() ? m[key].get<int64_t>() : dflt;
    };
    o.t_ns = num("t_ns", 0);
    o.wall_ns = num("wall_ns", 0);
    o.after_step = num("after_step", -1);
    o.kind = m.contains("kind") && m["kind"].is_string() ? m["kind"].get<std::string>() : "other";
    out.push_back(std::move(o));
  }
  return out;
}

int64_t measured_steps_of(const std::vector<engine::StepRecord>& records) {
  return std::count_if(records.begin(), records.end(), [](const engine::StepRecord& r) { return !r.warmup; });
}

nlohmann::json window_json(const std::vector<engine::StepRecord>& figures) {
  int64_t samples = 0;
  double wall = 0;
  for (const auto& r : figures)
    if (!r.warmup) samples += client::protocol::evaluated_samples(r.samples, r.evaluations), wall += r.wall_ns * 1e-9;
  return {{"steps", measured_steps_of(figures)}, {"samples", samples}, {"wall_s", wall},
          {"samples_per_s", wall > 0 ? samples / wall : 0.0}};
}

Figures steady_figures(const std::vector<engine::StepRecord>& records, const std::vector<bool>& compiling,
                       const std::vector<std::pair<int64_t, int64_t>>& traced) {
  Figures f;
  f.steps = records;
  auto leave_out = [&](auto&& out_of_figures, size_t& left_out) {
    std::vector<engine::StepRecord> kept;
    for (size_t k = 0; k < f.steps.size(); ++k)
      if (!out_of_figures(f.steps[k])) kept.push_back(f.steps[k]);
    if (kept.size() == f.steps.size() || measured_steps_of(kept) < 10) return;
    left_out = f.steps.size() - kept.size();
    f.steps = std::move(kept);
  };
  std::vector<int64_t> compiled;
  for (size_t k = 0; k < records.size() && k < compiling.size(); ++k)
    if (compiling[k]) compiled.push_back(records[k].index);
  leave_out([&](const engine::StepRecord& r) { return std::find(compiled.begin(), compiled.end(), r.index) != compiled.end(); },
            f.compiling_out);
  if (!traced.empty())
    leave_out([&](const engine::StepRecord& r) { return engine::in_traced(r.index, traced); }, f.traced_out);
  return f;
}

std::string nothing_measured_text(const nlohmann::json& done, const std::string& failure, size_t steps,
                                  int warmup_steps) {
  const nlohmann::json summary =
      done.is_object() ? done.value("summary", nlohmann::json::object()) : nlohmann::json::object();
  if (summary.contains("no_steps")) return summary.value("no_steps", std::string());
  if (!failure.empty()) return failure;
  if (steps > 0)
    return "all " + std::to_string(steps) + " steps were warm-up: the step time had not settled (at least " +
           std::to_string(warmup_steps) + " steps, then two blocks within 10%); give the run more steps";
  return "the script made no training step";
}

std::string rate_text(const std::vector<engine::StepRecord>& figures) {
  int64_t lo = 0, hi = 0;
  for (const auto& r : figures)
    if (!r.warmup && r.evaluations > 0) lo = lo > 0 ? std::min(lo, r.evaluations) : r.evaluations, hi = std::max(hi, r.evaluations);
  return hi > 0 ? client::protocol::per_evaluation_text(lo, hi) : "";
}

void print_script_throughput(const std::string& script, const nlohmann::json& tp, const std::string& unit,
                             size_t all_steps, const Figures& fig, const std::string& not_measured) {
  const std::vector<engine::StepRecord>& figures = fig.steps;
  int64_t samples = 0;
  double wall = 0;
  for (const auto& r : figures)
    if (!r.warmup) samples += client::protocol::evaluated_samples(r.samples, r.evaluations), wall += r.wall_ns * 1e-9;
  std::string left_out;
  if (fig.compiling_out) left_out = std::to_string(fig.compiling_out) + " that compiled";
  if (fig.traced_out) left_out += (left_out.empty() ? "" : " and ") + std::to_string(fig.traced_out) + " traced";
  if (!left_out.empty())
    left_out = "; " + left_out + " step" + (fig.compiling_out + fig.traced_out == 1 ? "" : "s") +
               " left out: the figures are the other steps'";
  if (!not_measured.empty())
    std::printf("%s: nothing measured: %s\n", script.c_str(), not_measured.c_str());
  else if (samples == 0)  // no model forward told the batch (raw tensors, a hand-written model): steps, said so
    std::printf("%s: %.1f steps/s over %zu measured steps (%zu in all%s; no batch size: no module's forward was "
                "seen, so samples are not counted); %s\n",
                script.c_str(), wall > 0 ? double(measured_steps_of(figures)) / wall : 0.0,
                tp["measured_steps"].get<size_t>(), all_steps, left_out.c_str(),
                tp["noise"]["text"].get<std::string>().c_str());
  else
    std::printf("%s: %.1f %s/s over %zu measured steps (%zu in all%s); %s%s\n", script.c_str(),
                tp["samples_per_s"].get<double>(), unit.c_str(), tp["measured_steps"].get<size_t>(), all_steps,
                left_out.c_str(), tp["noise"]["text"].get<std::string>().c_str(),
                tp.contains("rate") ? ("; " + tp["rate"].get<std::string>()).c_str() : "");
}

client::LoaderVerdict script_loader_verdict(const nlohmann::json& out, const std::vector<engine::StepRecord>& figures,
                                            const measure::SystemLoad& load, double own_cores, int64_t run_wall_ns) {
  // What the loader delivered: a step(closure) call's batch once, however often its closure ran.
  int64_t samples = 0, wall = 0, wait = 0;
  for (const auto& r : figures)
    if (!r.warmup) samples += r.samples, wall += r.wall_ns, wait += r.data_wait_ns;
  const nlohmann::json done = out.value("done", nlohmann::json::object());
  const nlohmann::json parts = done.value("loader_parts", nlohmann::json());
  int64_t all_samples = 0;  // of the steps after the first: what done.summary.cpu_ns was spent on
  const nlohmann::json steps = out.value("steps", nlohmann::json::array());
  for (size_t k = 1; k < steps.size(); ++k) all_samples += steps[k].value("samples", int64_t(0));
  // The cores the prediction counts on: the machine's, less what other processes kept busy over the run (its
  // busy share less the run's own CPU: this process's and the script's with all its processes, its loader
  // workers' start included: a spawned worker's import of torch is the run's, not other work's). Where it could
  // not be read, the training process's CPU after its first step and the workers' loading CPU, over the steps'
  // wall time.
  const int machine = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  if (!(own_cores >= 0) && run_wall_ns > 0) {
    int64_t own_cpu = done.value("cpu_ns", int64_t(0));
    if (parts.is_array())
      for (const auto& p : parts)
        if (p.value("who", std::string()) != "main") own_cpu += p.value("cpu_ns", int64_t(0));
    own_cores = double(own_cpu) / double(run_wall_ns);
  }
  const int free = own_cores >= 0 && load.busy_share == load.busy_share
                       ? client::cores_free(machine, load.busy_share, own_cores)
                       : machine;
  client::LoaderVerdict v = client::loader_verdict_of_run(parts, done.value("cpu_ns", int64_t(0)), samples, wall, wait,
                                                          all_samples, free);
  v.machine_cores = machine;
  return v;
}

std::string joined_args(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace tb::cli
