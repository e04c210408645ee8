// What the ranks of a data-parallel run agree on (engine/rank_group.h).
#include "engine/rank_group.h"

#include <cstdio>
#include <cstdlib>

#include "engine/recording.h"
#include "profiler/trace_io.h"

namespace tb::engine {

nlohmann::json merge_rank_results(const std::vector<std::string>& per_rank) {
  std::vector<nlohmann::json> docs;
  for (const auto& s : per_rank) {
    nlohmann::json d = s.empty() ? nlohmann::json() : nlohmann::json::parse(s, nullptr, false);
    docs.push_back(d.is_object() ? d : nlohmann::json());
  }
  nlohmann::json out = docs.empty() || docs[0].is_null() ? nlohmann::json::object() : docs[0];
  out["world_size"] = per_rank.size();
  nlohmann::json ranks = nlohmann::json::array(), missing = nlohmann::json::array();
  double sps = 0, window_sps = 0;
  bool all_windows = true;
  std::string first_error;
  for (size_t r = 0; r < docs.size(); ++r) {
    const auto& d = docs[r];
    if (d.is_null()) {
      missing.push_back(r);
      all_windows = false;
      continue;
    }
    nlohmann::json e = {{"rank", r}};
    for (const char* k : {"pid", "throughput", "window", "steps", "parameter_digest", "error", "warnings", "distributed"})
      if (d.contains(k)) e[k] = d[k];
    sps += d.value(nlohmann::json::json_pointer("/throughput/samples_per_s"), 0.0);
    if (d.contains("window")) window_sps += d["window"].value("samples_per_s", 0.0);
    else all_windows = false;
    if (d.contains("error") && first_error.empty()) first_error = "rank " + std::to_string(r) + ": " + d["error"].get<std::string>();
    ranks.push_back(std::move(e));
  }
  out["ranks"] = ranks;
  out["missing_ranks"] = missing;
  // Every rank trains on its own shard at the same time: the group's rate is the sum of the ranks' rates.
  if (out.contains("throughput") && out["throughput"].is_object()) {
    out["throughput"]["rank0_samples_per_s"] = out["throughput"].value("samples_per_s", 0.0);
    out["throughput"]["samples_per_s"] = sps;
    out["throughput"]["aggregate"] = "sum over " + std::to_string(ranks.size()) + " ranks";
  }
  if (all_windows && out.contains("window")) out["window"]["samples_per_s"] = window_sps;
  else if (out.contains("window")) out.erase("window");  // a partial group has no group window
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + std::to_string(m.get<size_t>());
    const std::string msg = "rank(s) " + list + " did not report within the collective timeout";
    out["error"] = out.contains("error") ? out["error"].get<std::string>() + "; " + msg : msg;
  } else if (!first_error.empty() && !out.contains("error")) {
    out["error"] = first_error;
  }
  return out;
}

Result<GroupAsk> resolve_group(const SessionOptions& opts, int64_t ranks) {
  if (auto it = opts.knobs.find("ranks"); it != opts.knobs.end()) {
    char* end = nullptr;
    const long long n = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || n < 1 || n > 64) return Error{"ranks needs an integer from 1 to 64"};
    if (ranks > 0 && ranks != n)
      return Error{"--ranks " + std::to_string(ranks) + " disagrees with --set ranks=" + it->second};
    ranks = n;
  }
  const auto from_env = dist_from_env();
  if (!from_env) return Error{"bad torchrun environment: " + from_env.error().message};
  const std::optional<DistOptions>& env = *from_env;
  if (env && ranks > 0 && ranks != env->world_size)
    return Error{"--ranks " + std::to_string(ranks) + " but this process is one of WORLD_SIZE=" +
                 std::to_string(env->world_size) + " ranks (drop --ranks under torchrun)"};
  return GroupAsk{ranks, env};
}

void join_group(SessionOptions& opts, const DistOptions& env, int64_t dist_timeout_s) {
  opts.dist = env;
  if (dist_timeout_s > 0) opts.dist.timeout_s = int(dist_timeout_s);
  opts.max_warmup_steps = opts.warmup_steps;
  // Test hook (tests/engine/test_cli_ranks_oom.cpp): TUNEBENCH_TEST_OOM_ABOVE_BATCH=R:B makes rank R's
  // memory probe fail above batch B, as one GPU of a group with less free memory than the others.
  if (const char* v = std::getenv("TUNEBENCH_TEST_OOM_ABOVE_BATCH")) {
    int r = -1;
    long long b = 0;
    if (std::sscanf(v, "%d:%lld", &r, &b) == 2 && r == env.rank) opts.simulate_oom_above_batch = b;
  }
}

GatheredRun gather_run(Session& session, int rank, nlohmann::json mine, bool with_trace, const nlohmann::json& describe) {
  if (with_trace) {
    session.synchronize();
    if (auto t = collect_recorded_trace(describe)) mine["trace_json"] = prof::to_chrome_trace_json(*t);
  }
  auto all = session.gather("tunebench/run", mine.dump());
  GatheredRun g;
  g.ranks = all.size();
  if (rank != 0) {
    mine.erase("trace_json");
    g.doc = std::move(mine);
    return g;
  }
  for (auto& s : all) {
    if (s.empty()) continue;
    auto d = nlohmann::json::parse(s, nullptr, false);
    if (!d.is_object()) continue;
    if (d.contains("trace_json")) {
      auto parsed = prof::parse_trace(d["trace_json"].get<std::string>(), "rank trace");
      if (parsed.ok()) g.traces.push_back(std::move(parsed.value()));
      d.erase("trace_json");
    }
    s = d.dump();
  }
  g.doc = merge_rank_results(all);
  return g;
}

}  // namespace tb::engine
