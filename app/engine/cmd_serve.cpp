// tunebench-cli serve [--model M] [--data D] [--set k=v,...] [--steps N] [--trace-dir DIR] [--trace-every N]
//                     [--inline-files]   (trace chunks and reports travel in the stream: a remote GUI)
//                     [--ranks N [--dist-timeout S]]   (a live data-parallel group: engine/live_group.h)
// The run protocol of docs/protocol.md on stdin/stdout (JSON lines, "v": 1). stdout carries only protocol
// lines; logs go to stderr.
//
// Threads: the main thread trains and applies parent messages at step boundaries; a reader thread parses
// stdin into a queue. `stop` must be answered within 2 s even when one step takes longer (a ResNet-50 step
// on a CPU does): the reader arms a watchdog that sends `done` itself and exits if the main thread has not
// finished its step by then.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "client/protocol.h"
#include "commands.h"
#include "engine_cli_common.h"
#include "engine/live_tune.h"
#include "engine/report.h"
#include "engine/distributed.h"
#include "engine/tuner.h"
#include "run_ranks.h"
#include "engine/live_group.h"

namespace tb::cli {
namespace {

using client::protocol::Channel;
using client::protocol::Inbox;
using client::protocol::value_text;

// Summary of the run so far, readable by the watchdog.
struct Progress {
  std::mutex mu;
  std::vector<engine::StepRecord> records;
  nlohmann::json summary(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu);
    auto tp = throughput_json(records);
    return {{"steps", records.size()}, {"throughput_median", tp["median"]}, {"unit", "samples/s"}, {"reason", reason}};
  }
};

}  // namespace

