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
#include <optional>
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

// One serve: the session (a group's leader on rank 0), the parent's messages between steps, the trace chunks and
// the auto-tunes. Its channel, inbox and progress are serve()'s statics: a stop watchdog uses them while the
// trainer unwinds.
class Server {
 public:
  Server(ServeOptions& o, Channel& out, Inbox& inbox, Progress& progress)
      : o_(o), opts_(o.session), steps_(o.steps), out_(out), inbox_(inbox), progress_(progress) {}

  // Rank 0 of a group joins it before it says hello: when its rendezvous port was taken in the meantime the
  // launcher starts the group again on another, and the parent must not have heard a first hello. Returns the
  // exit code when that is the case.
  std::optional<int> join_group();
  void say_hello();
  int run();

 private:
  [[noreturn]] void finish(const std::string& reason, int code);
  // Waits for `start` when the command line did not name a model; answers `set` meanwhile. The input's end
  // finishes the process here.
  void wait_for_start();
  void say_started();
  void flush_warnings() {
    for (auto& w : session_->take_warnings()) out_.warning(w);
  }
  // A collector that cannot start is said once per start, as a warning; the CPU timeline goes on.
  void start_recording_here() {
    if (std::string why = start_recording(session_on_cuda_); !why.empty()) out_.warning(why);
  }
  void trace_on(int64_t first_step);
  void trace_off(int64_t last_step);
  void write_chunk(int64_t last_step);
  void handle(const nlohmann::json& m);
  void run_tune_request(const nlohmann::json& m);

  ServeOptions& o_;
  SessionOptions& opts_;
  int64_t steps_;
  Channel& out_;
  Inbox& inbox_;
  Progress& progress_;
  std::unique_ptr<Session> session_;
  GroupLeader* leader_ = nullptr;  // `session_` itself in a group
  std::string group_error_;
  bool session_on_cuda_ = false, tracing_ = false;
  int64_t chunk_first_ = 0, chunk_index_ = 0, tune_index_ = 0;
  int64_t cpu_at_first_ = -1;  // the process's CPU time when the first step ended
  int64_t done_steps_ = 0;
};

std::optional<int> Server::join_group() {
  if (!opts_.dist.enabled()) return std::nullopt;
  try {
    auto owned = std::make_unique<GroupLeader>(Session::create(opts_));
    leader_ = owned.get();
    session_ = std::move(owned);
  } catch (const EngineError& e) {
    if (o_.port_in_use && o_.port_in_use(e.what())) return o_.port_in_use_exit;
    group_error_ = e.what();
  }
  return std::nullopt;
}

void Server::say_hello() {
  nlohmann::json env = environment_info();
  const auto plan = collector_plan(trains_on_cuda(opts_.device), !o_.trace_dir.empty(),
                                   env["device"].value("no_cuda", std::string()));
  auto states = knob_states_here(opts_.device);
  for (auto& s : states)
    if (auto it = opts_.knobs.find(s.info.id); it != opts_.knobs.end()) s.value = it->second;
  out_.send({{"type", msg::hello},
             {"versions", env["versions"]},
             {"device", env["device"]},
             {"knobs", knob_states_json(states)},
             {"collector", {{"enabled", plan.first}, {"reason", plan.second}}}});
}

void Server::finish(const std::string& reason, int code) {
  nlohmann::json summary = progress_.summary(reason);
  if (leader_) {
    // Every rank's last state: the same configuration and, while DDP keeps them in step, the same weights.
    // After a failure the ranks are told to end but not waited for (one may be dead).
    summary["ranks"] = leader_->stop(/*gather=*/code == 0);
    summary["world_size"] = opts_.dist.world_size;
  }
  out_.send_done(summary);
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);  // skip static destructors: the reader thread may still block on stdin
}

