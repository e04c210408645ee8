// tunebench-cli gate: did a change make training slower? (docs/ci.md)
//   gate --script train.py --baseline REV [--candidate REV] [options] [-- ARGS]
//        the script's repository at REV (and at the candidate REV, else the working tree as it is) in temporary
//        git worktrees; the user's working tree is never touched
//   gate --baseline-script A.py --candidate-script B.py [options] [-- ARGS]
//        two files; with a script, --set / --baseline-set / --candidate-set are the launcher's knobs (the same
//        script with and without a switch: --baseline-script T.py --candidate-script T.py --candidate-set amp=bf16)
//   gate --model M [--data D] [--set K=V,...] --baseline-set K=V --candidate-set K=V
//        the engine's own run (tunebench-cli run) with two settings
//   gate --script train.py [--baseline REV] --save-baseline B.json   /   gate --script train.py --against B.json
//        a stored baseline, for a machine where the baseline cannot run beside the candidate
// Exit: 0 pass (no change or improvement), 1 regression, 2 undecided, 3 could not run (a bad option or revision,
// a script that fails or hangs at either side: one line says which and why).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "client/inputs.h"
#include "commands.h"
#include "gate/git.h"
#include "gate/report.h"
#include "gate/runner.h"
#include "gate/stored.h"
#include "gate/why.h"

