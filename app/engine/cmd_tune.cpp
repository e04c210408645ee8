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

// What tune was asked for.
struct TuneArgs {
  engine::SessionOptions so;     // the engine's run: --model, --data, and a --set before any --script
  engine::TuneOptions to;
  client::ScriptOptions script;  // --script's: the script, its knobs, its arguments after "--"
  engine::Config sim_set;        // --simulate's --set: the simulated job's own knobs (a world's script knobs too)
  std::string report, json_out, patch_out, profile;
  bool quiet = false, simulate = false, fresh_groups = false, patch_check = true;
  bool help = false;
  bool seed_given = false;
  int ranks = 1, dist_timeout = 0;
};

// tune's own options (the budget, the outputs, the knobs to try, the group, the simulation): nothing when `a` is
// none of them, else Ok or the one line.
template <class ReadValue>
std::optional<Status> tune_option(const std::string& a, ReadValue&& value, TuneArgs& t) {
  std::string v;
  int64_t n = 0;
  if (a == "--budget") {
    if (!value(v)) return Status(Error{"--budget needs a number of seconds or auto"});
    const auto b = client::inputs::parse_tune_budget_or_auto(v);
    if (!b) return Status(Error{"--" + b.error().message});
    // auto: the default plans the calibration; the tuner then sets the budget to one pass's cost.
    t.to.budget_auto = !b->has_value();
    t.to.budget_s = b->value_or(client::inputs::kBudgetDefaultS);
  } else if (a == "--plan") {
    t.to.plan_only = true;
  } else if (a == "--report") {
    if (!value(t.report) || t.report.empty()) return Status(Error{"--report needs a file name (R.html)"});
  } else if (a == "--json") {
    if (!value(t.json_out) || t.json_out.empty()) return Status(Error{"--json needs a file name"});
  } else if (a == "--patch") {
    if (!value(t.patch_out) || t.patch_out.empty()) return Status(Error{"--patch needs a file name (P.diff)"});
  } else if (a == "--no-patch-check") {
    t.patch_check = false;
  } else if (a == "--knobs") {
    if (!value(v)) return Status(Error{"--knobs needs k1,k2,..."});
    for (const auto& k : split_list(v)) {
      if (t.script.script.empty() && !engine::find_knob(k))
        return Status(Error{"unknown knob '" + k + "' in --knobs (see tunebench-cli knobs)"});
      t.to.only_knobs.push_back(k);
    }
  } else if (a == "--run-steps") {
    if (!value(v) || !parse_int(v, n, 1)) return Status(Error{"--run-steps needs the run's number of steps"});
    t.to.run_steps = n;
  } else if (a == "--rounds") {
    if (!value(v) || !parse_int(v, n, 1) || n > 20) return Status(Error{"--rounds needs an integer in [1, 20]"});
    t.to.rounds = static_cast<int>(n);
  } else if (a == "--ranks") {
    if (!value(v) || !parse_int(v, n, 1) || n > 64) return Status(Error{"--ranks needs an integer from 1 to 64"});
    t.ranks = static_cast<int>(n);
  } else if (a == "--dist-timeout") {
    if (!value(v) || !parse_int(v, n, 1)) return Status(Error{"--dist-timeout needs a positive number of seconds"});
    t.dist_timeout = static_cast<int>(n);
  } else if (a == "--fresh-groups") {
    t.fresh_groups = true;
  } else if (a == "--quiet" || a == "-q") {
    t.quiet = true;
  } else if (a == "--simulate") {
    t.simulate = true;
  } else if (a == "--profile") {
    if (!value(t.profile) || t.profile.empty())
      return Status(Error{"--profile needs a name (toy, gpu, script-gpu) or a world file"});
  } else {
    return std::nullopt;
  }
  return Status::Ok();
}

