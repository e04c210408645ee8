// The engine's side of the run protocol for `serve` (engine/serve.h).
#include "engine/serve.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <time.h>

#include <nlohmann/json.hpp>

#include "client/protocol.h"
#include "engine/distributed.h"
#include "engine/knobs.h"
#include "engine/live_group.h"
#include "engine/live_tune.h"
#include "engine/recording.h"
#include "engine/report.h"
#include "engine/run_json.h"
#include "engine/tune_request.h"
#include "engine/tuner.h"
#include "profiler/recorder.h"
#include "profiler/trace_io.h"

namespace msg = tb::client::protocol::msg;

namespace tb::engine {
namespace {

using client::protocol::Channel;
using client::protocol::Inbox;
using client::protocol::value_text;

// The one answer to `set`, before a start and during a run: `apply` sets the knob (in the options a start will
// use, or in the running session) and says the configuration's revision, or throws EngineError; the answer is
// config_applied with the whole configuration and what changed, or a recoverable error. Nothing else changes.
void answer_set(const nlohmann::json& m, Channel& out, const std::function<Config()>& config,
                const std::function<int64_t(const std::string& knob, const std::string& value)>& apply) {
  const std::string knob = m.value("knob", std::string());
  const std::string value = m.contains("value") ? value_text(m["value"]) : "";
  const Config before = config();
  try {
    const int64_t rev = apply(knob, value);
    const Config after = config();
    nlohmann::json changed = nlohmann::json::object();
    for (const auto& [k, v] : after)
      if (auto it = before.find(k); it == before.end() || it->second != v) changed[k] = v;
    out.send({{"type", msg::config_applied}, {"rev", rev}, {"knobs", config_json(after)}, {"changed", changed}});
  } catch (const EngineError& e) {
    out.error(e.what(), true);
  }
}

int64_t process_cpu_ns() {
  timespec ts{};
  return clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 ? int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec : -1;
}

// The engine loader's parts so far as a script's launcher sends them after each trace chunk (docs/protocol.md
// `loader_parts`), so that the GUI's Loader tab gives an engine run the verdict `run --trace` prints: `cpu_ns`
// is the training's CPU since the first step (the process's, less its loader threads': a script's workers are
// other processes), and `transfer` says the steps' h2d_ns are measured. Null when nothing is loaded.
nlohmann::json loader_parts_message(const nlohmann::json& describe, int64_t cpu_since_first) {
  const nlohmann::json parts =
      describe.contains("loader") ? describe["loader"].value("parts", nlohmann::json()) : nlohmann::json();
  if (!parts.is_array() || parts.empty()) return nullptr;
  int64_t workers_cpu = 0;
  for (const auto& p : parts)
    if (p.value("who", std::string()).rfind("worker ", 0) == 0) workers_cpu += p.value("cpu_ns", int64_t(0));
  nlohmann::json m = {{"type", msg::loader_parts}, {"parts", parts}, {"transfer", true}};
  if (cpu_since_first >= 0) m["cpu_ns"] = std::max<int64_t>(0, cpu_since_first - workers_cpu);
  return m;
}

// Summary of the run so far, readable by the watchdog.
struct Progress {
  std::mutex mu;
  std::vector<StepRecord> records;
  nlohmann::json summary(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu);
    auto tp = throughput_json(records);
    return {{"steps", records.size()}, {"throughput_median", tp["median"]}, {"unit", "samples/s"}, {"reason", reason}};
  }
};

}  // namespace