namespace tb::cli {
namespace {

constexpr const char* kUsage =
    "usage: tunebench-cli gate --script train.py --baseline REV [--candidate REV] [options] [-- ARGS]\n"
    "       tunebench-cli gate --baseline-script A.py --candidate-script B.py [options] [-- ARGS]\n"
    "       tunebench-cli gate --model M [--data D] [--set K=V,...] --baseline-set K=V --candidate-set K=V [options]\n"
    "  --set K=V,...  --baseline-set K=V,...  --candidate-set K=V,...\n"
    "                          a script's launcher knobs (workers, pin_memory, amp, compile, ...), both sides or one\n"
    "  --steps N               optimizer steps per process, its warm-up among them (100)\n"
    "  --max-time S            no pair starts that would end after S seconds (1200)\n"
    "  --tolerance T           a change under this share is 'no change' (0.03)\n"
    "  --confidence C          of the verdict (0.95)\n"
    "  --warmup-pairs N        pairs run first and not counted (1)\n"
    "  --first-step-timeout S  --step-timeout S   a process with no first step / no step for S s fails (180 / 300)\n"
    "  --python P              the interpreter (else $TUNEBENCH_PYTHON, else python3 with torch)\n"
    "  --why on|off            after a regression or improvement, trace one process of each side and say what\n"
    "                          changed (on)\n"
    "  --traces DIR            keep those traces as DIR/baseline.json, DIR/candidate.json\n"
    "  --json F  --markdown F  --junit F           the verdict for a CI (also '-' for stdout)\n"
    "  --save-baseline B.json [--runs N]   run the baseline (--baseline REV, else the working tree) N times (10)\n"
    "                          and store it, for a machine where it cannot run beside the candidate\n"
    "  --against B.json        compare the candidate with that stored baseline (not alternated: warns when the\n"
    "                          environment differs)\n"
    "exit: 0 pass (no change, improvement), 1 regression, 2 undecided, 3 could not run\n";

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

int could_not_run(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  return 3;
}

bool write_file(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fputs(text.c_str(), stdout);
    return true;
  }
  std::ofstream f(path, std::ios::binary);
  f << text;
  return bool(f);
}

// The command line, read.
struct GateArgs {
  gate::GateOptions o;
  std::string script, baseline_rev, candidate_rev, baseline_script, candidate_script, json_out, md_out, junit_out;
  std::string save_path, against_path;
  std::string model, data = "synthetic", common_set, baseline_set, candidate_set;  // the engine's runs
  int store_runs = 10;
  std::unique_ptr<gate::Checkout> base_tree, cand_tree;  // the revisions' worktrees, removed at the end
};

// Reads argv into `a`; an exit code when the command ends here (--help, a bad option).
std::optional<int> parse_gate_args(int argc, char** argv, GateArgs& a) {
  // The options whose value is kept as it is given.
  const std::pair<const char*, std::string*> text_options[] = {
      {"--script", &a.script}, {"--baseline", &a.baseline_rev}, {"--candidate", &a.candidate_rev},
      {"--baseline-script", &a.baseline_script}, {"--candidate-script", &a.candidate_script}, {"--json", &a.json_out},
      {"--markdown", &a.md_out}, {"--junit", &a.junit_out}, {"--python", &a.o.python}, {"--traces", &a.o.keep_traces},
      {"--model", &a.model}, {"--data", &a.data}, {"--set", &a.common_set}, {"--baseline-set", &a.baseline_set},
      {"--candidate-set", &a.candidate_set}, {"--save-baseline", &a.save_path}, {"--against", &a.against_path}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) a.o.args.push_back(argv[i]);
      break;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return could_not_run(arg + " needs a value (see tunebench-cli gate --help)");
    const std::string v = argv[++i];
    auto number = [&](double& out) {
      char* end = nullptr;
      out = std::strtod(v.c_str(), &end);
      return end && *end == '\0' && !v.empty();
    };
    const auto text = std::find_if(std::begin(text_options), std::end(text_options),
                                   [&](const auto& t) { return arg == t.first; });
    double x = 0;
    if (text != std::end(text_options)) *text->second = v;
    else if (arg == "--runs" && number(x) && x >= 3) a.store_runs = int(x);
    else if (arg == "--why" && (v == "on" || v == "off")) a.o.why = v == "on";
    else if (arg == "--steps") {
      const auto steps = client::inputs::parse_steps(v, client::inputs::kGateStepsMin);
      if (!steps) return could_not_run(steps.error().message);
      a.o.steps = *steps;
    }
    else if (arg == "--max-time" && number(x)) {
      const auto limit = client::inputs::gate_max_time(x);
      if (!limit) return could_not_run(limit.error().message);
      a.o.max_time_s = *limit;
    }
    else if (arg == "--tolerance" && number(x)) a.o.rule.tolerance = x;
    else if (arg == "--confidence" && number(x)) a.o.rule.confidence = x;
    else if (arg == "--warmup-pairs" && number(x) && x >= 0) a.o.warmup_pairs = int(x);
    else if (arg == "--first-step-timeout" && number(x) && x > 0) a.o.first_step_timeout_s = x;
    else if (arg == "--step-timeout" && number(x) && x > 0) a.o.step_timeout_s = x;
    else return could_not_run("bad option or value: " + arg + " " + v + " (see tunebench-cli gate --help)");
  }
  if (const Status valid = a.o.rule.validate(); !valid) return could_not_run(valid.error().message);
  return std::nullopt;
}

