#!/usr/bin/env python3
"""Are the tuner's tests able to fail? Builds the search with one deliberate defect at a time - a lazy search,
a greedy one, one that lies about what it tried - runs the tuner's tests against it, and says which tests
caught it. A mutation no test catches is a hole in the tests: the script exits 1 and names it. (Not run in
CI: each mutation rebuilds the engine's test binary, 1-3 minutes on 2 cores.)

The mutations (issue: "tests that fail when the search is lazy, shown by mutation"):
  stop-at-30%          the search stops at 30% of its budget
  never-<knob>         the search silently never tries <knob> (batch_size and each model-level knob in turn)
  ignore-budget        every trial fits, whatever is left
  keep-covering-1      a trial whose ratio is above 1 is kept, even when its interval covers 1
  keep-hurting         every measured trial is kept, a slower one too
  claim-every-knob     `ended` says "every applicable knob was tried" whatever was skipped for budget
  pair-slower          a change measured slower alone joins pairs (and chains of them) of changes tried together
  pair-late            a worker rung tied with another single is paired only once no single is left
  recompile-past-end   the final runs every arm's recompile under torch.compile, past the budget's hard end
  pair-chains          a pair that had no effect is paired again with a third change, and so on
  fresh-compile-free   the fresh-process final costs a compiled arm's processes without their compile
  named-not-first      the switches the analyses name are ranked with the rest, not first
  caps-ignored         the analyses' bounds (the loader verdict's for workers) do not cap a knob's prior
  run-steps-ignored    a compile that pays back only after more steps than --run-steps is kept
  one-time-in-rate     a compile's one-time cost is said of no trial (its break-even never computed)
  startup-in-rate      a knob's own start-up (a capture, a spawn) is said of no trial
  startup-run-steps-ignored  a change whose start-up pays back only after more steps than --run-steps is kept
  pass-rung-unpersistent  a workers rung over long passes leaves the workers to spawn again every pass
  startup-pass-ignored a start-up paid at every pass of the loader (workers not persistent) that pays back only
                       after more steps than a pass is kept
  finals-by-average    the finals' estimate ignores what each arm's switch costs (the recent windows' average)
  process-arms-unheld  a pass that covers the process knobs' arms does not hold their time (cudnn_benchmark)
  reach-ignored        a process knob's arm runs where its fresh pairs cannot resolve the most it may give
  reach-by-prior-only  a process knob's arm is out of reach whatever the fresh pairs' spread
  waited-unprotected   a knob that waited for another (prefetch for workers) loses its turn to climbs and revisits
  needed-alone         non_blocking is tried alone from pageable memory (its trial does not set pinned memory)
  needed-unpinnable    non_blocking is tried while the tune may not pin memory
  recipe-pair-unsaid   a bigger batch kept in a pair (with a worker) is said "not measured" without it
  final-round-bare     the final's next round is priced at the last one's time, without the end's margin
  settle-by-steps      the check of knobs that did not hold alone is priced by step times, not by its arms' windows
  skip-gain-unsaid     a knob skipped for budget does not say what it may give by the last analysis
  in-order-unwaited    in_order is tried from 0 loader workers (only prefetch and persistent_workers wait for them)
  no-fresh-said-budget a process knob skipped because fresh pairs could not decide the headline is said "budget"
  fresh-compile-once   a trial in fresh processes is priced one compile, as in this process
  second-pair-always   a trial's second pair runs even when it would end past the budget's hard end
  compile-in-next-pair an in-process trial prices its next pair with the compile its first paid once
  cheap-pair-cut       a second pair of a few seconds is cut past the end's reserve, its first measuring nothing
  final-rows-one-time  a row of the in-process final says the compile its arms' order made one of them pay
  undecided-never-paid a compile whose step the pairs could not decide is said "never paid back by a step no faster"
  window-capped        a window's second is capped by max_window's steps (30 steps of a millisecond)
  final-arm-uncounted  a final's arm that recompiles, run because the hard end paid for it, counts as reserved
  plan-only-searches   tune --plan goes on to search after pricing the pass
  plan-range-all-kept  the plan's count with nothing kept is its count with every knob kept (no range)
  compile-never-given-up a compile still running when the tune must end runs on (no warm-up deadline)
  final-extras-none    a knob the search had no time for is never measured as an arm of the final
  final-extras-kept-anyway  the final's first extra arm is kept whatever it measured
  after-finals-none    what the finals leave of the budget measures nothing
  after-finals-unbudgeted  every knob skipped for budget is measured after the finals, past the budget
  after-finals-arms-only  after the finals only what an arm can say is measured (no trial of a recipe change)

Each source file is restored after its mutation (also on Ctrl-C); the build directory is left rebuilt from
the restored sources at the end.

Each mutation is checked against the tuner's test binary (tunebench_tuner_tests), which rebuilds in about a
minute here.

usage: /usr/bin/python3 bench/mutate_search.py [--build build] [--only NAME,...] [--filter 'Tuner*']
"""

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEARCH = "engine/src/tuner/search/"

