#include "gate/runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <cstdio>
#include <memory>
#include <optional>

#include "client/launch.h"
#include "client/protocol.h"
#include "client/script_runner.h"

#include "gate_util.h"

namespace msg = tb::client::protocol::msg;

namespace tb::gate {
namespace {

struct ProcessFailure {
  std::string message;
};

// The last line the script printed that says something (a traceback's last line), "" when none.
std::string last_words(const std::vector<std::string>& tail) {
  for (auto it = tail.rbegin(); it != tail.rend(); ++it)
    if (!it->empty()) return *it;
  return "";
}

// The engine's run (`tunebench-cli run ARGS --steps N --json F`, this program started again): its measured
// steps as one window, read from the run JSON's "window". Throws ProcessFailure with the run's own error line.
ProcessRun run_engine_process(const GateOptions& o, const Side& side, int pair, GateResult& result,
                              const std::string& trace_dir) {
  ProcessRun run;
  run.side = side.name;
  run.pair = pair;
  const double t0 = now_s();
  char tmpl[] = "/tmp/tunebench-gate-run-XXXXXX";
  if (!::mkdtemp(tmpl)) throw ProcessFailure{"cannot make a temporary folder"};
  const std::string dir = tmpl, json = dir + "/run.json", err = dir + "/stderr";
  struct Remove {
    std::string d;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } remove{dir};
  std::vector<std::string> argv = {client::self_exe(), "run"};
  argv.insert(argv.end(), side.engine.begin(), side.engine.end());
  argv.insert(argv.end(), {"--steps", std::to_string(o.steps), "--json", json});
  if (!trace_dir.empty()) argv.insert(argv.end(), {"--trace", trace_dir + "/run.json"});
  const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  auto p = client::Process::launch({.argv = argv, .in = client::kDevNull, .out = client::kDevNull,
                                    .err = err_fd >= 0 ? err_fd : client::kDevNull, .own_group = true});
  if (err_fd >= 0) ::close(err_fd);
  if (!p) throw ProcessFailure{p.error().message};
  const double limit = o.first_step_timeout_s + o.step_timeout_s;
  while (!p->poll()) {
    if (o.cancelled && o.cancelled()) {
      p->stop();
      throw ProcessFailure{"cancelled (a signal asked the gate to stop)"};
    }
    if (now_s() - t0 > limit) {
      p->stop();
      throw ProcessFailure{"the run did not end in " + std::to_string(int(limit)) + " s: it hangs"};
    }
    ::usleep(50000);
  }
  std::ifstream ef(err);
  std::vector<std::string> lines;
  for (std::string l; std::getline(ef, l);) lines.push_back(l);
  std::string said;  // the run's own error line, else its last line
  for (const auto& l : lines)
    if (l.find("error: ") != std::string::npos) said = l.substr(l.find("error: ") + 7);
  if (said.empty()) said = last_words(lines);
  if (p->exit_code() != 0) throw ProcessFailure{said.empty() ? "the run failed" : said};
  std::ifstream jf(json);
  const auto j = nlohmann::json::parse(jf, nullptr, false);
  if (!j.is_object() || !j.contains("window")) throw ProcessFailure{"the run wrote no measured window" + (said.empty() ? "" : ": " + said)};
  const auto& w = j["window"];
  run.window.steps = w.value("steps", 0);
  run.window.samples = w.value("samples", int64_t(0));
  run.window.wall_s = w.value("wall_s", 0.0);
  run.window.warmup_steps = w.value("warmup_steps", 0);
  run.window.start_s = t0;
  if (run.window.steps < 3 || !(run.window.wall_s > 0))
    throw ProcessFailure{"only " + std::to_string(run.window.steps) + " steps were past the warm-up: give each process "
                         "more with --steps N (now " + std::to_string(o.steps) + ")"};
  if (result.hello.is_null())
    result.hello = {{"versions", {{"torch", j.value(nlohmann::json::json_pointer("/versions/libtorch"), std::string())}}},
                    {"device", j.value("device", nlohmann::json::object())}};
  if (!trace_dir.empty()) run.chunks.push_back(trace_dir + "/run.json");
  run.seconds = now_s() - t0;
  return run;
}

// One fresh process of `side`: its measured steps as one window. Throws ProcessFailure with the script's own
// error line.
ProcessRun run_process(const GateOptions& o, const Side& side, int pair, GateResult& result,
                       const std::string& trace_dir = "") {
  if (o.cancelled && o.cancelled()) throw ProcessFailure{"cancelled (a signal asked the gate to stop)"};
  if (!side.engine.empty()) return run_engine_process(o, side, pair, result, trace_dir);
  ProcessRun run;
  run.side = side.name;
  run.pair = pair;
  const double t0 = now_s();
  client::ScriptOptions so;
  so.script = side.script;
  so.args = o.args;
  so.python = o.python;
  so.steps = o.steps;
  so.set = side.set;
  so.cancelled = o.cancelled;
  so.timeout_option = "--first-step-timeout";
  if (!trace_dir.empty()) {
    so.trace_dir = trace_dir;
    so.trace_share = 0;  // every step: one window of each side, whole
  }
  client::ScriptRunner r;
  if (Status st = r.start(so, o.first_step_timeout_s); !st) throw ProcessFailure{st.error().message};
  if (!r.hello().is_object())
    throw ProcessFailure{"the training runs in child processes (torch.multiprocessing), which the gate does not follow"};
  if (result.python.empty()) {
    result.python = r.python().path;
    result.torch_version = r.python().torch_version;
    result.hello = r.hello();
  }
  int64_t all = 0;
  for (;;) {
    if (o.cancelled && o.cancelled()) {
      r.stop(5);
      throw ProcessFailure{"cancelled (a signal asked the gate to stop)"};
    }
    auto m = r.next(1.0);
    if (!m) {
      if (r.finished()) break;
      if (r.seconds_since_step() > o.step_timeout_s) {
        r.stop(5);
        throw ProcessFailure{"no training step for " + std::to_string(int(o.step_timeout_s)) +
                             " s: the script hangs (--step-timeout S waits longer)"};
      }
      continue;
    }
    const std::string type = m->value("type", std::string());
    if (type == msg::error) {
      r.stop(5);
      throw ProcessFailure{m->value("message", std::string("the script failed"))};
    }
    if (type == msg::done) break;
    if (type == msg::trace || type == msg::trace_lanes) run.chunks.push_back(m->value("path", std::string()));
    if (type != msg::step) continue;
    ++all;
    if (m->value("warmup", false)) {
      ++run.window.warmup_steps;
      continue;
    }
    if (run.window.steps == 0) run.window.start_s = now_s();
    ++run.window.steps;
    const int64_t samples = m->value("samples", int64_t(0));
    if (samples <= 0) result.unit = "steps/s";
    run.window.samples += samples > 0 ? samples : 1;
    run.window.wall_s += double(m->value("wall_ns", int64_t(0))) * 1e-9;
  }
  const int code = r.stop(10);
  if (code != 0 && all < o.steps) {
    const std::string words = last_words(r.output_tail());
    throw ProcessFailure{"the script " + (code < 0 ? "was killed" : "exited with code " + std::to_string(code)) +
                         " after " + std::to_string(all) + " steps" + (words.empty() ? "" : ": " + words)};
  }
  if (run.window.steps < 3) {
    // The script's own end came first (its epochs are few): --steps only caps a run, its arguments lengthen it.
    if (all < o.steps)
      throw ProcessFailure{"the script ended by itself after " + std::to_string(all) + " optimizer steps, " +
                           std::to_string(run.window.steps) + " of them past the warm-up: give it more (its epochs or "
                           "steps, in its arguments after --) so that a process measures 3 or more"};
    throw ProcessFailure{"only " + std::to_string(run.window.steps) + " of its " + std::to_string(all) +
                         " steps were past the warm-up: give each process more with --steps N (now " +
                         std::to_string(o.steps) + ")"};
  }
  run.seconds = now_s() - t0;
  return run;
}

}  // namespace

GateResult run_gate(const GateOptions& o) {
  GateResult res;
  const double t0 = now_s();
  const measure::LoadProbe probe;
  measure::GateSequence seq(o.rule);
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  // One pair in the order asked; the windows come back as (baseline, candidate).
  auto pair = [&](int index, bool baseline_first) {
    const Side* order[2] = {&o.baseline, &o.candidate};
    if (!baseline_first) std::swap(order[0], order[1]);
    ProcessRun got[2];
    for (int k = 0; k < 2; ++k) {
      auto run = run_one(o, *order[k], index, res);
      if (!run) throw ProcessFailure{run.error().message};
      got[k] = *run;
      res.runs.push_back(got[k]);
      say((index == 0 ? std::string("warm-up pair") : "pair " + std::to_string(index)) + ": " + order[k]->name + " " +
          fmt("%.1f ", got[k].window.throughput()) + res.unit + " (" + std::to_string(got[k].window.steps) +
          " steps measured, " + fmt("%.1f s)", got[k].seconds));
    }
    return baseline_first ? std::make_pair(got[0].window, got[1].window) : std::make_pair(got[1].window, got[0].window);
  };
  try {
    for (int w = 0; w < o.warmup_pairs; ++w) pair(0, true);
    double pair_s = o.warmup_pairs > 0 ? now_s() - t0 : 0;
    for (;;) {
      const double elapsed = now_s() - t0;
      if (seq.pairs() > 0) pair_s = elapsed / double(seq.pairs() + o.warmup_pairs);
      if (elapsed + pair_s > o.max_time_s) {
        res.stopped = "--max-time " + std::to_string(int(o.max_time_s)) + " s spent (a pair takes about " +
                      fmt("%.0f s)", pair_s);
        break;
      }
      const auto [a, b] = pair(seq.pairs() + 1, seq.baseline_first_next());
      seq.add(a, b);
      if (seq.look_due()) {
        res.look = seq.look();
        say("look at " + std::to_string(seq.pairs()) + " pairs: " + res.look.text());
        if (res.look.verdict != measure::GateVerdict::kUndecided) {
          res.stopped = "decided at pair " + std::to_string(seq.pairs());
          break;
        }
      }
    }
    if (seq.pairs() > 0 && !seq.look_due()) res.look = seq.look();  // the last pair is a look too
    else if (seq.pairs() == 0) res.look = measure::GateLook{};
    res.ran = true;
  } catch (const ProcessFailure& f) {
    res.failure = f.message;
  }
  res.baseline_throughput = measure::pooled_throughput(seq.baseline());
  res.candidate_throughput = measure::pooled_throughput(seq.candidate());
  res.seconds = now_s() - t0;
  res.load = probe.stop();
  return res;
}

Result<ProcessRun> run_one(const GateOptions& o, const Side& side, int index, GateResult& result) {
  try {
    return run_process(o, side, index, result);
  } catch (const ProcessFailure& f) {
    return Error{side.name + " (" + side.describe + "): " + f.message};
  }
}

Result<std::vector<std::string>> traced_process(const GateOptions& o, const Side& side, const std::string& trace_dir) {
  GateResult scratch;
  try {
    return run_process(o, side, -1, scratch, trace_dir).chunks;
  } catch (const ProcessFailure& f) {
    return Error{side.name + " (" + side.describe + "), traced: " + f.message};
  }
}

}  // namespace tb::gate