void Server::wait_for_start() {
  const bool model_from_command_line = !opts_.model.empty();
  while (!session_) {
    if (opts_.model.empty()) {
      nlohmann::json m = inbox_.wait_next();
      if (m.is_null()) finish(inbox_.eof ? "stdin closed" : "stopped", 0);
      const std::string type = m["type"];
      if (type == msg::start) {
        opts_.model = m.value("model", std::string());
        opts_.data = m.value("data", std::string("synthetic"));
        if (m.contains("steps") && m["steps"].is_number_integer()) steps_ = m["steps"].get<int64_t>();
        if (m.contains("knobs") && m["knobs"].is_object())
          for (auto& [k, v] : m["knobs"].items()) opts_.knobs[k] = value_text(v);
        if (opts_.model.empty()) {
          out_.error("start needs a model", true);
          continue;
        }
      } else if (type == msg::set) {
        // The configuration the start will use (rev 0: no step has run under any).
        answer_set(
            m, out_, [&] { return default_config(opts_.knobs); },
            [&](const std::string& knob, const std::string& value) -> int64_t {
              const auto v = normalize_knob_value(knob, value);
              if (!v) throw EngineError(v.error().message);
              opts_.knobs[knob] = *v;
              return 0;
            });
        continue;
      } else if (type == msg::tune) {
        out_.error("auto-tune needs a model: send start first", true);
        continue;
      } else {
        continue;  // trace before start, unknown types: ignored (forward compatibility)
      }
    }
    try {
      session_ = Session::create(opts_);
    } catch (const EngineError& e) {
      if (model_from_command_line) {
        out_.error(e.what(), /*recoverable=*/false);
        finish("error", 2);
      }
      // A bad `start`: the parent may send another one.
      out_.error(e.what(), /*recoverable=*/true);
      opts_.model.clear();
    }
  }
}

void Server::say_started() {
  nlohmann::json d = session_->describe();
  out_.send({{"type", msg::started},
             {"model", d["model"]},
             {"data", d["data"]},
             {"input", d["input"]},
             {"classes", d["classes"]},
             {"config", config_json(session_->config())},
             {"rev", session_->revision()},
             {"knobs", knob_states_json(session_->knobs())},
             {"device", d["device"]}});
  session_on_cuda_ = d.value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda";
}

// Recording from step `first_step` on (the group's ranks too).
void Server::trace_on(int64_t first_step) {
  tracing_ = true;
  chunk_first_ = first_step;
  if (leader_) leader_->trace(true);
  start_recording_here();
}

// The chunk up to `last_step` written, and recording stopped.
void Server::trace_off(int64_t last_step) {
  write_chunk(last_step);
  if (leader_) leader_->trace(false);
  prof::Recorder::instance().stop();
  tracing_ = false;
}

void Server::write_chunk(int64_t last_step) {
  if (o_.trace_dir.empty()) return;
  if (last_step < chunk_first_) return;
  std::string path =
      (std::filesystem::path(o_.trace_dir) / ("trace-" + std::to_string(chunk_index_++) + ".json")).string();
  session_->synchronize();  // kernels still running belong in this chunk, not lost to the forced flush
  std::string err;
  if (leader_) {
    // One chunk of the whole group: a process (row group) per rank.
    auto merged = leader_->chunk(collect_recorded_trace(session_->describe()));
    if (!merged) err = "the recorder returned no trace";
    else if (auto st = prof::write_chrome_trace(*merged, path); !st.ok()) err = st.error().to_string();
  } else {
    err = write_recorded_trace(path, session_->describe());
  }
  if (!err.empty()) {
    out_.warning("cannot write trace chunk '" + path + "': " + err);
  } else {
    out_.send({{"type", msg::trace}, {"path", path}, {"first_step", chunk_first_}, {"last_step", last_step}});
    if (!leader_) {
      const int64_t now = process_cpu_ns();
      auto lp = loader_parts_message(session_->describe(), cpu_at_first_ >= 0 && now >= 0 ? now - cpu_at_first_ : -1);
      if (!lp.is_null()) out_.send(lp);
    }
  }
  chunk_first_ = last_step + 1;
}