# (name, file, text to find (exactly once), its replacement)
MUTATIONS = [
    ("stop-at-30%", SEARCH + "search_screen.cpp",
     "  for (;;) {\n    std::vector<std::string> ready;",
     "  for (;;) {\n    if (elapsed() > 0.3 * o_.budget_s) return;\n    std::vector<std::string> ready;"),
    ("ignore-budget", SEARCH + "budget.h",
     "bool fits_trial(double elapsed, double cost, double reserve) const { return elapsed + cost + reserve <= total_; }",
     "bool fits_trial(double, double, double) const { return true; }"),
    ("keep-covering-1", SEARCH + "search_trial.cpp",
     "} else if (e.faster() && e.ratio - 1.0 >= threshold) {",
     "} else if (e.ratio > 1.0) {"),
    ("keep-hurting", SEARCH + "search_trial.cpp",
     "} else if (e.faster() && e.ratio - 1.0 >= threshold) {",
     "} else if (true) {"),
    ("pair-slower", SEARCH + "search_screen.cpp",
     "t.accepted || t.outcome != \"no effect\") continue;",
     "t.accepted || (t.outcome != \"no effect\" && t.outcome != \"slower\")) continue;"),
    ("pair-late", SEARCH + "search_screen.cpp",
     "res_.trials.back().outcome == \"no effect\")\n      try_pair(",
     "res_.trials.back().outcome == \"never\")\n      try_pair("),
    ("recompile-past-end", SEARCH + "search_final.cpp",
     "if (t.budget_.may_finish(t.elapsed(), final_cost + recompiles + compile_s)) recompiles += compile_s;",
     "if (true) recompiles += compile_s;"),
    ("pair-chains", SEARCH + "search_screen.cpp",
     "    if (p->second.change.paired) continue;\n",
     "\n"),
    ("fresh-compile-free", SEARCH + "finals.h",
     "return compile_s_ * std::max(0, n_arms - 1) * rounds; }",
     "return 0.0 * compile_s_ * n_arms * rounds; }"),
    ("named-not-first", SEARCH + "search_plan.cpp",
     "if (n == evidence_.named.end() || misses(id) > 0) return first.size() + evidence_.named.size();",
     "return first.size() + evidence_.named.size();"),
    ("caps-ignored", SEARCH + "search_plan.cpp",
     "if (auto c = evidence_.caps.find(id); c != evidence_.caps.end())",
     "if (auto c = evidence_.caps.find(id); false && c != evidence_.caps.end())"),
    ("run-steps-ignored", SEARCH + "search_trial.cpp",
     "if (o_.run_steps > 0 && t.break_even_steps > double(o_.run_steps)) {\n        // Faster per step",
     "if (false) {\n        // Faster per step"),
    ("one-time-in-rate", SEARCH + "search_trial.cpp",
     "  if (extra >= 0.05) {\n",
     "  if (false) {\n"),
    ("startup-in-rate", SEARCH + "search_trial.cpp",
     "  if (!(extra >= 0.5 && extra >= 0.25 * wall / double(t.b.size()))) return;\n",
     "  return;\n"),
    ("startup-run-steps-ignored", SEARCH + "search_trial.cpp",
     "    const int64_t limit = run_first ? o_.run_steps : pass;",
     "    const int64_t limit = run_first ? 0 : pass;"),
    ("pass-rung-unpersistent", SEARCH + "search_plan.cpp",
     '(value_in(ref, "workers") == "0" || w_.pass_steps_outside_windows() > 0)',
     '(value_in(ref, "workers") == "0")'),
    ("startup-pass-ignored", SEARCH + "search_trial.cpp",
     "    const int64_t limit = run_first ? o_.run_steps : pass;",
     "    const int64_t limit = run_first ? o_.run_steps : 0;"),
    ("finals-by-average", SEARCH + "search_plan.cpp",
     "  if (switches_.any_switch()) return alternation_estimate_s(arms, rounds);",
     "  if (false) return alternation_estimate_s(arms, rounds);"),
    ("reach-ignored", SEARCH + "search_plan.cpp",
     "  if (!cuda_ || kind_of(id, cuda_) != \"compute\") return std::nullopt;",
     "  return std::nullopt;"),
    ("reach-by-prior-only", SEARCH + "search_plan.cpp",
     "  if (half_width(n) <= std::log(most)) return std::nullopt;",
     "  if (false) return std::nullopt;"),
    ("process-arms-unheld", SEARCH + "search_pass.cpp",
     "  if (p.process_fit) process_planned_ = p.process_knobs;",
     "  (void)0;"),
    ("waited-unprotected", SEARCH + "search_screen.cpp",
     "  if (!res_.plan || res_.plan->fit < static_cast<int>(res_.plan->knobs.size())) return ready;",
     "  return ready;"),
    ("needed-alone", SEARCH + "search_screen.cpp",
     "  const auto need = needed_switch(id, current_);",
     "  const std::optional<std::pair<std::string, std::string>> need;"),
    ("needed-unpinnable", SEARCH + "search_plan.cpp",
     "  if (auto need = needed_switch(info.id, c); need && !eligible(knobs_[need->first], false))",
     "  if (auto need = needed_switch(info.id, c); false)"),
    ("recipe-pair-unsaid", SEARCH + "search_summary.cpp",
     "      } else if ((\" + \" + t.also + \" + \").find(\" + \" + k + \"=\") != std::string::npos) {",
     "      } else if (false) {"),
    ("final-round-bare", SEARCH + "search_final.cpp",
     "        kReserveMargin * std::max(t.budget_.alternation_s(live_arms(arms_), 1, false), last_round_s);",
     "        std::max(t.budget_.alternation_s(live_arms(arms_), 1, false), last_round_s);"),
    ("settle-by-steps", SEARCH + "search_final.cpp",
     "      {t.budget_.alternation_s(3, t.o_.rounds, false), measured_s,",
     "      {t.budget_.alternation_s(3, t.o_.rounds, false), 0 * measured_s,"),
    ("skip-gain-unsaid", SEARCH + "search_screen.cpp",
     "d.why() + \"; by the last analysis it may give ~\" + fmt(expected(d.knob), 2) + \"x\",",
     "d.why(),"),
    ("in-order-unwaited", SEARCH + "search_plan.cpp",
     "  if (depends_on(info.id) == \"workers\" && knobs_.count(\"workers\") && value_in(c, \"workers\") == \"0\")",
     "  if ((info.id == \"prefetch\" || info.id == \"persistent_workers\") && knobs_.count(\"workers\") && value_in(c, \"workers\") == \"0\")"),
    ("no-fresh-said-budget", SEARCH + "search_fresh.cpp",
     "    if (budget)\n",
     "    if (true)\n"),
    ("fresh-compile-once", SEARCH + "search_plan.cpp",
     "  if (fresh || all_fresh()) {\n",
     "  if (false) {\n"),
    ("second-pair-always", SEARCH + "search_trial.cpp",
     "    if (r == 1 && next_s > kCheapPair",
     "    if (false && next_s > kCheapPair"),
    ("compile-in-next-pair", SEARCH + "search_trial.cpp",
     "    const double once = fresh ? 0.0 : one_time_sum(t.a) + one_time_sum(t.b);",
     "    const double once = 0.0;"),
    ("final-rows-one-time", SEARCH + "search_trial.cpp",
     "  const bool arms_in_process = t.phase == \"final\" && !t.fresh_processes;",
     "  const bool arms_in_process = false;"),
    ("undecided-never-paid", SEARCH + "search_trial.cpp",
     "      s += t.outcome == \"slower\" || t.estimate.hi <= 1.0 + o_.min_gain\n",
     "      s += true\n"),
    ("window-capped", SEARCH + "search.cpp",
     "  const int shortest = std::max(fewest, static_cast<int>(std::ceil(o_.min_window_s / sps)));",
     "  const int shortest = std::min(o_.max_window, std::max(fewest, static_cast<int>(std::ceil(o_.min_window_s / sps))));"),
    ("cheap-pair-cut", SEARCH + "search_trial.cpp",
     "constexpr double kCheapPair = 0.05;",
     "constexpr double kCheapPair = 0;"),
    ("final-arm-uncounted", SEARCH + "search_final.cpp",
     "  for (size_t i : unreserved_)\n",
     "  for (size_t i : std::set<size_t>{})\n"),
    ("plan-only-searches", SEARCH + "search.cpp",
     "    if (o_.plan_only) {  // the pass priced, nothing tried (TuneOptions::plan_only)\n",
     "    if (false) {\n"),
    ("plan-range-all-kept", SEARCH + "search_pass.cpp",
     "c + p.trial_s[p.fit_none_kept] + reserve(0) <= budget_.total();)",
     "c + p.trial_s[p.fit_none_kept] + reserve(p.fit_none_kept + 1) <= budget_.total();)"),
    ("compile-never-given-up", SEARCH + "search_trial.cpp",
     "compiles_now ? w_.now_s() + compile_deadline_s(reserve) : kNever",
     "kNever"),
    ("final-extras-none", SEARCH + "search_final_extra.cpp",
     "        candidates.push_back({d, c, 0});",
     "        (void)candidates;"),
    ("final-extras-kept-anyway", SEARCH + "search_final_extra.cpp",
     "if (row.accepted && (!best || row.estimate.ratio > t.res_.trials[rows[*best]].estimate.ratio)) best = i;",
     "if (!best) best = i;"),
    ("after-finals-none", SEARCH + "search_final_extra.cpp",
     "  if (left_slower_at_ || all_fresh() || current_ == baseline_) return;",
     "  return;"),
    ("after-finals-arms-only", SEARCH + "search_final_extra.cpp",
     "        todo.push_back({i, c, false});",
     "        (void)c;"),
    ("after-finals-unbudgeted", SEARCH + "search_final_extra.cpp",
     "    if (!budget_.may_extend(elapsed(), cost)) continue;",
     "    (void)cost;"),
    ("claim-every-knob", SEARCH + "search_summary.cpp",
     "if (s.reason.rfind(\"budget\", 0) == 0) (process_knob(s.knob) && !all_fresh() ? process_skips : budget_skips)++;",
     "(void)s;"),
]
for knob in ("batch_size", "amp", "channels_last", "cuda_graphs", "compile", "cudnn_benchmark", "workers",
             "pin_memory", "prefetch"):
    MUTATIONS.append(("never-" + knob, SEARCH + "search.cpp",
                      "  const auto& id = k.info.id;\n  auto skip = ",
                      "  const auto& id = k.info.id;\n  if (id == \"%s\") return false;\n  auto skip = " % knob))


