// tunebench-cli serve --script train.py [--python PY] [--set k=v,...] [--steps N] [--trace-dir DIR]
//                     [--trace-every N] [--trace-share S] [--trace-steps K] [--trace-detail shapes,stack]
//                     [--report-dir DIR] [-- SCRIPT ARGS]
// The run protocol of docs/protocol.md for a user's script: the child (python -m tunebench.launch, through
// client/script_runner.h) speaks it already; this relays its messages to stdout, with the warm-up flag of
// each step decided here (the engine's rule), and the parent's set / trace / stop to the child. `tune`
// stops the live child, tunes with fresh children (engine/tuner.h make_script_workload) and starts the live
// run again with the tuned configuration. stdout carries only protocol lines; the script's prints go to
// stderr.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "client/inputs.h"
#include "client/protocol.h"
#include "commands.h"
#include "engine/report.h"
#include "engine/tune_request.h"
#include "engine/tuner.h"
#include "engine_cli_common.h"
#include "knobs/table.h"
#include "script_common.h"

namespace msg = tb::client::protocol::msg;

namespace tb::cli {
namespace {

client::protocol::Channel g_out;    // stdout
client::protocol::Inbox g_inbox;    // stdin's messages, read by a thread of its own (cmd_serve_script)
void send(nlohmann::json m) { g_out.send(std::move(m)); }
void send_error(const std::string& message, bool recoverable) { g_out.error(message, recoverable); }

// A tune restarts the live child, whose steps, revisions and trace chunks count from 0 again: the parent sees
// one run, so they go on from where the last child stopped, and the restarted child's `started` becomes the
// tune's config_applied (source "auto-tune", what the GUI names its Compare row by).
struct Renumber {
  int64_t next_step = 0, last_rev = 0;
  int64_t step_offset = 0, rev_offset = 0;
  bool restarted = false;
  nlohmann::json tuned = nlohmann::json::object();  // the knobs the tune changed
  void restart(const nlohmann::json& changed) {
    step_offset = next_step;
    rev_offset = last_rev + (changed.empty() ? 0 : 1);
    tuned = changed;
    restarted = true;
  }
  // The message to relay; null when there is none to relay.
  nlohmann::json map(nlohmann::json m) {
    const std::string type = m.value("type", std::string());
    auto shift = [&](const char* key, int64_t by) {
      if (m.contains(key) && m[key].is_number_integer()) m[key] = m[key].get<int64_t>() + by;
    };
    if (type == msg::started && restarted) {
      if (tuned.empty()) return nullptr;
      return {{"type", msg::config_applied}, {"rev", m.value("rev", int64_t(0)) + rev_offset},
              {"knobs", m.value("config", nlohmann::json::object())}, {"changed", tuned}, {"source", "auto-tune"}};
    }
    if (type == msg::step) {
      shift("i", step_offset);
      shift("config_rev", rev_offset);
      next_step = m.value("i", next_step) + 1;
      last_rev = std::max(last_rev, m.value("config_rev", last_rev));
    } else if (type == msg::config_applied) {
      shift("rev", rev_offset);
      last_rev = std::max(last_rev, m.value("rev", last_rev));
    } else if (type == msg::trace || type == msg::trace_lanes) {
      shift("first_step", step_offset);
      shift("last_step", step_offset);
    } else if (type == msg::outside) {
      shift("after_step", step_offset);
    }
    return m;
  }
};

// What serve --script was asked for.
struct ServeScriptArgs {
  client::ScriptOptions so;
  std::string report_dir;  // where a tune's report goes (the parent removes it); else the trace folder, else /tmp
  bool inline_files = false;
};

// argv of serve --script (argv[0] "serve"; the script's own arguments after "--"): the options, or the one line.
Result<ServeScriptArgs> parse_args(int argc, char** argv) {
  ServeScriptArgs r;
  client::ScriptOptions& so = r.so;
  const Status read = read_script_command_line(argc, argv, so.args, [&](const std::string& a, auto& value) -> Status {
    if (const auto s = script_option(a, value, so, {.steps_min = client::inputs::kServeStepsMin})) return *s;
    if (a == "--trace-dir" && value(so.trace_dir)) return Status::Ok();
    if (a == "--report-dir" && value(r.report_dir)) return Status::Ok();
    if (a == "--inline-files") {
      r.inline_files = true;
      return Status::Ok();
    }
    return Error{"bad option '" + a + "' for serve --script"};
  });
  if (!read) return read.error();
  so.trace_steps = trace_steps_or_default(so);  // a live run's length is rarely given: 20 traced steps, every other
  return r;
}

// The run protocol for a script: one live child at a time, its messages relayed to stdout and the parent's to it;
// a tune stops it and starts the next with the tuned knobs. Ends the process (the stdin reader may still block).
class ScriptServe {
 public:
  explicit ScriptServe(ServeScriptArgs args) : so_(std::move(args.so)), report_dir_(std::move(args.report_dir)) {
    trace_base_ = so_.trace_dir;
    so_.children_to_end = false;  // a live view of a process that makes no step shows nothing: said at once
  }