// What is tuned, said once: a simulation (with its profile), a script, or the engine's --model and --data.
Status check_target(const TuneArgs& t) {
  if (!t.profile.empty() && !t.simulate) return Error{"--profile names a simulation: use it with --simulate"};
  if (!t.profile.empty())
    if (Status ok = engine::check_simulation_profile(t.profile); !ok) return ok;
  if (t.simulate && !t.sim_set.empty()) try {  // the knobs pinned are the simulated job's: checked before any output
      (void)engine::make_simulated_workload(0, t.profile.empty() ? "toy" : t.profile, t.sim_set);
    } catch (const std::invalid_argument& e) {
      return Error{e.what()};
    }
  if (!t.script.script.empty() && (t.simulate || !t.so.model.empty()))
    return Error{"--script replaces --model/--data/--simulate"};
  if (!t.simulate && t.script.script.empty() && t.so.model.empty())
    return Error{"tune needs --model (mnist_cnn, resnet18, resnet50, vit_tiny, torchscript:PATH)"};
  if (!t.simulate && t.script.script.empty() && t.so.data.empty())
    return Error{"tune needs --data (synthetic, imagefolder:DIR, mnist:DIR)"};
  return Status::Ok();
}

// argv of tune (argv[0] "tune"; a script's own arguments after "--"): the options, or the one line. --help ends
// the reading where it stands (`help`).
Result<TuneArgs> parse_args(int argc, char** argv) {
  TuneArgs t;
  t.so.model.clear();
  t.so.data.clear();
  t.to.budget_s = client::inputs::kBudgetDefaultS;
  // A simulation's seed is the one given (0 included: it once became 7 silently), else 7, said on the terminal.
  t.seed_given = std::any_of(argv, argv + argc, [](const char* a) { return std::string(a) == "--seed"; });
  const int end = script_args_split(argc, argv, t.script.args);
  // A simulation's --set names the simulated job's knobs, which a world may take from a script's catalog
  // (persistent_workers, compile): the simulation checks them, not the engine's catalog.
  const bool simulate = std::any_of(argv + 1, argv + end, [](const char* a) { return std::string(a) == "--simulate"; });
  for (int i = 1; i < end; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) { return next_arg(end, argv, i, out); };
    if (a == "--set" && simulate) {
      std::string v;
      if (!value(v)) return Error{"--set needs knob=value[,knob=value...]"};
      const auto items = client::inputs::parse_settings(v);
      if (!items) return items.error();
      for (const auto& [k, x] : *items) t.sim_set[k] = x;  // the simulation reads them (SimulatedWorkload::pin)
      continue;
    }
    // A --set before --script is the engine's (parse_session_option below): a script's knobs follow its --script.
    const bool engine_set = a == "--set" && t.script.script.empty();
    if (const auto s = engine_set ? std::nullopt : script_option(a, value, t.script, {.run_options = false})) {
      if (!*s) return s->error();
    } else if (a == "--help" || a == "-h") {
      t.help = true;
      return t;
    } else if (const auto s = tune_option(a, value, t)) {
      if (!*s) return s->error();
    } else {
      bool matched = false;
      if (const Status s = parse_session_option(argc, argv, i, t.so, matched); !s) return s.error();
      if (!matched) return Error{"unknown option '" + a + "' for tune (see tunebench-cli tune --help)"};
    }
  }
  if (Status st = check_target(t); !st) return st.error();
  // Script knobs are the launcher's (it validates them): pinned as they are, and not tuned.
  for (const auto& [k, v] : t.script.set) t.to.skip_knobs.push_back(k);
  return t;
}

// The outputs a tune writes, made (or opened) before it spends its budget: those it made are removed again when
// the tune fails, so a failed run leaves no empty report behind.
struct Outputs {
  std::vector<std::string> created;
  void remove() const {
    for (const auto& c : created) std::remove(c.c_str());
  }
  int fail_clean(const std::string& msg, int code) const {
    remove();
    return fail(msg, code);
  }
};

// Fails on an unwritable output before the budget is spent.
Result<Outputs> probe_outputs(const TuneArgs& t) {
  Outputs o;
  for (const std::string& p : {t.report, t.report.empty() ? std::string() : markdown_path_for(t.report), t.json_out}) {
    if (p.empty()) continue;
    const bool existed = std::filesystem::exists(p);
    FILE* f = std::fopen(p.c_str(), "ab");
    if (!f) {
      o.remove();
      return Error{"cannot write '" + p + "'"};
    }
    std::fclose(f);
    if (!existed) o.created.push_back(p);
  }
  return o;
}