def run(cmd, timeout):
    return subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)


def build(build_dir):
    r = run(["ninja", "-C", build_dir, "-j2", "tunebench_tuner_tests"], 3600)
    return r.returncode == 0, r.stdout[-3000:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--only", default="", help="comma-separated mutation names")
    ap.add_argument("--filter", default="Tuner*", help="the tests run against each mutation (gtest filter)")
    a = ap.parse_args()
    names = [m[0] for m in MUTATIONS]
    only = [n for n in a.only.split(",") if n]
    for n in only:
        if n not in names:
            sys.exit("mutate_search: no mutation '%s' (there are: %s)" % (n, ", ".join(names)))
    tests = os.path.join(ROOT, a.build, "tests", "engine", "tunebench_tuner_tests")
    holes = []
    print("%-20s %-9s %6s  %s" % ("mutation", "caught", "s", "by"))
    for name, rel, find, repl in MUTATIONS:
        if only and name not in only:
            continue
        path = os.path.join(ROOT, rel)
        src = open(path).read()
        if src.count(find) != 1:
            sys.exit("mutate_search: %s: the text to mutate is in %s %d times, not once: update this script"
                     % (name, rel, src.count(find)))
        t0 = time.time()
        try:
            open(path, "w").write(src.replace(find, repl))
            ok, log = build(a.build)
            if not ok:
                sys.exit("mutate_search: %s does not build:\n%s" % (name, log))
            r = run([tests, "--gtest_filter=" + a.filter], 3600)
        finally:
            open(path, "w").write(src)
        failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+?)(?: \(|$)", r.stdout, re.M)))
        caught = r.returncode != 0
        print("%-20s %-9s %6.0f  %s" % (name, "yes" if caught else "NO", time.time() - t0,
                                        ", ".join(failed) if failed else "(no test failed)"), flush=True)
        if not caught:
            holes.append(name)
    ok, log = build(a.build)
    if not ok:
        sys.exit("mutate_search: the restored sources do not build:\n" + log)
    if holes:
        print("not caught by any test: " + ", ".join(holes))
        return 1
    print("every mutation was caught")
    return 0


if __name__ == "__main__":
    sys.exit(main())
