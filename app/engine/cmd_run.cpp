// tunebench-cli run --model M --data D [--set k=v,...] [--steps N | --measured-steps N] [--warmup N] [--seed S]
//                   [--trace T.json] [--json OUT.json] [--device D] [--input C,H,W] [--classes K] [--drift-steps N]
//                   [--ranks N] [--dist-timeout S]
// Trains for N steps (or until N steps were measured after the warm-up) and reports an honest throughput:
// samples over wall time of the measured steps, including loading, warm-up excluded, with a noise verdict.
// Data parallel (docs/distributed.md): --ranks N starts N ranks (run_ranks.cpp); a process started by torchrun
// (WORLD_SIZE etc. set) is one rank. Rank 0 collects every rank's results and trace and writes them.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "client/inputs.h"
#include "commands.h"
#include "engine/cpu_allocator.h"
#include "engine/distributed.h"
#include "engine_cli_common.h"
#include "engine_loader.h"
#include "profiler/ranks.h"
#include "run_ranks.h"

namespace tb::cli {
namespace {
int usage_error(const std::string& msg) {
  std::fprintf(stderr, "tunebench-cli: error: run: %s\n", msg.c_str());
  return 2;
}
void print_warnings(engine::Session& s, nlohmann::json& all) {
  for (auto& w : s.take_warnings()) {
    std::fprintf(stderr, "tunebench-cli: warning: %s\n", w.c_str());
    all.push_back(w);
  }
}

// What run was asked for.
struct RunArgs {
  engine::SessionOptions opts;
  int64_t steps = 20, measured_steps = 0, ranks = 0, dist_timeout = 0;
  std::string trace_path, json_path;
};

// argv of run (argv[0] "run"): the options, or the one line.
Result<RunArgs> parse_args(int argc, char** argv) {
  RunArgs r;
  r.opts.model.clear();
  r.opts.data.clear();
  for (int i = 1; i < argc; ++i) {
    bool matched = false;
    if (const Status s = parse_session_option(argc, argv, i, r.opts, matched); !s) return s.error();
    if (matched) continue;
    const std::string a = argv[i];
    auto value = [&](std::string& out) { return next_arg(argc, argv, i, out); };
    std::string v;
    if (a == "--steps") {
      value(v);  // none: parse_steps("") says the range alone
      const auto n = client::inputs::parse_steps(v, client::inputs::kRunStepsMin);
      if (!n) return n.error();
      r.steps = *n;
    } else if (a == "--measured-steps") {
      if (!value(v) || !parse_int(v, r.measured_steps, 1)) return Error{"--measured-steps needs a positive integer"};
    } else if (a == "--trace") {
      if (!value(r.trace_path)) return Error{"--trace needs a file path"};
    } else if (a == "--json") {
      if (!value(r.json_path)) return Error{"--json needs a file path"};
    } else if (a == "--ranks") {
      if (!value(v) || !parse_int(v, r.ranks, 1) || r.ranks > 64) return Error{"--ranks needs an integer from 1 to 64"};
    } else if (a == "--dist-timeout") {
      if (!value(v) || !parse_int(v, r.dist_timeout, 1)) return Error{"--dist-timeout needs a positive number of seconds"};
    } else {
      return Error{"unknown option '" + a + "' (see tunebench-cli --help)"};
    }
  }
  if (r.opts.model.empty()) return Error{"--model is required (mnist_cnn, resnet18, resnet50, vit_tiny, torchscript:PATH)"};
  if (r.opts.data.empty()) return Error{"--data is required (synthetic, imagefolder:DIR, mnist:DIR)"};
  return r;
}

// Test hook (tests/cli): TUNEBENCH_TEST_KILL_RANK=R:S makes rank R kill itself (SIGKILL) before step S, a
// rank that dies without a word, as after the OOM killer. -1: none.
int64_t test_kill_step(int rank, bool distributed) {
  int64_t kill_step = -1;
  if (const char* k = std::getenv("TUNEBENCH_TEST_KILL_RANK"); k && distributed) {
    int kr = -1;
    long long ks = -1;
    if (std::sscanf(k, "%d:%lld", &kr, &ks) == 2 && kr == rank) kill_step = ks;
  }
  return kill_step;
}

// The run's first line: what trains where, how long, its warm-up and allocator (rank 0 of a group says it).
void print_start(engine::Session& session, const RunArgs& args, int rank) {
  const engine::SessionOptions& opts = args.opts;
  const bool distributed = opts.dist.enabled();
  const nlohmann::json desc0 = session.describe();
  const std::string warm_text =
      distributed ? std::to_string(opts.warmup_steps) + " steps on every rank"
                  : "at least " + std::to_string(opts.warmup_steps) + ", until stable, at most " +
                        std::to_string(std::max(opts.max_warmup_steps, opts.warmup_steps));
  const std::string group =
      distributed ? ", rank 0 of " + std::to_string(opts.dist.world_size) + " (" +
                        (desc0.contains("distributed") ? desc0["distributed"].value("backend", "?") : "?") + ")"
                  : "";
  if (rank == 0)
    std::fprintf(stderr, "run: %s on %s, %s, %s %lld steps (warm-up: %s), allocator %s%s\n",
                 desc0["model"].get<std::string>().c_str(), desc0["data"].get<std::string>().c_str(),
                 desc0["device"].value("kind", "cpu").c_str(), args.measured_steps > 0 ? "measuring" : "",
                 static_cast<long long>(args.measured_steps > 0 ? args.measured_steps : args.steps), warm_text.c_str(),
                 engine::active_cpu_allocator().c_str(), group.c_str());
}

// What the steps gave: their records, and the measured part as one window, device-synced at both ends (on a CPU
// the syncs cost nothing).
struct Trained {
  std::vector<engine::StepRecord> records;
  std::string failure;  // the engine's error that ended the steps, or ""
  int64_t measured = 0, window_samples = 0, window_faults = 0;
  int warmup_seen = 0;
  double window_start = -1, window_end = -1;
};

// The steps: --steps N in all, or until --measured-steps N were measured after the warm-up; progress on stderr.
Trained train(engine::Session& session, const RunArgs& args, int rank, int64_t kill_step, nlohmann::json& warnings) {
  const engine::SessionOptions& opts = args.opts;
  const bool tty = isatty(STDERR_FILENO);
  Trained t;
  auto last_print = std::chrono::steady_clock::now();
  auto clock_s = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  const int64_t measure = args.measured_steps;
  const int64_t cap = measure > 0 ? measure + std::max(opts.max_warmup_steps, opts.warmup_steps) + 1 : args.steps;
  for (int64_t i = 0; i < cap; ++i) {
    if (measure > 0 && t.measured >= measure) break;
    if (i == kill_step) ::raise(SIGKILL);
    if (t.window_start < 0 && !session.warming_up()) {
      session.synchronize();
      t.window_start = clock_s();
    }
    try {
      t.records.push_back(session.step());
    } catch (const engine::EngineError& e) {
      t.failure = e.what();
      break;
    }
    const auto& r = t.records.back();
    if (r.warmup) ++t.warmup_seen;
    else {
      ++t.measured;
      t.window_samples += r.samples;
      t.window_faults += r.minor_faults;
    }
    print_warnings(session, warnings);
    auto now = std::chrono::steady_clock::now();
    const bool last = measure > 0 ? t.measured >= measure : i + 1 == args.steps;
    if (rank == 0 && (now - last_print > std::chrono::milliseconds(tty ? 250 : 5000) || last)) {
      last_print = now;
      auto tp = throughput_json(t.records);
      std::fprintf(stderr, "%sstep %lld/%lld  %.1f samples/s  loss %s%s", tty ? "\r" : "",
                   static_cast<long long>(i + 1), static_cast<long long>(measure > 0 ? cap : args.steps),
                   tp["samples_per_s"].get<double>(), std::isfinite(r.loss) ? std::to_string(r.loss).c_str() : "-",
                   tty ? "   " : "\n");
    }
  }
  if (t.window_start >= 0) {
    session.synchronize();
    t.window_end = clock_s();
  }
  if (tty) std::fputc('\n', stderr);
  return t;
}

// The session's description, saying where the measured steps begin (the first step after the leading warm-up):
// the trace's analysis then describes the steps the throughput was measured on.
nlohmann::json describe_measured(engine::Session& session, const Trained& t) {
  nlohmann::json desc = session.describe();
  for (const auto& r : t.records)
    if (!r.warmup) {
      if (r.index > 0 && t.warmup_seen > 0) desc["first_measured_step"] = r.index;
      break;
    }
  return desc;
}

// The run's JSON document: the engine's (engine/run_json.h) with the warm-up, the window, the group's fields,
// the warnings and the error.
nlohmann::json document(engine::Session& session, const RunArgs& args, const Trained& t, const nlohmann::json& desc,
                        const measure::SystemLoad& during, const client::LoaderVerdict& loader,
                        const nlohmann::json& warnings) {
  const engine::SessionOptions& opts = args.opts;
  nlohmann::json out = engine::run_document(session, desc, t.records, during);
  out["warmup"]["steps"] = t.warmup_seen;
  if (loader.valid) out["loader"] = loader.to_json();
  if (t.window_start >= 0 && t.measured > 0) {
    // The measured steps as one window timed from the outside (synced): what the tuner's fresh-process
    // trials read.
    out["window"] = {{"steps", t.measured},
                     {"samples", t.window_samples},
                     {"wall_s", t.window_end - t.window_start},
                     {"warmup_steps", t.warmup_seen},
                     {"minor_faults", t.window_faults},
                     {"samples_per_s", t.window_samples / std::max(1e-12, t.window_end - t.window_start)}};
  }
  out["warmup_steps"] = opts.warmup_steps;
  out["seed"] = opts.seed;
  if (opts.dist.enabled()) {
    out["distributed"] = desc.value("distributed", nlohmann::json());
    out["rank"] = opts.dist.rank;
    out["pid"] = static_cast<int64_t>(::getpid());  // its process in the merged trace
    out["parameter_digest"] = session.parameter_digest();
  }
  out["warnings"] = warnings;
  if (!t.failure.empty()) out["error"] = t.failure;
  return out;
}

// Rank 0 of a group: every rank's trace merged into one file at `path` (when any rank recorded), said in `out`;
// Ok, or why it could not be written.
Status write_group_trace(engine::GatheredRun& gathered, const std::string& path, nlohmann::json& out) {
  const size_t traced = gathered.traces.size();
  if (path.empty() || traced == 0) return Status::Ok();
  auto merged = prof::merge_rank_traces(std::move(gathered.traces));
  if (auto st = prof::write_chrome_trace(*merged, path); !st.ok()) return Error{st.error().to_string()};
  out["trace"] = path;
  std::fprintf(stderr, "run: trace of %zu ranks written to %s\n", traced, path.c_str());
  // A rank records only when its own command has --trace: under torchrun each node's command is its own.
  if (traced < gathered.ranks) {
    const std::string w = "the trace holds " + std::to_string(traced) + " of the " + std::to_string(gathered.ranks) +
                          " ranks: a rank records only with --trace in its own command (start every node with "
                          "the same one)";
    std::fprintf(stderr, "run: %s\n", w.c_str());
    out["warnings"].push_back(w);
  }
  return Status::Ok();
}

// A single process's trace at `path`, carrying the loader's verdict, said in `out`; Ok, or why it could not be written.
Status write_trace(engine::Session& session, const std::string& path, const nlohmann::json& desc,
                   const client::LoaderVerdict& loader, nlohmann::json& out) {
  session.synchronize();  // the device's queued work belongs in this trace (the collector flushes after it)
  std::map<std::string, std::string> documents;
  if (loader.valid) documents["loader"] = loader.to_json().dump();
  if (std::string err = write_recorded_trace(path, desc, documents); !err.empty()) return Error{err};
  out["trace"] = path;
  std::fprintf(stderr, "run: trace written to %s\n", path.c_str());
  return Status::Ok();
}

// The run's line on stdout (throughput, noise, page faults), its memory and loader lines, and a page-fault hint.
void print_result(const nlohmann::json& out, const Trained& t, const client::LoaderVerdict& loader, int world_size) {
  const auto& tp = out["throughput"];
  std::printf("%s %s: %.1f samples/s%s over %zu measured steps after %d warm-up; %s; %.0f page faults/step\n",
              out["model"].get<std::string>().c_str(), out["data"].get<std::string>().c_str(),
              tp["samples_per_s"].get<double>(), world_size > 0 ? (" (" + std::to_string(world_size) + " ranks)").c_str() : "",
              tp["measured_steps"].get<size_t>(), t.warmup_seen, tp["noise"]["text"].get<std::string>().c_str(),
              tp["page_faults_per_step"].get<double>());
  double step_ms = 0, n = 0;
  for (const auto& r : t.records)
    if (!r.warmup) step_ms += r.wall_ns / 1e6, ++n;
  if (const std::string mem = engine::memory_summary_text(out.value("memory", nlohmann::json())); !mem.empty())
    std::printf("%s\n", mem.c_str());
  for (const auto& l : loader.lines()) std::printf("%s\n", l.c_str());
  const std::string hint = engine::page_fault_hint(tp["page_faults_per_step"].get<double>(), step_ms / std::max(1.0, n));
  if (!hint.empty()) std::fprintf(stderr, "tunebench-cli: hint: %s\n", hint.c_str());
}

int trace_error(const std::string& path, const Error& e) {
  std::fprintf(stderr, "tunebench-cli: error: cannot write trace '%s': %s\n", path.c_str(), e.message.c_str());
  return 1;
}
}  // namespace

int cmd_run(int argc, char** argv) {
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i)
    if (std::string(argv[i]) == "--script") return cmd_run_script(argc, argv);
  auto parsed = parse_args(argc, argv);
  if (!parsed) return usage_error(parsed.error().message);
  RunArgs& args = *parsed;
  engine::SessionOptions& opts = args.opts;
  // `--set ranks=N` is --ranks N: the tuner's fresh-process trials and a report's settings say it that way.
  {
    const auto group = resolve_group(opts, args.ranks);
    if (!group) return usage_error(group.error().message);
    args.ranks = group->ranks;
    const std::optional<engine::DistOptions>& env = group->env;
    const int timeout = int(args.dist_timeout > 0 ? args.dist_timeout : 60);
    if (!env && args.ranks > 1) return launch_ranks(argc, argv, int(args.ranks), timeout, args.json_path);
    if (env && env->enabled()) join_group(opts, *env, args.dist_timeout);
  }
  const int rank = opts.dist.rank;
  const bool distributed = opts.dist.enabled();
  const int64_t kill_step = test_kill_step(rank, distributed);
  opts.profile = !args.trace_path.empty();
  if (opts.profile) {
    prof::set_thread_name("train");
    if (std::string why = start_recording(trains_on_cuda(opts.device)); !why.empty())
      std::fprintf(stderr, "tunebench-cli: warning: %s\n", why.c_str());
  }
  // --steps N is N steps in all: warm-up until stable may take at most half of them (as run --script).
  if (args.measured_steps == 0 && args.steps > 0)
    opts.max_warmup_steps = std::min(opts.max_warmup_steps, std::max(opts.warmup_steps, static_cast<int>(args.steps / 2)));
  std::unique_ptr<engine::Session> session;
  try {
    session = engine::Session::create(opts);
  } catch (const engine::EngineError& e) {
    std::fprintf(stderr, "tunebench-cli: error: %s\n", e.what());
    // Rank 0 could not listen on the rendezvous port: the launcher (run --ranks) tries another.
    if (distributed && rank == 0 && port_in_use_error(e.what())) return kExitPortInUse;
    return 2;
  }
  nlohmann::json warnings = nlohmann::json::array();
  print_warnings(*session, warnings);
  print_start(*session, args, rank);