// The two sides: the engine with two settings, a script at two revisions (or a stored baseline), or two files;
// an exit code when they cannot be made.
std::optional<int> make_sides(GateArgs& a) {
  namespace fs = std::filesystem;
  if (!a.model.empty()) {
    // The engine: the same model and data, each side its knobs (what `run --set` takes).
    if (!a.script.empty() || !a.baseline_script.empty() || !a.candidate_script.empty())
      return could_not_run("--model (the engine) and a script do not mix");
    if (!a.save_path.empty() || !a.against_path.empty())
      return could_not_run("--save-baseline and --against go with --script train.py");
    if (a.baseline_set.empty() && a.candidate_set.empty())
      return could_not_run("--model needs --baseline-set K=V and/or --candidate-set K=V (what differs)");
    auto side = [&](const char* name, const std::string& set) {
      const std::string all = a.common_set.empty() ? set : set.empty() ? a.common_set : a.common_set + "," + set;
      gate::Side s{name, "", a.model + " on " + a.data + (all.empty() ? " (defaults)" : ", --set " + all),
                   {"--model", a.model, "--data", a.data}};
      if (!all.empty()) s.engine.insert(s.engine.end(), {"--set", all});
      return s;
    };
    a.o.baseline = side("baseline", a.baseline_set);
    a.o.candidate = side("candidate", a.candidate_set);
    if (!a.o.args.empty()) return could_not_run("arguments after -- are a script's: the engine takes --model and --data");
  } else if (!a.script.empty()) {
    if (!a.baseline_script.empty() || !a.candidate_script.empty())
      return could_not_run("--script (revisions) and --baseline-script/--candidate-script (files) do not mix");
    if (!a.save_path.empty() && !a.against_path.empty()) return could_not_run("--save-baseline and --against do not mix");
    if (!a.against_path.empty() && !a.baseline_rev.empty())
      return could_not_run("--against B.json is the baseline: no --baseline REV beside it");
    if (a.baseline_rev.empty() && a.save_path.empty() && a.against_path.empty())
      return could_not_run("--script needs --baseline REV (the revision to compare against) or --against B.json");
    auto where = gate::locate(a.script);
    if (!where) return could_not_run(where.error().message);
    auto checkout = [&](const std::string& rev, gate::Side& side, std::unique_ptr<gate::Checkout>& tree) -> std::string {
      auto commit = gate::resolve(where->root, rev);
      if (!commit) return commit.error().message;
      auto t = gate::Checkout::add(where->root, *commit);
      if (!t) return t.error().message;
      tree = std::move(*t);
      side.script = (fs::path(tree->dir()) / where->script_rel).string();
      side.describe = gate::named(*commit, rev);
      std::error_code ec;
      if (!fs::is_regular_file(side.script, ec)) return where->script_rel + " does not exist at " + side.describe;
      return "";
    };
    a.o.baseline.name = "baseline";
    a.o.candidate.name = "candidate";
    auto working_tree = [&](gate::Side& side) {
      side.script = fs::absolute(a.script).string();
      auto head = gate::resolve(where->root, "HEAD");
      side.describe = "the working tree (" + (head ? head->describe : std::string("no commit")) +
                      (where->dirty ? ", with uncommitted changes)" : ")");
    };
    if (!a.baseline_rev.empty()) {
      if (std::string e = checkout(a.baseline_rev, a.o.baseline, a.base_tree); !e.empty()) return could_not_run(e);
    } else {
      working_tree(a.o.baseline);  // --save-baseline of the tree as it is
    }
    if (!a.candidate_rev.empty()) {
      if (std::string e = checkout(a.candidate_rev, a.o.candidate, a.cand_tree); !e.empty()) return could_not_run(e);
    } else {
      working_tree(a.o.candidate);
    }
  } else {
    if (!a.save_path.empty() || !a.against_path.empty())
      return could_not_run("--save-baseline and --against go with --script train.py");
    if (a.baseline_script.empty() || a.candidate_script.empty())
      return could_not_run("give --script train.py --baseline REV, or --baseline-script A.py --candidate-script B.py");
    std::error_code ec;
    for (const auto* f : {&a.baseline_script, &a.candidate_script})
      if (!fs::is_regular_file(*f, ec)) return could_not_run("script not found: " + *f);
    a.o.baseline = {"baseline", fs::absolute(a.baseline_script).string(), a.baseline_script};
    a.o.candidate = {"candidate", fs::absolute(a.candidate_script).string(), a.candidate_script};
  }
  if (a.model.empty()) {
    // A script's launcher knobs: --set on both sides, --baseline-set / --candidate-set on one (the same script
    // with and without a switch, or each revision with the same one).
    for (auto [side, own] : {std::pair{&a.o.baseline, &a.baseline_set}, std::pair{&a.o.candidate, &a.candidate_set}}) {
      const std::string all = a.common_set.empty() ? *own : own->empty() ? a.common_set : a.common_set + "," + *own;
      if (all.empty()) continue;
      const auto items = client::inputs::parse_settings(all);
      if (!items) return could_not_run(items.error().message);
      side->set = *items;
      side->describe += ", --set " + all;
    }
  }

  return std::nullopt;
}

