// The tune's text on the terminal (tune_print.h): its usage and its summary.
#include "tune_print.h"

#include <cstdio>

#include "engine/report.h"

namespace tb::cli {

void print_tune_usage(FILE* out) {
  std::fputs(
      "usage: tunebench-cli tune --model M --data D [--budget S|auto] [--plan] [--report R.html] [--json OUT.json] [--set k=v,...]\n"
      "       [--knobs k1,k2,...] [--rounds N] [--run-steps N] [--warmup N] [--seed N] [--device auto|cpu|cuda]\n"
      "       [--input C,H,W]\n"
      "       [--classes K] [--ranks N [--dist-timeout S] [--fresh-groups]] [--quiet] [--simulate [--profile P]]\n"
      "       tunebench-cli tune --script train.py [--python PY] [--budget S|auto] [--plan] [--report R.html] [--json OUT.json]\n"
      "       [--set k=v,...] [--knobs ...] [--patch P.diff] [--no-patch-check] [-- SCRIPT ARGS]   (a user's PyTorch script, run unmodified;\n"
      "       the kept changes as a patch of it: P.diff, or R.diff next to --report R.html, written when the patched\n"
      "       script run plainly beats the original in fresh processes; --no-patch-check writes it unchecked)\n"
      "  Measures the noise floor (A/A), process knobs (cpu_allocator) in fresh processes, then every applicable\n"
      "  knob on top of the winners so far (paired windows AB, BA, ..., t interval), revisits the rest, re-measures\n"
      "  every kept knob in a final alternation and reports the speedup. --report R.html also writes R.md.\n"
      "  After the noise floor it says what trying each applicable knob once costs, finals included, and how many\n"
      "  of them the budget pays for; --budget auto (10-86400 s) makes that the budget. --plan stops there: the\n"
      "  calibration and the noise floor measured, that cost said, nothing tried (the price before you commit).\n"
      "  --set pins knobs (the baseline uses them and the tuner leaves them alone; with --simulate, the simulated\n"
      "  job's knobs, a world's own among them); --knobs tunes only these.\n"
      "  A change with a one-time cost (a compile) is reported with the steps after which it pays for itself;\n"
      "  --run-steps N (your run's length) keeps none that pays back only after more steps than that.\n"
      "  --ranks N tunes a data-parallel run of N ranks: a live group whose rank 0 orders every step and change to\n"
      "  all ranks, so they change together; the throughput is the group's; loss probes and process knobs run in\n"
      "  fresh groups. --fresh-groups measures every window in a fresh group (run --ranks N) instead\n"
      "  (docs/distributed.md).\n"
      "  --simulate tunes the built-in deterministic simulation instead of a model, in seconds: --profile toy (the\n"
      "  default), gpu (the engine's ResNet-50 on a JPEG folder on an H100), gpu-synthetic (the same on synthetic data)\n"
      "  or script-gpu (a public ImageNet training\n"
      "  script there), calibrated to what was measured on a lent GPU, a world file describing a job (docs/tuning.md\n"
      "  'Simulated worlds') or random:N (the tests' random world N); it prints the profile's hand configuration\n"
      "  and speed-up beside the tuner's, and the best its space holds.\n",
      out);
}

namespace {
// The skipped list's tag of why: the budget, an arm fresh pairs cannot resolve, or a fresh-process final that did
// not run for want of a gain to confirm (or of pairs that could decide it).
const char* skip_tag(const std::string& reason) {
  if (reason.rfind("budget", 0) == 0) return "(budget)";
  if (reason.rfind("out of reach", 0) == 0) return "(out of reach)";
  if (reason.find("the fresh-process final did not run") != std::string::npos) return "(no fresh final)";
  return "";
}
}  // namespace

void print_tune_summary(const engine::TuneResult& r, const TuneSummaryContext& ctx) {
  const auto changed = engine::changed_knobs(r.baseline, r.final_config);
  // The summary on stdout: what to keep and by how much. A simulated tune says so first: every figure below
  // is the model's, its seconds virtual.
  if (r.environment.contains("simulation"))
    std::printf("simulated the profile '%s', seed %llu: every figure below is the simulation's, its seconds virtual "
                "(%.1f s of wall time here)\n",
                ctx.simulated_profile.c_str(), static_cast<unsigned long long>(ctx.seed), ctx.wall_s);
  if (r.trials.empty())  // the budget held no trial (TuneResult::ended says why and what would)
    std::printf("baseline  not measured: nothing was tried\n");
  else
    std::printf("baseline  %.1f samples/s (measured %s%s)\n", r.baseline_throughput,
                r.plan_only ? "against itself, the noise floor's pairs" : "at the end",
                r.speedup_fresh_processes ? ", fresh processes" : "");
  const auto unconfirmed = engine::unconfirmed_knobs(r);
  if (!unconfirmed.empty()) {
    // Nothing is kept that the headline could not confirm (engine/tuner.h unconfirmed_config).
    std::printf("final     %.1f samples/s  speedup %.2fx [%.2f, %.2f]  COULD NOT DECIDE: the interval covers 1\n",
                r.final_throughput, r.speedup.ratio, r.speedup.lo, r.speedup.hi);
    if (r.speedup_fresh_processes && r.speedup_in_process.valid())
      std::printf("          in the tune's own process: %.2fx [%.2f, %.2f] (not what a fresh start measured)\n",
                  r.speedup_in_process.ratio, r.speedup_in_process.lo, r.speedup_in_process.hi);
    std::printf("keep      nothing: not confirmed:");
    for (const auto& k : unconfirmed) std::printf(" %s=%s", k.c_str(), r.unconfirmed_config.at(k).c_str());
    std::printf(" (tune again with a larger --budget)\n");
  } else if (changed.empty()) {
    // The report's headline, word for word ("too noisy to tune here" is not "no change beat the baseline"),
    // lower-case as the terminal's other lines.
    if (!r.trials.empty()) std::printf("%s\n", engine::headline_line(r).c_str());
  } else {
    std::printf("final     %.1f samples/s  speedup %.2fx [%.2f, %.2f]%s\n", r.final_throughput,
                r.speedup.ratio, r.speedup.lo, r.speedup.hi,
                r.verdict == "undecided" ? "  COULD NOT DECIDE: the interval covers 1" : "");
    if (r.verdict == "undecided" && r.speedup_fresh_processes && r.speedup_in_process.valid())
      std::printf("          in the tune's own process: %.2fx [%.2f, %.2f] (not what a fresh start measured)\n",
                  r.speedup_in_process.ratio, r.speedup_in_process.lo, r.speedup_in_process.hi);
    std::printf("keep     ");
    for (const auto& k : changed) std::printf(" %s=%s", k.c_str(), r.final_config.at(k).c_str());
    std::printf("\n");
  }
  if (!r.confirmation.empty() && (!changed.empty() || !unconfirmed.empty()))
    std::printf("confirmed %s\n", r.confirmation.c_str());
  for (const auto& line : r.recipe_changes) std::printf("recipe    %s\n", line.c_str());
  if (!r.noise.text.empty()) std::printf("noise     %s\n", r.noise.text.c_str());
  // A script's epochs in its windows (measure/pass_rhythm.h): how they were kept from being noise.
  if (r.environment.is_object() && r.environment.contains("windows") && r.environment["windows"].is_string())
    std::printf("windows   %s\n", r.environment["windows"].get<std::string>().c_str());
  if (r.environment.is_object() && r.environment.contains("rate") && r.environment["rate"].is_string())
    std::printf("rate      %s\n", r.environment["rate"].get<std::string>().c_str());
  std::printf("budget    %.0f s of %.0f s", r.elapsed_s, r.budget_s);
  for (const auto& [phase, s] : r.budget_phases)
    if (s >= 0.5) std::printf("%s %s %.0f s", &phase == &r.budget_phases.front().first ? ":" : ",", phase.c_str(), s);
  std::printf("\n");
  if (r.plan) std::printf("plan      %s\n", r.plan->line.c_str());
  std::printf("ended     %s\n", r.ended.c_str());
  if (r.environment.contains("simulation")) {
    const auto& sim = r.environment["simulation"];
    if (sim.contains("hand_speedup")) {
      std::printf("by hand   %.2fx (the profile's hand configuration:", sim["hand_speedup"].get<double>());
      for (const auto& [k, v] : sim["hand_config"].items()) std::printf(" %s=%s", k.c_str(), v.get<std::string>().c_str());
      std::printf(")\n");
    }
    if (sim.contains("best_speedup"))
      std::printf("best      %.2fx exists in the profile's space (exhaustive search, not a measurement)\n",
                  sim["best_speedup"].get<double>());
  }
  if (!r.drift_note.empty()) std::printf("drift     %s\n", r.drift_note.c_str());
  for (const auto& t : r.trials)
    // A change made with another (a workers rung with the threads it leaves) names it: two rungs of one knob
    // read as two different trials.
    std::printf("  %-11s %-18s %-10s %s  %s\n", t.phase.c_str(), t.knob.empty() ? "(all)" : t.knob.c_str(),
                t.knob.empty() ? (t.phase == "final" ? t.value.substr(0, 10).c_str() : "") : (t.value + (t.also.empty() ? "" : " + " + t.also)).c_str(),
                t.estimate.text(3).c_str(), t.phase == "noise floor" ? "noise floor" : t.accepted ? "kept" : t.outcome.c_str());
  if (!r.skipped.empty()) {
    std::printf("skipped:");
    for (const auto& s : r.skipped)
      std::printf(" %s%s%s%s", s.knob.c_str(), s.value.empty() ? "" : "=", s.value.c_str(),
                  skip_tag(s.reason));
    std::printf("\n");
  }
  if (!ctx.report.empty()) std::printf("report    %s (+ %s)\n", ctx.report.c_str(), ctx.report_markdown.c_str());
  if (!ctx.json.empty()) std::printf("json      %s\n", ctx.json.c_str());
}

}  // namespace tb::cli
