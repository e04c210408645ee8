// The report of an Auto-tune asked of a live serve (engine/report.h write_live_tune_report), and the protocol's
// tune_done message that names it.
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "client/protocol.h"
#include "engine/report.h"
#include "tuner/report/report_parts.h"

namespace tb::engine {
namespace {
using nlohmann::json;
namespace msg = tb::client::protocol::msg;
using report_detail::num;
using report_detail::value_in;
}  // namespace

nlohmann::json write_live_tune_report(const TuneResult& result, const std::string& report_dir,
                                      const std::string& trace_dir, int index) {
  namespace fs = std::filesystem;
  const fs::path dir = !report_dir.empty() ? fs::path(report_dir)
                       : !trace_dir.empty() ? fs::path(trace_dir)
                                            : fs::temp_directory_path() / ("tunebench-tune-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string stem = (dir / ("tune-" + std::to_string(index))).string();
  write_report(result, stem + ".html", stem + ".md", stem + ".json");
  return tune_done_message(result, stem + ".html", stem + ".md", stem + ".json");
}

nlohmann::json tune_done_message(const TuneResult& r, const std::string& html_path, const std::string& markdown_path,
                                 const std::string& json_path) {
  json m = {{"type", msg::tune_done}, {"report_html", html_path}, {"report_markdown", markdown_path},
            {"report_json", json_path}, {"budget_s", r.budget_s}, {"elapsed_s", r.elapsed_s},
            {"trials", r.trials.size()}, {"skipped", r.skipped.size()}, {"noise", r.noise.text}};
  json fc = json::object(), kept = json::array();
  for (const auto& [k, v] : r.final_config) fc[k] = v;
  for (const auto& k : changed_knobs(r.baseline, r.final_config)) kept.push_back(k + "=" + value_in(r.final_config, k));
  m["final_config"] = fc;
  m["kept"] = kept;
  json unconfirmed = json::array();
  for (const auto& k : unconfirmed_knobs(r))
    unconfirmed.push_back(k + "=" + value_in(r.unconfirmed_config, k));
  m["unconfirmed"] = unconfirmed;
  const bool gain = r.speedup.valid() && (!kept.empty() || !unconfirmed.empty());
  m["verdict"] = r.verdict;
  const Headline head = tune_headline(r);
  m["headline"] = {{"kind", head.kind}, {"title", head.title}};
  m["speedup"] = gain ? json(r.speedup.ratio) : json(nullptr);
  m["speedup_ci"] = gain ? json::array({r.speedup.lo, r.speedup.hi}) : json(nullptr);
  m["fresh_processes"] = gain && r.speedup_fresh_processes;
  m["confirmation"] = gain ? r.confirmation : std::string();  // which confirmation the headline has, in words
  // How the headline was measured, so that the GUI's Compare row and its tooltip say it in the tuner's words.
  m["speedup_method"] = gain ? json(r.speedup.method) : json(nullptr);
  m["speedup_pairs"] = gain ? json(r.speedup.pairs) : json(nullptr);
  m["baseline_throughput"] = num(r.baseline_throughput);
  m["final_throughput"] = num(r.final_throughput);
  // A tune that stops at 17 of 60 s must say why (a user saw "used 17 s" of 60 and no reason). The search ends when every phase is
  // done; the budget only cuts it short.
  std::string ended = r.ended;
  if (ended.empty() && r.budget_s > 0 && r.elapsed_s >= r.budget_s)
    ended = "the budget ran out; knobs not tried are listed as skipped in the report";
  m["ended"] = ended;
  m["memory"] = report_detail::memory_headline(r);
  // What one pass over the knobs costs here (the tune's plan line), and whether that was all that was asked.
  m["plan"] = r.plan ? json(r.plan->line) : json(nullptr);
  m["plan_s"] = r.plan ? json(r.plan->pass_s) : json(nullptr);
  m["plan_only"] = r.plan_only;
  return m;
}

}  // namespace tb::engine