int cmd_serve(int argc, char** argv) {
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i)
    if (std::string(argv[i]) == "--script") return cmd_serve_script(argc, argv);
  engine::SessionOptions opts;
  opts.model.clear();
  opts.data = "synthetic";
  int64_t steps = 0, trace_every = 50, ranks = 0, dist_timeout = 0;
  std::string trace_dir, report_dir;
  bool inline_files = false;
  for (int i = 1; i < argc; ++i) {
    bool matched = false;
    std::string err = parse_session_option(argc, argv, i, opts, matched);
    if (!err.empty()) {
      std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", err.c_str());
      return 2;
    }
    if (matched) continue;
    const std::string a = argv[i];
    if (a == "--steps") {
      if (i + 1 >= argc || !parse_int(argv[++i], steps)) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --steps needs a non-negative integer\n");
        return 2;
      }
    } else if (a == "--trace-dir" && i + 1 < argc) {
      trace_dir = argv[++i];
    } else if (a == "--report-dir" && i + 1 < argc) {
      report_dir = argv[++i];
    } else if (a == "--inline-files") {
      inline_files = true;
    } else if (a == "--ranks") {
      if (i + 1 >= argc || !parse_int(argv[++i], ranks, 1) || ranks > 64) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --ranks needs an integer from 1 to 64\n");
        return 2;
      }
    } else if (a == "--dist-timeout") {
      if (i + 1 >= argc || !parse_int(argv[++i], dist_timeout, 1)) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --dist-timeout needs a positive number of seconds\n");
        return 2;
      }
    } else if (a == "--trace-every") {
      if (i + 1 >= argc || !parse_int(argv[++i], trace_every, 1)) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --trace-every needs a positive integer\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "tunebench-cli: error: serve: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  // A live group: `--ranks N` or `--set ranks=N` (what the GUI's panel sends) starts N ranks of this command;
  // each of them is one rank (torchrun's variables); rank 0 goes on below, the others follow it.
  {
    std::optional<engine::DistOptions> env;
    std::string err = resolve_group(opts, ranks, env);
    if (err.empty() && (ranks > 1 || (env && env->enabled())) && opts.model.empty())
      err = "a data-parallel group needs --model (and --data) on the command line: every rank starts with them";
    if (!err.empty()) {
      std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", err.c_str());
      return 2;
    }
    if (!env && ranks > 1) return launch_led_group(argc, argv, "serve", int(ranks), int(dist_timeout > 0 ? dist_timeout : 60));
    if (env && env->enabled()) {
      join_group(opts, *env, dist_timeout);
      if (env->rank != 0) return engine::serve_follower(opts);
    }
  }
  const bool group = opts.dist.enabled();
  if (!trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(trace_dir, ec);
    if (ec) {
      std::fprintf(stderr, "tunebench-cli: error: serve: cannot create --trace-dir '%s': %s\n", trace_dir.c_str(),
                   ec.message().c_str());
      return 2;
    }
  }

  static Channel out;  // static: the watchdog may use it while main unwinds
  out.inline_files = inline_files;
  static Inbox inbox;
  static Progress progress;

  // Rank 0 of a group joins it before it says hello: when its rendezvous port was taken in the meantime the
  // launcher starts the group again on another, and the parent must not have heard a first hello.
  std::unique_ptr<engine::Session> session;
  engine::GroupLeader* leader = nullptr;  // `session` itself in a group
  std::string group_error;
  if (group) {
    try {
      auto owned = std::make_unique<engine::GroupLeader>(engine::Session::create(opts));
      leader = owned.get();
      session = std::move(owned);
    } catch (const engine::EngineError& e) {
      if (port_in_use_error(e.what())) return kExitPortInUse;
      group_error = e.what();
    }
  }

  // hello
  {
    nlohmann::json env = engine::environment_info();
    const auto plan = collector_plan(trains_on_cuda(opts.device), !trace_dir.empty(),
                                     env["device"].value("no_cuda", std::string()));
    auto states = engine::knob_states_here(opts.device);
    for (auto& s : states)
      if (auto it = opts.knobs.find(s.info.id); it != opts.knobs.end()) s.value = it->second;
    out.send({{"type", "hello"},
              {"versions", env["versions"]},
              {"device", env["device"]},
              {"knobs", engine::knob_states_json(states)},
              {"collector", {{"enabled", plan.first}, {"reason", plan.second}}}});
  }

  // The parent's messages, on a thread of their own. `stop` must be answered within 2 s even when a step takes
  // longer: a watchdog sends `done` itself and exits if the trainer has not finished its step by then.
  std::thread([] {
    client::protocol::read_messages(std::cin, out, inbox, [] {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1700));
        if (out.send_done(progress.summary("stopped"))) std::_Exit(0);
      }).detach();
    });
  }).detach();

  auto finish = [&](const std::string& reason, int code) -> int {
    nlohmann::json summary = progress.summary(reason);
    if (leader) {
      // Every rank's last state: the same configuration and, while DDP keeps them in step, the same weights.
      // After a failure the ranks are told to end but not waited for (one may be dead).
      summary["ranks"] = leader->stop(/*gather=*/code == 0);
      summary["world_size"] = opts.dist.world_size;
    }
    out.send_done(summary);
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);  // skip static destructors: the reader thread may still block on stdin
  };

  if (!group_error.empty()) {
    out.error(group_error, /*recoverable=*/false);
    return finish("error", 2);
  }
  // Wait for `start` when the command line did not name a model.
  const bool model_from_command_line = !opts.model.empty();
  while (!session) {
    if (opts.model.empty()) {
      nlohmann::json msg = inbox.wait_next();
      if (msg.is_null()) return finish(inbox.eof ? "stdin closed" : "stopped", 0);
      const std::string type = msg["type"];
      if (type == "start") {
        opts.model = msg.value("model", std::string());
        opts.data = msg.value("data", std::string("synthetic"));
        if (msg.contains("steps") && msg["steps"].is_number_integer()) steps = msg["steps"].get<int64_t>();
        if (msg.contains("knobs") && msg["knobs"].is_object())
          for (auto& [k, v] : msg["knobs"].items()) opts.knobs[k] = value_text(v);
        if (opts.model.empty()) {
          out.error("start needs a model", true);
          continue;
        }
      } else if (type == "set") {
        std::string knob = msg.value("knob", std::string());
        std::string value = msg.contains("value") ? value_text(msg["value"]) : "";
        if (auto e = engine::normalize_knob_value(knob, value)) {
          out.error(*e, true);
        } else {
          opts.knobs[knob] = value;
        }
        continue;
      } else if (type == "tune") {
        out.error("auto-tune needs a model: send start first", true);
        continue;
      } else {
        continue;  // trace before start, unknown types: ignored (forward compatibility)
      }
    }
    try {
      session = engine::Session::create(opts);
    } catch (const engine::EngineError& e) {
      if (model_from_command_line) {
        out.error(e.what(), /*recoverable=*/false);
        return finish("error", 2);
      }
      // A bad `start`: the parent may send another one.
      out.error(e.what(), /*recoverable=*/true);
      opts.model.clear();
    }
  }
  {
    nlohmann::json d = session->describe();
    out.send({{"type", "started"},
              {"model", d["model"]},
              {"data", d["data"]},
              {"input", d["input"]},
              {"classes", d["classes"]},
              {"config", config_json(session->config())},
              {"rev", session->revision()},
              {"knobs", engine::knob_states_json(session->knobs())},
              {"device", d["device"]}});
  }
  auto flush_warnings = [&] {
    for (auto& w : session->take_warnings()) out.warning(w);
  };
  flush_warnings();

  const bool session_on_cuda =
      session->describe().value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda";
  bool tracing = !trace_dir.empty();
  int64_t chunk_first = 0, chunk_index = 0, tune_index = 0;
  int64_t done_steps_for_tune = 0;  // mirrors done_steps for the tune handler defined before the loop
  // A collector that cannot start is said once per start, as a warning; the CPU timeline goes on.
  auto start_tracing = [&] {
    if (std::string why = start_recording(session_on_cuda); !why.empty()) out.warning(why);
  };
  if (tracing) {
    prof::set_thread_name("train");
    if (leader) leader->trace(true);
    start_tracing();
  }
  auto write_chunk = [&](int64_t last_step) {
    if (trace_dir.empty()) return;
    if (last_step < chunk_first) return;
    std::string path = (std::filesystem::path(trace_dir) / ("trace-" + std::to_string(chunk_index++) + ".json")).string();
    session->synchronize();  // kernels still running belong in this chunk, not lost to the forced flush
    std::string err;
    if (leader) {
      // One chunk of the whole group: a process (row group) per rank.
      auto merged = leader->chunk(collect_recorded_trace(session->describe()));
      if (!merged) err = "the recorder returned no trace";
      else if (auto st = prof::write_chrome_trace(*merged, path); !st.ok()) err = st.error().to_string();
    } else {
      err = write_recorded_trace(path, session->describe());
    }
    if (!err.empty()) {
      out.warning("cannot write trace chunk '" + path + "': " + err);
    } else {
      out.send({{"type", "trace"}, {"path", path}, {"first_step", chunk_first}, {"last_step", last_step}});
    }
    chunk_first = last_step + 1;
  };

  // Auto-tune on the current model/data from the current configuration (the GUI's "Auto-tune" button). The
  // tuner builds its own sessions; recording is paused so its trace snapshots own the recorder. The best
  // configuration found is applied to the running session afterwards (engine/live_tune.h), so the chart
  // shows it.
  auto run_tune_request = [&](const nlohmann::json& msg) {
    engine::TuneOptions topts;
    if (msg.contains("budget_s") && msg["budget_s"].is_number()) topts.budget_s = msg["budget_s"].get<double>();
    if (!(topts.budget_s >= 10 && topts.budget_s <= 24 * 3600)) {
      out.error("tune: budget_s must be between 10 and 86400 seconds", true);
      return;
    }
    // Only these knobs (as tune --knobs).
    for (const auto& k : msg.value("knobs", nlohmann::json::array())) {
      if (!k.is_string() || !engine::find_knob(k.get<std::string>())) {
        out.error("tune: unknown knob " + k.dump() + " in knobs (see tunebench-cli knobs)", true);
        return;
      }
      topts.only_knobs.push_back(k.get<std::string>());
    }
    topts.progress = [&](const engine::TuneProgress& p) {
      out.send({{"type", "tune_progress"}, {"phase", p.phase}, {"message", p.message}, {"fraction", p.fraction}});
    };
    const bool was_tracing = tracing;
    if (was_tracing) {
      write_chunk(done_steps_for_tune - 1);
      if (leader) leader->trace(false);
      prof::Recorder::instance().stop();
      tracing = false;
    }
    try {
      engine::SessionOptions sopts = opts;
      sopts.knobs = session->config();
      // The allocator is measured in fresh processes unless the user pinned it when starting serve.
      if (!opts.knobs.count("cpu_allocator")) sopts.knobs.erase("cpu_allocator");
      // A group is tuned live: its windows are steps of the running group (no start-up per window).
      auto workload = leader ? engine::make_live_group_workload(*session, sopts, leader->world_size(), int(dist_timeout),
                                                                leader->recording())
                             : engine::make_session_workload(sopts);
      engine::TuneResult result = engine::run_tune(*workload, topts);
      out.send(engine::write_live_tune_report(result, report_dir, trace_dir, int(tune_index++)));
      const engine::LiveTuneOutcome applied = engine::apply_tune_live(*session, result);
      for (const auto& w : applied.warnings) out.warning(w);
      if (applied.rev >= 0)
        out.send({{"type", "config_applied"}, {"rev", applied.rev}, {"knobs", config_json(session->config())},
                  {"changed", config_json(applied.changed)}, {"source", "auto-tune"}});
    } catch (const std::exception& e) {
      out.error(std::string("auto-tune failed: ") + e.what(), true);
    }
    if (was_tracing) {
      tracing = true;
      chunk_first = done_steps_for_tune;
      if (leader) leader->trace(true);
      start_tracing();
    }
  };

  int64_t done_steps = 0;
  while (!inbox.stop && (steps == 0 || done_steps < steps)) {
    for (auto& msg : inbox.drain()) {
      const std::string type = msg["type"];
      if (type == "set") {
        std::string knob = msg.value("knob", std::string());
        std::string value = msg.contains("value") ? value_text(msg["value"]) : "";
        engine::Config before = session->config();
        try {
          int64_t rev = session->apply({{knob, value}});
          nlohmann::json changed = nlohmann::json::object();
          for (const auto& [k, v] : session->config())
            if (before[k] != v) changed[k] = v;
          out.send({{"type", "config_applied"}, {"rev", rev}, {"knobs", config_json(session->config())}, {"changed", changed}});
        } catch (const engine::EngineError& e) {
          out.error(e.what(), true);
        }
        flush_warnings();
      } else if (type == "trace") {
        std::string action = msg.value("action", std::string());
        if (trace_dir.empty()) {
          out.error("tracing needs serve --trace-dir DIR", true);
        } else if (action == "start" && !tracing) {
          tracing = true;
          chunk_first = done_steps;
          if (leader) leader->trace(true);
          start_tracing();
        } else if (action == "stop" && tracing) {
          write_chunk(done_steps - 1);
          if (leader) leader->trace(false);
          prof::Recorder::instance().stop();
          tracing = false;
        }
      } else if (type == "tune") {
        run_tune_request(msg);
        flush_warnings();
      } else if (type == "start") {
        out.error("a run is already started", true);
      }
    }
    if (inbox.stop) break;
    engine::StepRecord r;
    try {
      r = session->step();  // a group's: every rank's step, and the group's samples
    } catch (const engine::EngineError& e) {
      flush_warnings();
      out.error(e.what(), false);
      return finish("error", 1);
    }
    {
      std::lock_guard<std::mutex> lock(progress.mu);
      progress.records.push_back(r);
    }
    nlohmann::json m = step_json(r);
    m["type"] = "step";
    out.send(m);
    flush_warnings();
    ++done_steps;
    done_steps_for_tune = done_steps;
    if (tracing && done_steps - chunk_first >= trace_every) write_chunk(done_steps - 1);
  }
  if (tracing) write_chunk(done_steps - 1);
  return finish(inbox.eof ? "stdin closed" : inbox.stop ? "stopped" : "completed", 0);
}

}  // namespace tb::cli