// Runs the gate (or stores the baseline) and writes its verdict.
int run_gate_and_report(GateArgs& a) {
  a.o.cancelled = [] { return g_signal != 0; };
  a.o.progress = [](const std::string& line) { std::fprintf(stderr, "gate: %s\n", line.c_str()); };
  if (!a.save_path.empty()) {  // the baseline's processes only, stored
    std::fprintf(stderr, "gate: storing %s: %d processes of %lld steps\n", a.o.baseline.describe.c_str(), a.store_runs,
                 static_cast<long long>(a.o.steps));
    const gate::GateResult r = gate::run_baseline_only(a.o, a.store_runs);
    if (!r.ran) return could_not_run(r.failure);
    if (!write_file(a.save_path, gate::stored_baseline_json(a.o, r).dump(2) + "\n"))
      return could_not_run("cannot write " + a.save_path);
    std::printf("gate: stored %s: %.1f %s over %d processes in %s\n", a.o.baseline.describe.c_str(), r.baseline_throughput,
                r.unit.c_str(), a.store_runs, a.save_path.c_str());
    return 0;
  }
  gate::StoredBaseline stored;
  if (!a.against_path.empty()) {
    auto b = gate::load_stored_baseline(a.against_path);
    if (!b) return could_not_run(b.error().message);
    stored = std::move(*b);
    a.o.baseline = {"baseline", "", stored.describe + " (stored " + stored.stored_at + " in " + a.against_path + ")"};
    a.o.why = false;  // the stored side cannot be traced again
  }
  std::fprintf(stderr, "gate: %s against %s, %lld steps a process, at most %.0f s\n", a.o.candidate.describe.c_str(),
               a.o.baseline.describe.c_str(), static_cast<long long>(a.o.steps), a.o.max_time_s);
  gate::GateResult r = a.against_path.empty() ? gate::run_gate(a.o) : gate::run_against(a.o, stored);
  if (!a.against_path.empty()) {
    r.against = true;
    r.stored_runs = int(stored.windows.size());
    for (auto& d : gate::environment_differences(stored.environment, gate::environment_of(r)))
      r.warnings.push_back("the environment differs from the stored baseline's: " + d);
    if (stored.args != a.o.args) r.warnings.push_back("the stored baseline ran other script arguments");
    if (stored.steps != a.o.steps)
      r.warnings.push_back("the stored baseline's processes ran " + std::to_string(stored.steps) + " steps, these " +
                           std::to_string(a.o.steps));
  }
  if (gate::wants_why(a.o, r)) {
    std::fprintf(stderr, "gate: why: one more process of each side, every step traced\n");
    r.why = gate::explain(a.o, r.look.interval.ratio, a.o.keep_traces);
  }
  std::fputs(gate::gate_text(a.o, r).c_str(), stdout);
  std::fflush(stdout);
  bool wrote = true;
  if (!a.json_out.empty()) wrote &= write_file(a.json_out, gate::gate_json(a.o, r).dump(2) + "\n");
  if (!a.md_out.empty()) wrote &= write_file(a.md_out, gate::gate_markdown(a.o, r));
  if (!a.junit_out.empty()) wrote &= write_file(a.junit_out, gate::gate_junit(a.o, r));
  if (!wrote) return could_not_run("cannot write an output file");
  if (!r.ran) std::fprintf(stderr, "tunebench-cli: error: %s\n", r.failure.c_str());
  return r.exit_code();
}

}  // namespace

int cmd_gate(int argc, char** argv) {
  GateArgs a;
  if (auto code = parse_gate_args(argc, argv, a)) return *code;
  // A CI cancelling the job (SIGTERM) or a Ctrl-C, from here on: the run stops at its next step, the worktrees
  // are removed (a signal during a checkout lands after it, and the checkout is removed too).
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  if (auto code = make_sides(a)) return *code;
  return run_gate_and_report(a);
}

}  // namespace tb::cli