// Auto-tune on the current model/data from the current configuration (the GUI's "Auto-tune" button). The
// tuner builds its own sessions; recording is paused so its trace snapshots own the recorder. The best
// configuration found is applied to the running session afterwards (engine/live_tune.h), so the chart
// shows it.
void Server::run_tune_request(const nlohmann::json& m) {
  auto request = tune_request(m, [](const std::string& id) { return find_knob(id) != nullptr; });
  if (!request) {
    out_.error(request.error().message, true);
    return;
  }
  TuneOptions topts = std::move(*request);
  topts.progress = [&](const TuneProgress& p) {
    out_.send({{"type", msg::tune_progress}, {"phase", p.phase}, {"message", p.message}, {"fraction", p.fraction}});
  };
  const bool was_tracing = tracing_;
  if (was_tracing) trace_off(done_steps_ - 1);
  try {
    SessionOptions sopts = opts_;
    sopts.knobs = session_->config();
    // The allocator is measured in fresh processes unless the user pinned it when starting serve.
    if (!opts_.knobs.count("cpu_allocator")) sopts.knobs.erase("cpu_allocator");
    // A group is tuned live: its windows are steps of the running group (no start-up per window).
    auto workload = leader_ ? make_live_group_workload(*session_, sopts, leader_->world_size(),
                                                       int(o_.dist_timeout_s), leader_->recording())
                            : make_session_workload(sopts);
    TuneResult result = run_tune(*workload, topts);
    out_.send(write_live_tune_report(result, o_.report_dir, o_.trace_dir, int(tune_index_++)));
    const LiveTuneOutcome applied = apply_tune_live(*session_, result);
    for (const auto& w : applied.warnings) out_.warning(w);
    if (applied.rev >= 0)
      out_.send({{"type", msg::config_applied}, {"rev", applied.rev}, {"knobs", config_json(session_->config())},
                 {"changed", config_json(applied.changed)},
                 // A price changed nothing but the measurement allocator it pinned: its figures are the live run's.
                 {"source", result.plan_only ? "auto-tune price" : "auto-tune"}});
  } catch (const std::exception& e) {
    out_.error(std::string("auto-tune failed: ") + e.what(), true);
  }
  if (was_tracing) trace_on(done_steps_);
}

// A message from the parent between two steps.
void Server::handle(const nlohmann::json& m) {
  const std::string type = m["type"];
  if (type == msg::set) {
    answer_set(
        m, out_, [&] { return session_->config(); },
        [&](const std::string& knob, const std::string& value) { return session_->apply({{knob, value}}); });
    flush_warnings();
  } else if (type == msg::trace) {
    const std::string action = m.value("action", std::string());
    if (o_.trace_dir.empty()) out_.error("tracing needs serve --trace-dir DIR", true);
    else if (action == "start" && !tracing_) trace_on(done_steps_);
    else if (action == "stop" && tracing_) trace_off(done_steps_ - 1);
  } else if (type == msg::tune) {
    run_tune_request(m);
    flush_warnings();
  } else if (type == msg::start) {
    out_.error("a run is already started", true);
  }
}

int Server::run() {
  if (!group_error_.empty()) {
    out_.error(group_error_, /*recoverable=*/false);
    finish("error", 2);
  }
  wait_for_start();
  say_started();
  flush_warnings();
  if (!o_.trace_dir.empty()) {
    prof::set_thread_name("train");
    trace_on(0);
  }
  while (!inbox_.stop && (steps_ == 0 || done_steps_ < steps_)) {
    for (auto& m : inbox_.drain()) handle(m);
    if (inbox_.stop) break;
    StepRecord r;
    try {
      r = session_->step();  // a group's: every rank's step, and the group's samples
    } catch (const EngineError& e) {
      flush_warnings();
      out_.error(e.what(), false);
      finish("error", 1);
    }
    {
      std::lock_guard<std::mutex> lock(progress_.mu);
      progress_.records.push_back(r);
    }
    nlohmann::json m = step_json(r);
    m["type"] = msg::step;
    out_.send(m);
    flush_warnings();
    ++done_steps_;
    if (done_steps_ == 1) cpu_at_first_ = process_cpu_ns();
    if (tracing_ && done_steps_ - chunk_first_ >= o_.trace_every) write_chunk(done_steps_ - 1);
  }
  if (tracing_) write_chunk(done_steps_ - 1);
  finish(inbox_.eof ? "stdin closed" : inbox_.stop ? "stopped" : "completed", 0);
}

}  // namespace

int serve(ServeOptions o) {
  static Channel out;  // static: the watchdog may use it while main unwinds
  out.inline_files = o.inline_files;
  static Inbox inbox;
  static Progress progress;
  Server server(o, out, inbox, progress);
  if (auto code = server.join_group()) return *code;
  server.say_hello();
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
  return server.run();
}

}  // namespace tb::engine
