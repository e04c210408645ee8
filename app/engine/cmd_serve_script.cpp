// tunebench-cli serve --script train.py [--python PY] [--set k=v,...] [--steps N] [--trace-dir DIR]
//                     [--trace-every N] [--trace-detail shapes,stack] [--report-dir DIR] [-- SCRIPT ARGS]
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

client::protocol::Channel g_out;  // stdout
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

}  // namespace

int cmd_serve_script(int argc, char** argv) {
  client::ScriptOptions so;
  std::string report_dir;  // where a tune's report goes (the parent removes it); else the trace folder, else /tmp
  std::vector<std::string> script_args;
  const int end = script_args_split(argc, argv, script_args);
  so.args = script_args;
  for (int i = 1; i < end; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) { return next_arg(end, argv, i, out); };
    std::string v;
    int64_t n = 0;
    if (const auto s = script_source_option(a, value, so)) {
      if (!*s) {
        std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", s->error().message.c_str());
        return 2;
      }
    } else if (a == "--set" && value(v)) {
      // A malformed item is an error, as in run and tune: it was once dropped silently here.
      const auto items = client::inputs::parse_settings(v);
      if (!items) {
        std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", items.error().message.c_str());
        return 2;
      }
      for (const auto& kv : *items) so.set.push_back(kv);
    } else if (a == "--steps" && value(v) && parse_int(v, n)) {
      so.steps = n;
    } else if (a == "--trace-dir" && value(so.trace_dir)) {
    } else if (a == "--report-dir" && value(report_dir)) {
    } else if (a == "--inline-files") {
      g_out.inline_files = true;
    } else if (a == "--trace-every" && value(v) && parse_int(v, n, 1)) {
      so.trace_every = int(n);
    } else if (a == "--trace-share" && value(v)) {
      const auto share = client::inputs::parse_trace_share(v);
      if (!share) {
        std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", share.error().message.c_str());
        return 2;
      }
      so.trace_share = *share;
    } else if (a == "--trace-detail" && value(v) && !(so.trace_detail = trace_detail_of(v)).empty()) {
    } else {
      std::fprintf(stderr, "tunebench-cli: error: serve: bad option '%s' for serve --script\n", a.c_str());
      return 2;
    }
  }
  if (!so.trace_dir.empty()) std::filesystem::create_directories(so.trace_dir);
  so.output = [](const std::string& line) { std::fprintf(stderr, "  | %s\n", line.c_str()); };

  static client::protocol::Inbox inbox;
  std::thread([] { client::protocol::read_messages(std::cin, g_out, inbox); }).detach();

  auto finish = [](int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);  // the stdin reader may still block
  };
  int64_t steps = 0;
  bool hello_sent = false;
  int tune_index = 0;
  Renumber renumber;
  const std::string trace_base = so.trace_dir;
  for (;;) {  // one live child per iteration; a tune starts the next one with its result
    auto runner = std::make_unique<client::ScriptRunner>();
    Status st = runner->start(so);
    if (st && !runner->hello().is_object())  // the training ran in child processes (client/script_runner.h)
      st = Error{"the training runs in child processes (torch.multiprocessing), which TuneBench does not follow: "
                 "no step to watch in this process"};
    if (!st) {
      send_error(st.error().message, false);
      send({{"type", msg::done}, {"summary", {{"steps", steps}, {"reason", "error"}, {"unit", "samples/s"}}}});
      finish(2);
    }
    nlohmann::json hello = runner->hello();
    if (!hello_sent) {
      send(hello);
      hello_sent = true;
    }
    // The child's own `done` summary: its loader's last totals go on in ours (the GUI's verdict at the end).
    nlohmann::json child_done = nlohmann::json::object();
    auto loader_of_child = [&](nlohmann::json summary) {
      for (const char* k : {"loader_parts", "cpu_ns"})
        if (child_done.contains(k)) summary[k] = child_done[k];
      return summary;
    };
    bool restart = false;
    while (!restart) {
      for (auto& msg : inbox.drain()) {
        const std::string type = msg.value("type", std::string());
        if (type == msg::set || type == msg::trace) {
          runner->send(msg);
        } else if (type == msg::tune) {
          // Checked before the live run is stopped: a bad request costs nothing.
          // The script's knobs are the knob table's that a script run has (the launcher's and the allocator).
          auto request = engine::tune_request(msg, [](const std::string& id) {
            const tb::knobs::Row* row = tb::knobs::find(id);
            return row && tb::knobs::script_has(*row);
          });
          if (!request) {
            send_error(request.error().message, true);
            continue;
          }
          runner->stop(5);
          engine::TuneOptions to = std::move(*request);
          to.progress = [](const engine::TuneProgress& p) {
            send({{"type", msg::tune_progress}, {"phase", p.phase}, {"message", p.message}, {"fraction", p.fraction}});
          };
          try {
            client::ScriptOptions tso = so;
            tso.steps = 0;
            tso.trace_dir.clear();
            tso.output = {};
            auto w = engine::make_script_workload(tso);
            engine::TuneResult r = engine::run_tune(*w, to);
            send(engine::write_live_tune_report(r, report_dir, trace_base, tune_index++));
            // The next live child runs the user's own settings with the tuned knobs over them.
            nlohmann::json changed = nlohmann::json::object();
            for (const auto& k : engine::changed_knobs(r.baseline, r.final_config)) {
              changed[k] = r.final_config.at(k);
              bool found = false;
              for (auto& [key, value] : so.set)
                if (key == k) value = r.final_config.at(k), found = true;
              if (!found) so.set.push_back({k, r.final_config.at(k)});
            }
            renumber.restart(changed);
          } catch (const std::exception& e) {
            send_error(std::string("auto-tune failed: ") + e.what(), true);
            renumber.restart(nlohmann::json::object());
          }
          // Its trace chunks in a folder of their own: the first child's names would be written again.
          if (!trace_base.empty()) {
            so.trace_dir = (std::filesystem::path(trace_base) / ("after-tune-" + std::to_string(tune_index))).string();
            std::filesystem::create_directories(so.trace_dir);
          }
          restart = true;  // the live run goes on, from the start of the script, with the tuned knobs
          break;
        }
      }
      if (restart) break;
      if (inbox.stop) {  // `stop`, or the end of stdin
        runner->stop(5);
        while (auto rest = runner->next(0.1))  // what it sent before it ended: its `done` with them
          if (rest->value("type", std::string()) == msg::done) child_done = rest->value("summary", nlohmann::json::object());
        send({{"type", msg::done},
              {"summary", loader_of_child({{"steps", steps}, {"reason", inbox.eof ? "stdin closed" : "stopped"},
                                           {"unit", "samples/s"}})}});
        finish(0);
      }
      auto m = runner->next(0.05);
      if (!m) {
        if (!runner->finished()) continue;
        const int code = runner->stop(5);
        send({{"type", msg::done}, {"summary", loader_of_child({{"steps", steps}, {"reason", code == 0 ? "completed" : "error"},
                                                             {"unit", "samples/s"}, {"exit_code", code}})}});
        finish(code == 0 ? 0 : 1);
      }
      const std::string type = m->value("type", std::string());
      if (type == msg::step) ++steps;
      if (type == msg::hello) continue;  // a restarted child: the parent already has one
      if (type == msg::done) {  // sent by us, with our step count, when the child is gone
        child_done = m->value("summary", nlohmann::json::object());
        continue;
      }
      if (auto out = renumber.map(std::move(*m)); !out.is_null()) send(std::move(out));
    }
  }
}

}  // namespace tb::cli