// What the tuner measures: a simulation, a script, rank 0 of a led group (whose leader is made here), a group of
// fresh processes, or this process's session. Throws as the engine does.
std::unique_ptr<engine::Workload> make_workload(TuneArgs& t, bool led_rank, uint64_t sim_seed,
                                                std::unique_ptr<engine::GroupLeader>& leader) {
  if (t.simulate) return engine::make_simulated_workload(sim_seed, t.profile.empty() ? "toy" : t.profile, t.sim_set);
  if (!t.script.script.empty()) {
    t.script.output = script_output_to_stderr(true);  // the script's prints would drown the progress lines
    return engine::make_script_workload(t.script);
  }
  if (led_rank) {
    leader = std::make_unique<engine::GroupLeader>(engine::Session::create(t.so));
    return engine::make_live_group_workload(*leader, t.so, t.ranks, t.dist_timeout, leader->recording());
  }
  if (t.ranks > 1) return engine::make_group_workload(t.so, t.ranks, t.dist_timeout);
  return engine::make_session_workload(t.so);
}

// A script's tune: the kept changes as a patch of the script, and the check that confirmed it (or not).
struct PatchOutcome {
  std::vector<std::string> changed;  // the knobs the tune changed
  engine::ScriptPatch patch;
  engine::PatchCheck check;
  std::string base;  // the folder the patch's paths are relative to
  std::string out;   // where it goes: --patch, else next to the report
};

// The patch is written only when the patched script, run plainly against the original in fresh processes, is
// faster (engine/patch_check.h); the check's line goes into the report's notes.
PatchOutcome make_patch(const TuneArgs& t, engine::TuneResult& result, engine::Workload& workload) {
  PatchOutcome p;
  p.changed = engine::changed_knobs(result.baseline, result.final_config);
  p.out = t.patch_out;
  if (t.script.script.empty() || p.changed.empty()) return p;
  if (p.out.empty() && !t.report.empty()) p.out = t.report.substr(0, t.report.rfind('.')) + ".diff";
  std::error_code ec;
  p.base = std::filesystem::current_path(ec).string();
  p.patch = engine::script_patch(result, p.base);
  if (p.out.empty() || p.patch.diff.empty() || !t.patch_check) return p;
  workload.release();  // the tune's live script must not run beside the processes measured now
  engine::PatchCheckOptions po;
  po.steps = result.window > 0 ? result.window : 20;
  for (const auto& tr : result.trials)
    if (tr.phase == "final" && tr.fresh_processes && tr.window > 0) po.steps = tr.window;
  // At most a quarter of the budget again, and never under three pairs.
  po.max_s = 0.25 * t.to.budget_s;
  po.confidence = t.to.confidence;
  if (!t.quiet)
    po.progress = [](const std::string& m) { std::fprintf(stderr, "[tune  check] patch      %s\n", m.c_str()); };
  p.check = engine::check_script_patch(workload, p.patch, po);
  if (!p.check.verdict.empty())
    result.notes.push_back("patch: " + p.check.text() +
                           (p.check.confirmed() ? ": written with this figure" : ": the patch was not written"));
  if (p.check.confirmed()) p.patch = engine::script_patch(result, p.base, p.check.estimate);
  return p;
}

// The patch's lines after the summary, and the patch written where it was confirmed (or not checked); the exit code.
int write_patch(const TuneArgs& t, const PatchOutcome& p) {
  if (t.script.script.empty() || p.changed.empty()) return 0;
  for (const auto& u : p.patch.unplaced) std::printf("not in the patch: %s\n", u.c_str());
  if (p.check.verdict.empty() && !p.out.empty() && !p.patch.diff.empty())
    std::printf("checked   no: --no-patch-check (the patch was not run against the original)\n");
  else if (!p.check.verdict.empty())
    std::printf("checked   %s (%.0f s)\n", p.check.text().c_str(), p.check.seconds);
  if (!p.out.empty() && !p.patch.diff.empty() && (p.check.verdict.empty() || p.check.confirmed())) {
    std::ofstream f(p.out);
    f << p.patch.diff;
    if (!f) return fail("cannot write '" + p.out + "'", 1);
    std::printf("patch     %s (from %s: git apply %s, or patch -p1 < %s)\n", p.out.c_str(), p.base.c_str(),
                p.out.c_str(), p.out.c_str());
    for (const auto& w : p.patch.placed) std::printf("  %s\n", w.c_str());
  } else if (!p.out.empty() && !p.patch.diff.empty()) {
    std::printf("patch     not written: the patched script was not confirmed faster than the original "
                "(the kept changes stand as measured with TuneBench's knobs; tune again, or apply them by hand)\n");
    std::remove(p.out.c_str());  // a patch of an earlier tune under this name must not pass for this one's
  }
  return 0;
}