int serve(ServeOptions o) {
  SessionOptions& opts = o.session;
  int64_t steps = o.steps;
  const int64_t trace_every = o.trace_every;
  const std::string& trace_dir = o.trace_dir;
  const std::string& report_dir = o.report_dir;
  const int64_t dist_timeout = o.dist_timeout_s;
  const bool group = opts.dist.enabled();
  static Channel out;  // static: the watchdog may use it while main unwinds
  out.inline_files = o.inline_files;
  static Inbox inbox;
  static Progress progress;

  // Rank 0 of a group joins it before it says hello: when its rendezvous port was taken in the meantime the
  // launcher starts the group again on another, and the parent must not have heard a first hello.
  std::unique_ptr<Session> session;
  GroupLeader* leader = nullptr;  // `session` itself in a group
  std::string group_error;
  if (group) {
    try {
      auto owned = std::make_unique<GroupLeader>(Session::create(opts));
      leader = owned.get();
      session = std::move(owned);
    } catch (const EngineError& e) {
      if (o.port_in_use && o.port_in_use(e.what())) return o.port_in_use_exit;
      group_error = e.what();
    }
  }

  // hello
  {
    nlohmann::json env = environment_info();
    const auto plan = collector_plan(trains_on_cuda(opts.device), !trace_dir.empty(),
                                     env["device"].value("no_cuda", std::string()));
    auto states = knob_states_here(opts.device);
    for (auto& s : states)
      if (auto it = opts.knobs.find(s.info.id); it != opts.knobs.end()) s.value = it->second;
    out.send({{"type", msg::hello},
              {"versions", env["versions"]},
              {"device", env["device"]},
              {"knobs", knob_states_json(states)},
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
      if (type == msg::start) {
        opts.model = msg.value("model", std::string());
        opts.data = msg.value("data", std::string("synthetic"));
        if (msg.contains("steps") && msg["steps"].is_number_integer()) steps = msg["steps"].get<int64_t>();
        if (msg.contains("knobs") && msg["knobs"].is_object())
          for (auto& [k, v] : msg["knobs"].items()) opts.knobs[k] = value_text(v);
        if (opts.model.empty()) {
          out.error("start needs a model", true);
          continue;
        }
      } else if (type == msg::set) {
        // The configuration the start will use (rev 0: no step has run under any).
        answer_set(
            msg, out, [&] { return default_config(opts.knobs); },
            [&](const std::string& knob, const std::string& value) -> int64_t {
              const auto v = normalize_knob_value(knob, value);
              if (!v) throw EngineError(v.error().message);
              opts.knobs[knob] = *v;
              return 0;
            });
        continue;
      } else if (type == msg::tune) {
        out.error("auto-tune needs a model: send start first", true);
        continue;
      } else {
        continue;  // trace before start, unknown types: ignored (forward compatibility)
      }
    }
    try {
      session = Session::create(opts);
    } catch (const EngineError& e) {
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
    out.send({{"type", msg::started},
              {"model", d["model"]},
              {"data", d["data"]},
              {"input", d["input"]},
              {"classes", d["classes"]},
              {"config", config_json(session->config())},
              {"rev", session->revision()},
              {"knobs", knob_states_json(session->knobs())},
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
  int64_t cpu_at_first = -1;  // the process's CPU time when the first step ended
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
      out.send({{"type", msg::trace}, {"path", path}, {"first_step", chunk_first}, {"last_step", last_step}});
      if (!leader) {
        const int64_t now = process_cpu_ns();
        auto lp = loader_parts_message(session->describe(), cpu_at_first >= 0 && now >= 0 ? now - cpu_at_first : -1);
        if (!lp.is_null()) out.send(lp);
      }
    }
    chunk_first = last_step + 1;
  };

  // Auto-tune on the current model/data from the current configuration (the GUI's "Auto-tune" button). The
  // tuner builds its own sessions; recording is paused so its trace snapshots own the recorder. The best
  // configuration found is applied to the running session afterwards (engine/live_tune.h), so the chart
  // shows it.
  auto run_tune_request = [&](const nlohmann::json& msg) {
    auto request = tune_request(msg, [](const std::string& id) { return find_knob(id) != nullptr; });
    if (!request) {
      out.error(request.error().message, true);
      return;
    }
    TuneOptions topts = std::move(*request);
    topts.progress = [&](const TuneProgress& p) {
      out.send({{"type", msg::tune_progress}, {"phase", p.phase}, {"message", p.message}, {"fraction", p.fraction}});
    };
    const bool was_tracing = tracing;
    if (was_tracing) {
      write_chunk(done_steps_for_tune - 1);
      if (leader) leader->trace(false);
      prof::Recorder::instance().stop();
      tracing = false;
    }
    try {
      SessionOptions sopts = opts;
      sopts.knobs = session->config();
      // The allocator is measured in fresh processes unless the user pinned it when starting serve.
      if (!opts.knobs.count("cpu_allocator")) sopts.knobs.erase("cpu_allocator");
      // A group is tuned live: its windows are steps of the running group (no start-up per window).
      auto workload = leader ? make_live_group_workload(*session, sopts, leader->world_size(), int(dist_timeout),
                                                                leader->recording())
                             : make_session_workload(sopts);
      TuneResult result = run_tune(*workload, topts);
      out.send(write_live_tune_report(result, report_dir, trace_dir, int(tune_index++)));
      const LiveTuneOutcome applied = apply_tune_live(*session, result);
      for (const auto& w : applied.warnings) out.warning(w);
      if (applied.rev >= 0)
        out.send({{"type", msg::config_applied}, {"rev", applied.rev}, {"knobs", config_json(session->config())},
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
      if (type == msg::set) {
        answer_set(
            msg, out, [&] { return session->config(); },
            [&](const std::string& knob, const std::string& value) { return session->apply({{knob, value}}); });
        flush_warnings();
      } else if (type == msg::trace) {
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
      } else if (type == msg::tune) {
        run_tune_request(msg);
        flush_warnings();
      } else if (type == msg::start) {
        out.error("a run is already started", true);
      }
    }
    if (inbox.stop) break;
    StepRecord r;
    try {
      r = session->step();  // a group's: every rank's step, and the group's samples
    } catch (const EngineError& e) {
      flush_warnings();
      out.error(e.what(), false);
      return finish("error", 1);
    }
    {
      std::lock_guard<std::mutex> lock(progress.mu);
      progress.records.push_back(r);
    }
    nlohmann::json m = step_json(r);
    m["type"] = msg::step;
    out.send(m);
    flush_warnings();
    ++done_steps;
    if (done_steps == 1) cpu_at_first = process_cpu_ns();
    done_steps_for_tune = done_steps;
    if (tracing && done_steps - chunk_first >= trace_every) write_chunk(done_steps - 1);
  }
  if (tracing) write_chunk(done_steps - 1);
  return finish(inbox.eof ? "stdin closed" : inbox.stop ? "stopped" : "completed", 0);
}

}  // namespace tb::engine