  [[noreturn]] void run() {
    for (;;) {  // one live child per iteration; a tune starts the next one with its result
      auto runner = start_child();
      relay(*runner);
    }
  }

 private:
  [[noreturn]] static void finish(int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);  // the stdin reader may still block
  }

  // The child's own `done` summary: its loader's last totals go on in ours (the GUI's verdict at the end).
  static nlohmann::json loader_of_child(nlohmann::json summary, const nlohmann::json& child_done) {
    for (const char* k : {"loader_parts", "cpu_ns"})
      if (child_done.contains(k)) summary[k] = child_done[k];
    return summary;
  }

  // The next live child, its hello sent once for the whole run; a child that cannot start ends the run.
  std::unique_ptr<client::ScriptRunner> start_child() {
    auto runner = std::make_unique<client::ScriptRunner>();
    Status st = runner->start(so_);
    if (st && !runner->hello().is_object())  // the training ran in child processes (client/script_runner.h)
      st = Error{"the training runs in child processes (torch.multiprocessing), which TuneBench does not follow: "
                 "no step to watch in this process"};
    if (!st) {
      send_error(st.error().message, false);
      send({{"type", msg::done}, {"summary", {{"steps", steps_}, {"reason", "error"}, {"unit", "samples/s"}}}});
      finish(2);
    }
    if (!hello_sent_) {
      send(runner->hello());
      hello_sent_ = true;
    }
    return runner;
  }

  // The live child's messages and the parent's, until a tune restarts the child (returns) or the run ends.
  void relay(client::ScriptRunner& runner) {
    nlohmann::json child_done = nlohmann::json::object();
    for (;;) {
      if (parent_messages(runner)) return;
      if (g_inbox.stop) {  // `stop`, or the end of stdin
        runner.stop(5);
        while (auto rest = runner.next(0.1))  // what it sent before it ended: its `done` with them
          if (rest->value("type", std::string()) == msg::done) child_done = rest->value("summary", nlohmann::json::object());
        send({{"type", msg::done},
              {"summary", loader_of_child({{"steps", steps_}, {"reason", g_inbox.eof ? "stdin closed" : "stopped"},
                                           {"unit", "samples/s"}}, child_done)}});
        finish(0);
      }
      auto m = runner.next(0.05);
      if (!m) {
        if (!runner.finished()) continue;
        const int code = runner.stop(5);
        send({{"type", msg::done}, {"summary", loader_of_child({{"steps", steps_}, {"reason", code == 0 ? "completed" : "error"},
                                                             {"unit", "samples/s"}, {"exit_code", code}}, child_done)}});
        finish(code == 0 ? 0 : 1);
      }
      const std::string type = m->value("type", std::string());
      if (type == msg::step) ++steps_;
      if (type == msg::hello) continue;  // a restarted child: the parent already has one
      if (type == msg::done) {  // sent by us, with our step count, when the child is gone
        child_done = m->value("summary", nlohmann::json::object());
        continue;
      }
      if (auto out = renumber_.map(std::move(*m)); !out.is_null()) send(std::move(out));
    }
  }