// The tune itself, its report, its summary and a script's patch; the exit code.
int tune_and_report(TuneArgs& t, bool led_rank, const Outputs& outputs) {
  if (!t.quiet)
    t.to.progress = [](const engine::TuneProgress& p) {
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
  const uint64_t sim_seed = t.seed_given ? t.so.seed : 7;
  try {
    workload = make_workload(t, led_rank, sim_seed, leader);
  } catch (const engine::EngineError& e) {
    // Rank 0 could not listen on the rendezvous port: the launcher starts the group again on another.
    if (led_rank && port_in_use_error(e.what())) {
      outputs.remove();
      return kExitPortInUse;
    }
    return outputs.fail_clean(led_rank ? std::string("the baseline group cannot run: ") + e.what() : std::string(e.what()), 2);
  } catch (const engine::TrialFailure& e) {
    return outputs.fail_clean(e.what(), 2);
  } catch (const std::exception& e) {
    return outputs.fail_clean(e.what(), 1);
  }
  engine::TuneResult result;
  const auto tune_start = std::chrono::steady_clock::now();
  try {
    result = engine::run_tune(*workload, t.to);
  } catch (const engine::TrialFailure& e) {
    return outputs.fail_clean(std::string("the baseline configuration cannot run: ") + e.what(), 1);
  } catch (const engine::EngineError& e) {
    return outputs.fail_clean(e.what(), 1);
  } catch (const std::exception& e) {
    return outputs.fail_clean(std::string("tuning failed: ") + e.what(), 1);
  }
  const PatchOutcome patch = make_patch(t, result, *workload);
  try {
    engine::write_report(result, t.report, t.report.empty() ? "" : markdown_path_for(t.report), t.json_out);
  } catch (const std::exception& e) {
    return fail(e.what(), 1);
  }
  end_group.ok = true;

  TuneSummaryContext ctx;
  ctx.simulated_profile = t.profile.empty() ? "toy" : t.profile;
  ctx.seed = sim_seed;
  ctx.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tune_start).count();
  ctx.report = t.report;
  ctx.report_markdown = t.report.empty() ? "" : markdown_path_for(t.report);
  ctx.json = t.json_out;
  print_tune_summary(result, ctx);
  return write_patch(t, patch);
}

}  // namespace

int cmd_tune(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (!parsed) return fail(parsed.error().message, 2);
  TuneArgs& t = *parsed;
  if (t.help) {
    print_tune_usage(stdout);
    return 0;
  }
  // A led group starts this command again as its ranks (launch_led_group), or torchrun does on every node:
  // rank 0 tunes, the others follow.
  const auto from_env = engine::dist_from_env();
  if (!from_env) return fail("bad group environment: " + from_env.error().message, 2);
  const std::optional<engine::DistOptions> env = *from_env;
  if (t.ranks > 1 && std::getenv("WORLD_SIZE"))
    return fail("tune --ranks starts its own groups of ranks: drop --ranks under torchrun (WORLD_SIZE is set)", 2);
  const bool led_rank = env && env->enabled();
  if ((t.ranks > 1 || led_rank) && (t.simulate || !t.script.script.empty()))
    return fail(std::string("a data-parallel tune (--ranks, or under torchrun) runs the engine's own data-parallel "
                            "run (--model/--data), not ") +
                    (t.simulate ? "--simulate" : "a script"),
                2);
  if (t.ranks > 1 && !t.fresh_groups)
    return launch_led_group(argc, argv, "tune", t.ranks, t.dist_timeout > 0 ? t.dist_timeout : 60);
  if (led_rank) {
    join_group(t.so, *env, t.dist_timeout);
    t.ranks = env->world_size;
    if (env->rank != 0) return engine::serve_follower(t.so);
  }
  // Knobs pinned with --set are part of the baseline and are not tuned.
  for (const auto& [k, v] : t.so.knobs) t.to.skip_knobs.push_back(k);
  for (const auto& [k, v] : t.sim_set) t.to.skip_knobs.push_back(k);
  auto outputs = probe_outputs(t);
  if (!outputs) return fail(outputs.error().message, 2);
  return tune_and_report(t, led_rank, *outputs);
}

}  // namespace tb::cli
