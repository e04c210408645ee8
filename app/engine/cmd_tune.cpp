// tunebench-cli tune: the auto-tuner (engine/tuner.h) with its report (engine/report.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "client/inputs.h"
#include "commands.h"
#include "engine/distributed.h"
#include "engine/report.h"
#include "engine/patch_check.h"
#include "engine/script_patch.h"
#include "engine/tuner.h"
#include "engine_cli_common.h"
#include "run_ranks.h"
#include "tune_print.h"
#include "script_common.h"
#include "engine/live_group.h"

namespace tb::cli {
namespace {

int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  return code;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string markdown_path_for(const std::string& html) {
  const auto dot = html.find_last_of('.');
  const auto slash = html.find_last_of('/');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) return html.substr(0, dot) + ".md";
  return html + ".md";
}

}  // namespace

int cmd_tune(int argc, char** argv) {
  engine::SessionOptions so;
  so.model.clear();
  so.data.clear();
  engine::TuneOptions to;
  to.budget_s = client::inputs::kBudgetDefaultS;
  // A simulation's seed is the one given (0 included: it once became 7 silently), else 7, said on the terminal.
  const bool seed_given = std::any_of(argv, argv + argc, [](const char* a) { return std::string(a) == "--seed"; });
  std::string report, json_out, knobs_list, patch_out;
  bool quiet = false, simulate = false, fresh_groups = false, patch_check = true;
  std::string profile;
  int ranks = 1, dist_timeout = 0;
  client::ScriptOptions script;
  std::vector<std::string> script_args;
  const int end = script_args_split(argc, argv, script_args);
  script.args = script_args;
  for (int i = 1; i < end; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) { return next_arg(end, argv, i, out); };
    std::string v;
    int64_t n = 0;
    if (const auto s = script_source_option(a, value, script)) {
      if (!*s) return fail(s->error().message, 2);
    } else if (a == "--set" && !script.script.empty()) {
      // Script knobs are the launcher's (it validates them): keep them as they are.
      if (!value(v)) return fail("--set needs k=v,...", 2);
      const auto items = client::inputs::parse_settings(v);
      if (!items) return fail(items.error().message, 2);
      for (const auto& [k, val] : *items) {
        script.set.push_back({k, val});
        to.skip_knobs.push_back(k);
      }
    } else if (a == "--help" || a == "-h") {
      print_tune_usage(stdout);
      return 0;
    } else if (a == "--budget") {
      if (!value(v)) return fail("--budget needs a number of seconds", 2);
      const auto b = client::inputs::parse_tune_budget(v);
      if (!b) return fail("--" + b.error().message, 2);
      to.budget_s = *b;
    } else if (a == "--report") {
      if (!value(report) || report.empty()) return fail("--report needs a file name (R.html)", 2);
    } else if (a == "--json") {
      if (!value(json_out) || json_out.empty()) return fail("--json needs a file name", 2);
    } else if (a == "--patch") {
      if (!value(patch_out) || patch_out.empty()) return fail("--patch needs a file name (P.diff)", 2);
    } else if (a == "--no-patch-check") {
      patch_check = false;
    } else if (a == "--knobs") {
      if (!value(knobs_list)) return fail("--knobs needs k1,k2,...", 2);
      for (const auto& k : split_list(knobs_list)) {
        if (script.script.empty() && !engine::find_knob(k))
          return fail("unknown knob '" + k + "' in --knobs (see tunebench-cli knobs)", 2);
        to.only_knobs.push_back(k);
      }
    } else if (a == "--rounds") {
      if (!value(v) || !parse_int(v, n, 1) || n > 20) return fail("--rounds needs an integer in [1, 20]", 2);
      to.rounds = static_cast<int>(n);
    } else if (a == "--ranks") {
      if (!value(v) || !parse_int(v, n, 1) || n > 64) return fail("--ranks needs an integer from 1 to 64", 2);
      ranks = static_cast<int>(n);
    } else if (a == "--dist-timeout") {
      if (!value(v) || !parse_int(v, n, 1)) return fail("--dist-timeout needs a positive number of seconds", 2);
      dist_timeout = static_cast<int>(n);
    } else if (a == "--fresh-groups") {
      fresh_groups = true;
    } else if (a == "--quiet" || a == "-q") {
      quiet = true;
    } else if (a == "--simulate") {
      simulate = true;
    } else if (a == "--profile") {
      if (!value(profile) || profile.empty()) return fail("--profile needs a name (toy, gpu, script-gpu) or a world file", 2);
    } else {
      bool matched = false;
      if (const Status s = parse_session_option(argc, argv, i, so, matched); !s) return fail(s.error().message, 2);
      if (!matched) return fail("unknown option '" + a + "' for tune (see tunebench-cli tune --help)", 2);

    }
  }
  if (!profile.empty() && !simulate) return fail("--profile names a simulation: use it with --simulate", 2);
  if (!profile.empty())
    if (Status ok = engine::check_simulation_profile(profile); !ok) return fail(ok.error().message, 2);
  if (!script.script.empty() && (simulate || !so.model.empty()))
    return fail("--script replaces --model/--data/--simulate", 2);
  if (!simulate && script.script.empty() && so.model.empty()) return fail("tune needs --model (mnist_cnn, resnet18, resnet50, vit_tiny, torchscript:PATH)", 2);
  if (!simulate && script.script.empty() && so.data.empty()) return fail("tune needs --data (synthetic, imagefolder:DIR, mnist:DIR)", 2);
  // A led group starts this command again as its ranks (launch_led_group), or torchrun does on every node:
  // rank 0 tunes, the others follow.
  const auto from_env = engine::dist_from_env();
  if (!from_env) return fail("bad group environment: " + from_env.error().message, 2);
  const std::optional<engine::DistOptions> env = *from_env;
  if (ranks > 1 && std::getenv("WORLD_SIZE"))
    return fail("tune --ranks starts its own groups of ranks: drop --ranks under torchrun (WORLD_SIZE is set)", 2);
  const bool led_rank = env && env->enabled();
  if ((ranks > 1 || led_rank) && (simulate || !script.script.empty()))
    return fail(std::string("a data-parallel tune (--ranks, or under torchrun) runs the engine's own data-parallel "
                            "run (--model/--data), not ") +
                    (simulate ? "--simulate" : "a script"),
                2);
  if (ranks > 1 && !fresh_groups) return launch_led_group(argc, argv, "tune", ranks, dist_timeout > 0 ? dist_timeout : 60);
  if (led_rank) {
    join_group(so, *env, dist_timeout);
    ranks = env->world_size;
    if (env->rank != 0) return engine::serve_follower(so);
  }
  // Knobs pinned with --set are part of the baseline and are not tuned.
  for (const auto& [k, v] : so.knobs) to.skip_knobs.push_back(k);
  // Fail on an unwritable output before spending the budget; files the probe created are removed again if
  // the tune fails, so a failed run leaves no empty report behind.
  std::vector<std::string> created;
  for (const std::string& p : {report, report.empty() ? std::string() : markdown_path_for(report), json_out}) {
    if (p.empty()) continue;
    const bool existed = std::filesystem::exists(p);
    FILE* f = std::fopen(p.c_str(), "ab");
    if (!f) {
      for (const auto& c : created) std::remove(c.c_str());
      return fail("cannot write '" + p + "'", 2);
    }
    std::fclose(f);
    if (!existed) created.push_back(p);
  }
  auto fail_clean = [&](const std::string& msg, int code) {
    for (const auto& c : created) std::remove(c.c_str());
    return fail(msg, code);
  };
  if (!quiet)
    to.progress = [](const engine::TuneProgress& p) {
      std::fprintf(stderr, "[tune %3d%%] %-10s %s\n", static_cast<int>(std::lround(p.fraction * 100)), p.phase.c_str(),
                   p.message.c_str());
    };

  // Rank 0 of a led group: its session orders every step and change to the other ranks, and at the end (any
  // return) the order to stop, so no follower waits for a rank 0 that has gone.
  std::unique_ptr<engine::GroupLeader> leader;
  struct EndGroup {
    std::unique_ptr<engine::GroupLeader>& leader;
    bool ok = false;
    ~EndGroup() {
      if (leader) leader->stop(ok);
    }
  } end_group{leader};
  std::unique_ptr<engine::Workload> workload;  // after the leader: it may hold the leader's session
  const uint64_t sim_seed = seed_given ? so.seed : 7;
  try {
    if (simulate) workload = engine::make_simulated_workload(sim_seed, profile.empty() ? "toy" : profile);
    else if (!script.script.empty()) {
      script.output = script_output_to_stderr(true);  // the script's prints would drown the progress lines
      workload = engine::make_script_workload(script);
    } else if (led_rank) {
      leader = std::make_unique<engine::GroupLeader>(engine::Session::create(so));
      workload = engine::make_live_group_workload(*leader, so, ranks, dist_timeout, leader->recording());
    } else if (ranks > 1) {
      workload = engine::make_group_workload(so, ranks, dist_timeout);
    } else workload = engine::make_session_workload(so);
  } catch (const engine::EngineError& e) {
    // Rank 0 could not listen on the rendezvous port: the launcher starts the group again on another.
    if (led_rank && port_in_use_error(e.what())) {
      for (const auto& c : created) std::remove(c.c_str());
      return kExitPortInUse;
    }
    return fail_clean(led_rank ? std::string("the baseline group cannot run: ") + e.what() : std::string(e.what()), 2);
  } catch (const engine::TrialFailure& e) {
    return fail_clean(e.what(), 2);
  } catch (const std::exception& e) {
    return fail_clean(e.what(), 1);
  }
  engine::TuneResult result;
  const auto tune_start = std::chrono::steady_clock::now();
  try {
    result = engine::run_tune(*workload, to);
  } catch (const engine::TrialFailure& e) {
    return fail_clean(std::string("the baseline configuration cannot run: ") + e.what(), 1);
  } catch (const engine::EngineError& e) {
    return fail_clean(e.what(), 1);
  } catch (const std::exception& e) {
    return fail_clean(std::string("tuning failed: ") + e.what(), 1);
  }
  // A script's tune: the kept changes as a patch of the script (next to the report unless --patch names it),
  // written only when the patched script, run plainly against the original in fresh processes, is faster
  // (engine/patch_check.h); the check's line goes into the report's notes.
  const auto changed = engine::changed_knobs(result.baseline, result.final_config);
  engine::ScriptPatch patch;
  engine::PatchCheck check;
  std::string patch_base;
  if (!script.script.empty() && !changed.empty()) {
    if (patch_out.empty() && !report.empty()) patch_out = report.substr(0, report.rfind('.')) + ".diff";
    std::error_code ec;
    patch_base = std::filesystem::current_path(ec).string();
    patch = engine::script_patch(result, patch_base);
    if (!patch_out.empty() && !patch.diff.empty() && patch_check) {
      workload->release();  // the tune's live script must not run beside the processes measured now
      engine::PatchCheckOptions po;
      po.steps = result.window > 0 ? result.window : 20;
      for (const auto& t : result.trials)
        if (t.phase == "final" && t.fresh_processes && t.window > 0) po.steps = t.window;
      // At most a quarter of the budget again, and never under three pairs.
      po.max_s = 0.25 * to.budget_s;
      po.confidence = to.confidence;
      if (!quiet)
        po.progress = [](const std::string& m) { std::fprintf(stderr, "[tune  check] patch      %s\n", m.c_str()); };
      check = engine::check_script_patch(*workload, patch, po);
      if (!check.verdict.empty())
        result.notes.push_back("patch: " + check.text() +
                               (check.confirmed() ? ": written with this figure" : ": the patch was not written"));
      if (check.confirmed()) patch = engine::script_patch(result, patch_base, check.estimate);
    }
  }
  try {
    engine::write_report(result, report, report.empty() ? "" : markdown_path_for(report), json_out);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
  end_group.ok = true;

  TuneSummaryContext ctx;
  ctx.simulated_profile = profile.empty() ? "toy" : profile;
  ctx.seed = sim_seed;
  ctx.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tune_start).count();
  ctx.report = report;
  ctx.report_markdown = report.empty() ? "" : markdown_path_for(report);
  ctx.json = json_out;
  print_tune_summary(result, ctx);
  if (!script.script.empty() && !changed.empty()) {
    for (const auto& u : patch.unplaced) std::printf("not in the patch: %s\n", u.c_str());
    if (check.verdict.empty() && !patch_out.empty() && !patch.diff.empty())
      std::printf("checked   no: --no-patch-check (the patch was not run against the original)\n");
    else if (!check.verdict.empty())
      std::printf("checked   %s (%.0f s)\n", check.text().c_str(), check.seconds);
    if (!patch_out.empty() && !patch.diff.empty() && (check.verdict.empty() || check.confirmed())) {
      std::ofstream f(patch_out);
      f << patch.diff;
      if (!f) return fail("cannot write '" + patch_out + "'", 1);
      std::printf("patch     %s (from %s: git apply %s, or patch -p1 < %s)\n", patch_out.c_str(), patch_base.c_str(),
                  patch_out.c_str(), patch_out.c_str());
      for (const auto& w : patch.placed) std::printf("  %s\n", w.c_str());
    } else if (!patch_out.empty() && !patch.diff.empty()) {
      std::printf("patch     not written: the patched script was not confirmed faster than the original "
                  "(the kept changes stand as measured with TuneBench's knobs; tune again, or apply them by hand)\n");
      std::remove(patch_out.c_str());  // a patch of an earlier tune under this name must not pass for this one's
    }
  }
  return 0;
}

}  // namespace tb::cli