  // The parent's messages so far: set and trace go to the child; true when a tune restarts it (what came after the
  // tune is dropped, as the restarted child starts from the tuned knobs).
  bool parent_messages(client::ScriptRunner& runner) {
    for (auto& m : g_inbox.drain()) {
      const std::string type = m.value("type", std::string());
      if (type == msg::set || type == msg::trace) runner.send(m);
      else if (type == msg::tune && tune(runner, m)) return true;
    }
    return false;
  }

  // A `tune` message: false when the request is refused (said as a recoverable error); else the live child is
  // stopped, the tune runs with fresh children (its report sent) and true: the live run goes on, from the start
  // of the script, with the tuned knobs.
  bool tune(client::ScriptRunner& runner, const nlohmann::json& m) {
    // Checked before the live run is stopped: a bad request costs nothing.
    // The script's knobs are the knob table's that a script run has (the launcher's and the allocator).
    auto request = engine::tune_request(m, [](const std::string& id) {
      const tb::knobs::Row* row = tb::knobs::find(id);
      return row && tb::knobs::script_has(*row);
    });
    if (!request) {
      send_error(request.error().message, true);
      return false;
    }
    runner.stop(5);
    engine::TuneOptions to = std::move(*request);
    to.progress = [](const engine::TuneProgress& p) {
      send({{"type", msg::tune_progress}, {"phase", p.phase}, {"message", p.message}, {"fraction", p.fraction}});
    };
    try {
      client::ScriptOptions tso = so_;
      tso.steps = 0;
      tso.trace_dir.clear();
      tso.output = {};
      auto w = engine::make_script_workload(tso);
      engine::TuneResult r = engine::run_tune(*w, to);
      send(engine::write_live_tune_report(r, report_dir_, trace_base_, tune_index_++));
      renumber_.restart(keep_tuned(r));
    } catch (const std::exception& e) {
      send_error(std::string("auto-tune failed: ") + e.what(), true);
      renumber_.restart(nlohmann::json::object());
    }
    // Its trace chunks in a folder of their own: the first child's names would be written again.
    if (!trace_base_.empty()) {
      so_.trace_dir = (std::filesystem::path(trace_base_) / ("after-tune-" + std::to_string(tune_index_))).string();
      std::filesystem::create_directories(so_.trace_dir);
    }
    return true;
  }

  // The next live child runs the user's own settings with the tuned knobs over them: those the tune changed.
  nlohmann::json keep_tuned(const engine::TuneResult& r) {
    nlohmann::json changed = nlohmann::json::object();
    for (const auto& k : engine::changed_knobs(r.baseline, r.final_config)) {
      changed[k] = r.final_config.at(k);
      bool found = false;
      for (auto& [key, value] : so_.set)
        if (key == k) value = r.final_config.at(k), found = true;
      if (!found) so_.set.push_back({k, r.final_config.at(k)});
    }
    return changed;
  }

  client::ScriptOptions so_;
  std::string report_dir_, trace_base_;
  int64_t steps_ = 0;
  bool hello_sent_ = false;
  int tune_index_ = 0;
  Renumber renumber_;
};

}  // namespace

int cmd_serve_script(int argc, char** argv) {
  auto parsed = parse_args(argc, argv);
  if (!parsed) {
    std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", parsed.error().message.c_str());
    return 2;
  }
  g_out.inline_files = parsed->inline_files;
  client::ScriptOptions& so = parsed->so;
  if (!so.trace_dir.empty()) std::filesystem::create_directories(so.trace_dir);
  so.output = [](const std::string& line) { std::fprintf(stderr, "  | %s\n", line.c_str()); };
  ScriptServe serve(std::move(*parsed));
  std::thread([] { client::protocol::read_messages(std::cin, g_out, g_inbox); }).detach();
  serve.run();
}

}  // namespace tb::cli