  measure::LoadProbe load;
  measure::TreeCpuProbe own;  // the process's CPU over the steps: the loader verdict's training CPU and cores
  const Trained t = train(*session, args, rank, kill_step, warnings);
  if (opts.profile) prof::Recorder::instance().stop();
  // Every rank of a traced group, together: a rank on another host's clock measures its offset again, and its
  // trace moves by the offset of the time of each event (the first one at the start, this one at the end).
  if (distributed && !args.trace_path.empty()) session->resync_clock();
  const nlohmann::json desc = describe_measured(*session, t);
  const measure::SystemLoad during = load.stop();
  // A traced run says why its loader is slow, as a script's does (its trace carries it for `analyze` and the GUI).
  const client::LoaderVerdict loader = args.trace_path.empty() || distributed
                                           ? client::LoaderVerdict{}
                                           : engine_loader_verdict(desc, t.records, during, own);
  nlohmann::json out = document(*session, args, t, desc, during, loader, warnings);
  std::string failure = t.failure;
  if (distributed) {
    // Every rank's document (and trace) meets on rank 0 (engine/rank_group.h).
    auto gathered = engine::gather_run(*session, rank, out, !args.trace_path.empty(), desc);
    print_warnings(*session, warnings);
    if (rank != 0) {
      if (!failure.empty()) std::fprintf(stderr, "tunebench-cli: error: %s\n", failure.c_str());
      return failure.empty() ? 0 : 1;
    }
    out = std::move(gathered.doc);
    if (out.contains("error") && failure.empty()) failure = out["error"].get<std::string>();
    if (Status st = write_group_trace(gathered, args.trace_path, out); !st) return trace_error(args.trace_path, st.error());
  } else if (!args.trace_path.empty()) {
    if (Status st = write_trace(*session, args.trace_path, desc, loader, out); !st)
      return trace_error(args.trace_path, st.error());
  }
  if (!args.json_path.empty() && !write_json_file(args.json_path, out)) return 1;
  print_result(out, t, loader, distributed ? opts.dist.world_size : 0);
  if (!failure.empty()) {
    std::fprintf(stderr, "tunebench-cli: error: %s\n", failure.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tb::cli
