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
}  // namespace

int cmd_run(int argc, char** argv) {
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i)
    if (std::string(argv[i]) == "--script") return cmd_run_script(argc, argv);
  engine::SessionOptions opts;
  opts.model.clear();
  opts.data.clear();
  int64_t steps = 20, measured_steps = 0, ranks = 0, dist_timeout = 0;
  std::string trace_path, json_path;
  for (int i = 1; i < argc; ++i) {
    bool matched = false;
    if (const Status s = parse_session_option(argc, argv, i, opts, matched); !s) return usage_error(s.error().message);
    if (matched) continue;
    const std::string a = argv[i];
    if (a == "--steps") {
      if (i + 1 >= argc || !parse_int(argv[++i], steps, 1)) return usage_error("--steps needs a positive integer");
    } else if (a == "--measured-steps") {
      if (i + 1 >= argc || !parse_int(argv[++i], measured_steps, 1))
        return usage_error("--measured-steps needs a positive integer");
    } else if (a == "--trace") {
      if (i + 1 >= argc) return usage_error("--trace needs a file path");
      trace_path = argv[++i];
    } else if (a == "--json") {
      if (i + 1 >= argc) return usage_error("--json needs a file path");
      json_path = argv[++i];
    } else if (a == "--ranks") {
      if (i + 1 >= argc || !parse_int(argv[++i], ranks, 1) || ranks > 64)
        return usage_error("--ranks needs an integer from 1 to 64");
    } else if (a == "--dist-timeout") {
      if (i + 1 >= argc || !parse_int(argv[++i], dist_timeout, 1))
        return usage_error("--dist-timeout needs a positive number of seconds");
    } else {
      return usage_error("unknown option '" + a + "' (see tunebench-cli --help)");
    }
  }
  if (opts.model.empty()) return usage_error("--model is required (mnist_cnn, resnet18, resnet50, vit_tiny, torchscript:PATH)");
  if (opts.data.empty()) return usage_error("--data is required (synthetic, imagefolder:DIR, mnist:DIR)");
  // `--set ranks=N` is --ranks N: the tuner's fresh-process trials and a report's settings say it that way.
  {
    const auto group = resolve_group(opts, ranks);
    if (!group) return usage_error(group.error().message);
    ranks = group->ranks;
    const std::optional<engine::DistOptions>& env = group->env;
    if (!env && ranks > 1) return launch_ranks(argc, argv, int(ranks), int(dist_timeout > 0 ? dist_timeout : 60), json_path);
    if (env && env->enabled()) join_group(opts, *env, dist_timeout);
  }
  const int rank = opts.dist.rank;
  const bool distributed = opts.dist.enabled();
  // Test hook (tests/cli): TUNEBENCH_TEST_KILL_RANK=R:S makes rank R kill itself (SIGKILL) before step S, a
  // rank that dies without a word, as after the OOM killer.
  int64_t kill_step = -1;
  if (const char* k = std::getenv("TUNEBENCH_TEST_KILL_RANK"); k && distributed) {
    int kr = -1;
    long long ks = -1;
    if (std::sscanf(k, "%d:%lld", &kr, &ks) == 2 && kr == rank) kill_step = ks;
  }
  opts.profile = !trace_path.empty();
  if (opts.profile) {
    prof::set_thread_name("train");
    if (std::string why = start_recording(trains_on_cuda(opts.device)); !why.empty())
      std::fprintf(stderr, "tunebench-cli: warning: %s\n", why.c_str());
  }

  std::unique_ptr<engine::Session> session;
  // --steps N is N steps in all: warm-up until stable may take at most half of them (as run --script).
  if (measured_steps == 0 && steps > 0)
    opts.max_warmup_steps = std::min(opts.max_warmup_steps, std::max(opts.warmup_steps, static_cast<int>(steps / 2)));
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
  const nlohmann::json desc0 = session->describe();
  if (measured_steps > 0) steps = measured_steps + opts.warmup_steps;
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
                 desc0["device"].value("kind", "cpu").c_str(), measured_steps > 0 ? "measuring" : "",
                 static_cast<long long>(measured_steps > 0 ? measured_steps : steps), warm_text.c_str(),
                 engine::active_cpu_allocator().c_str(), group.c_str());

  const bool tty = isatty(STDERR_FILENO);
  std::vector<engine::StepRecord> records;
  auto last_print = std::chrono::steady_clock::now();
  std::string failure;
  measure::LoadProbe load;
  measure::TreeCpuProbe own;  // the process's CPU over the steps: the loader verdict's training CPU and cores
  // The measured part is one window, device-synced at both ends (on a CPU the syncs cost nothing).
  int64_t measured = 0, window_samples = 0;
  int warmup_seen = 0;
  double window_start = -1, window_end = -1;
  int64_t window_faults = 0;
  auto clock_s = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  const int64_t cap = measured_steps > 0 ? measured_steps + std::max(opts.max_warmup_steps, opts.warmup_steps) + 1 : steps;
  for (int64_t i = 0; i < cap; ++i) {
    if (measured_steps > 0 && measured >= measured_steps) break;
    if (i == kill_step) ::raise(SIGKILL);
    if (window_start < 0 && !session->warming_up()) {
      session->synchronize();
      window_start = clock_s();
    }
    try {
      records.push_back(session->step());
    } catch (const engine::EngineError& e) {
      failure = e.what();
      break;
    }
    const auto& r = records.back();
    if (r.warmup) ++warmup_seen;
    else {
      ++measured;
      window_samples += r.samples;
      window_faults += r.minor_faults;
    }
    print_warnings(*session, warnings);
    auto now = std::chrono::steady_clock::now();
    const bool last = measured_steps > 0 ? measured >= measured_steps : i + 1 == steps;
    if (rank == 0 && (now - last_print > std::chrono::milliseconds(tty ? 250 : 5000) || last)) {
      last_print = now;
      auto tp = throughput_json(records);
      std::fprintf(stderr, "%sstep %lld/%lld  %.1f samples/s  loss %s%s", tty ? "\r" : "",
                   static_cast<long long>(i + 1), static_cast<long long>(measured_steps > 0 ? cap : steps),
                   tp["samples_per_s"].get<double>(), std::isfinite(r.loss) ? std::to_string(r.loss).c_str() : "-",
                   tty ? "   " : "\n");
    }
  }
  if (window_start >= 0) {
    session->synchronize();
    window_end = clock_s();
  }
  if (tty) std::fputc('\n', stderr);
  if (opts.profile) prof::Recorder::instance().stop();

  // Every rank of a traced group, together: a rank on another host's clock measures its offset again, and its
  // trace moves by the offset of the time of each event (the first one at the start, this one at the end).
  if (distributed && !trace_path.empty()) session->resync_clock();
  nlohmann::json desc = session->describe();
  // The trace says where the measured steps begin (the first step after the leading warm-up): its analysis
  // then describes the steps the throughput was measured on.
  for (const auto& r : records)
    if (!r.warmup) {
      if (r.index > 0 && warmup_seen > 0) desc["first_measured_step"] = r.index;
      break;
    }
  const measure::SystemLoad during = load.stop();
  nlohmann::json out = engine::run_document(*session, desc, records, during);
  out["warmup"]["steps"] = warmup_seen;
  // A traced run says why its loader is slow, as a script's does (its trace carries it for `analyze` and the GUI).
  const client::LoaderVerdict loader =
      trace_path.empty() || distributed ? client::LoaderVerdict{} : engine_loader_verdict(desc, records, during, own);
  if (loader.valid) out["loader"] = loader.to_json();
  if (window_start >= 0 && measured > 0) {
    // The measured steps as one window timed from the outside (synced): what the tuner's fresh-process
    // trials read.
    out["window"] = {{"steps", measured},
                     {"samples", window_samples},
                     {"wall_s", window_end - window_start},
                     {"warmup_steps", warmup_seen},
                     {"minor_faults", window_faults},
                     {"samples_per_s", window_samples / std::max(1e-12, window_end - window_start)}};
  }
  out["warmup_steps"] = opts.warmup_steps;
  out["seed"] = opts.seed;
  if (distributed) {
    out["distributed"] = desc["distributed"];
    out["rank"] = rank;
    out["pid"] = static_cast<int64_t>(::getpid());  // its process in the merged trace
    out["parameter_digest"] = session->parameter_digest();
  }
  out["warnings"] = warnings;
  if (!failure.empty()) out["error"] = failure;

  if (distributed) {
    // Every rank's document (and trace) meets on rank 0 (engine/rank_group.h).
    auto gathered = engine::gather_run(*session, rank, out, !trace_path.empty(), desc);
    print_warnings(*session, warnings);
    if (rank != 0) {
      if (!failure.empty()) std::fprintf(stderr, "tunebench-cli: error: %s\n", failure.c_str());
      return failure.empty() ? 0 : 1;
    }
    out = std::move(gathered.doc);
    auto& traces = gathered.traces;
    if (out.contains("error") && failure.empty()) failure = out["error"].get<std::string>();
    const size_t traced = traces.size();
    if (!trace_path.empty() && traced > 0) {
      auto merged = prof::merge_rank_traces(std::move(traces));
      auto st = prof::write_chrome_trace(*merged, trace_path);
      if (!st.ok()) {
        std::fprintf(stderr, "tunebench-cli: error: cannot write trace '%s': %s\n", trace_path.c_str(),
                     st.error().to_string().c_str());
        return 1;
      }
      out["trace"] = trace_path;
      std::fprintf(stderr, "run: trace of %zu ranks written to %s\n", traced, trace_path.c_str());
      // A rank records only when its own command has --trace: under torchrun each node's command is its own.
      if (traced < gathered.ranks) {
        const std::string w = "the trace holds " + std::to_string(traced) + " of the " + std::to_string(gathered.ranks) +
                              " ranks: a rank records only with --trace in its own command (start every node with "
                              "the same one)";
        std::fprintf(stderr, "run: %s\n", w.c_str());
        out["warnings"].push_back(w);
      }
    }
  } else if (!trace_path.empty()) {
    session->synchronize();  // the device's queued work belongs in this trace (the collector flushes after it)
    std::map<std::string, std::string> documents;
    if (loader.valid) documents["loader"] = loader.to_json().dump();
    std::string err = write_recorded_trace(trace_path, desc, documents);
    if (!err.empty()) {
      std::fprintf(stderr, "tunebench-cli: error: cannot write trace '%s': %s\n", trace_path.c_str(), err.c_str());
      return 1;
    }
    out["trace"] = trace_path;
    std::fprintf(stderr, "run: trace written to %s\n", trace_path.c_str());
  }
  if (!json_path.empty() && !write_json_file(json_path, out)) return 1;
  const auto& tp = out["throughput"];
  std::printf("%s %s: %.1f samples/s%s over %zu measured steps after %d warm-up; %s; %.0f page faults/step\n",
              out["model"].get<std::string>().c_str(), out["data"].get<std::string>().c_str(),
              tp["samples_per_s"].get<double>(),
              distributed ? (" (" + std::to_string(opts.dist.world_size) + " ranks)").c_str() : "",
              tp["measured_steps"].get<size_t>(), warmup_seen,
              tp["noise"]["text"].get<std::string>().c_str(), tp["page_faults_per_step"].get<double>());
  double step_ms = 0, n = 0;
  for (const auto& r : records)
    if (!r.warmup) step_ms += r.wall_ns / 1e6, ++n;
  if (const std::string mem = engine::memory_summary_text(out.value("memory", nlohmann::json())); !mem.empty())
    std::printf("%s\n", mem.c_str());
  for (const auto& l : loader.lines()) std::printf("%s\n", l.c_str());
  const std::string hint = engine::page_fault_hint(tp["page_faults_per_step"].get<double>(), step_ms / std::max(1.0, n));
  if (!hint.empty()) std::fprintf(stderr, "tunebench-cli: hint: %s\n", hint.c_str());
  if (!failure.empty()) {
    std::fprintf(stderr, "tunebench-cli: error: %s\n", failure.c_str());
    return 1;
  }
  return 0;
}

}  // namespace tb::cli
