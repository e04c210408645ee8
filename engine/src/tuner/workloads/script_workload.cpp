// The tuner's Workload over a user's script (engine/tuner.h make_script_workload): the script runs under
// python -m tunebench.launch (client/script_runner.h); knobs change live through the run protocol's `set`,
// windows are read from its step messages, and fresh processes are new children. Torch-free.
#include <chrono>
#include <limits>
#include <cmath>
#include <thread>

#include "client/script_runner.h"
#include "engine/cpu_allocator.h"
#include "engine/run_json.h"
#include "engine/tuner.h"
#include "client/protocol.h"
#include "measure/pass_rhythm.h"

namespace msg = tb::client::protocol::msg;

namespace tb::engine {
namespace {

KnobType type_of(const std::string& t) {
  return t == "bool" ? KnobType::Bool : t == "int" ? KnobType::Int : KnobType::Enum;
}

std::string text_of(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_null()) return "";
  return v.dump();
}

// The environment that gives the interpreter `allocator` (engine/cpu_allocator.h), as "K=V" entries.
std::vector<std::string> allocator_env(const std::string& allocator) {
  const std::string e = cpu_allocator_env(allocator);
  if (e.empty()) return {};
  return {e};
}

class ScriptWorkload : public Workload {
 public:
  explicit ScriptWorkload(const client::ScriptOptions& o) : opts_(o) {
    t0_ = std::chrono::steady_clock::now();
    // The allocator is the interpreter's process setting, not a launcher knob: the user's choice (--set) or
    // glibc's defaults are the baseline, measured in fresh processes; the live child runs glibc with pinned
    // thresholds, steady (engine/cpu_allocator.h: glibc's defaults change speed during a long process).
    for (auto it = opts_.set.begin(); it != opts_.set.end();)
      if (it->first == "cpu_allocator") {
        pinned_allocator_ = it->second;
        it = opts_.set.erase(it);
      } else {
        ++it;
      }
    live_allocator_ = pinned_allocator_.empty() ? "glibc_tuned" : pinned_allocator_;
    started_s_ = now_s();
    runner_ = start(opts_.set, live_allocator_);
    const auto& hello = runner_->hello();
    for (const auto& k : hello.value("knobs", nlohmann::json::array())) {
      KnobState s;
      s.info.id = k.value("id", std::string());
      s.info.title = k.value("title", s.info.id);
      s.info.description = k.value("description", std::string());
      s.info.type = type_of(k.value("type", std::string("enum")));
      s.info.default_value = text_of(k.value("default", nlohmann::json()));
      s.info.recommended_value = text_of(k.value("recommended", nlohmann::json()));
      for (const auto& c : k.value("choices", nlohmann::json::array())) s.info.choices.push_back(text_of(c));
      if (s.info.type == KnobType::Bool && s.info.choices.empty()) s.info.choices = {"off", "on"};
      s.info.min = k.value("min", int64_t(0));
      s.info.max = k.value("max", int64_t(0));
      s.info.changes_numerics = k.value("changes_numerics", false);
      s.info.process_scope = k.value("process_scope", false);
      s.info.applies_to = k.value("applies_to", std::string("scripts"));
      s.info.pytorch_snippet = k.value("pytorch_snippet", std::string());
      s.value = text_of(k.value("value", nlohmann::json()));
      s.applicability.applicable = k.value("applicable", true);
      s.applicability.reason = k.value("reason", std::string());
      for (const auto& u : k.value("unavailable_values", nlohmann::json::array()))
        s.applicability.unavailable_values.push_back(text_of(u));
      baseline_[s.info.id] = s.value;
      knobs_.push_back(std::move(s));
    }
    if (const KnobInfo* alloc = find_knob("cpu_allocator")) {
      KnobState s;
      s.info = *alloc;
      s.value = pinned_allocator_.empty() ? "glibc" : pinned_allocator_;
      for (const auto& v : cpu_allocator_values())
        if (auto why = cpu_allocator_unavailable(v); !why.empty()) {
          s.applicability.unavailable_values.push_back(v);
          s.applicability.reason += (s.applicability.reason.empty() ? "" : "; ") + why;
        }
      baseline_[s.info.id] = s.value;
      knobs_.push_back(std::move(s));
    }
    current_ = baseline_;
  }

  std::vector<KnobState> knobs() override { return knobs_; }
  Config baseline() override { return baseline_; }

  void apply(const Config& config) override {
    ensure_running();
    before_apply_ = current_;
    for (const auto& [k, v] : config) {
      auto it = current_.find(k);
      if (it == current_.end() || it->second == v) continue;
      if (k == "batch_size") rhythm_.reset();  // another batch size, another pass length
      // The live child keeps its measurement allocator; cpu_allocator is measured in fresh processes. Any
      // other process knob here would be a trial measuring a configuration it does not run: refuse it
      // (persistent_workers, once process-scope, was dropped from the workers rung without a word).
      if (k == "cpu_allocator") continue;
      if (process_knob(k))
        throw TrialFailure(k + "=" + v + " takes effect when the script starts: it cannot be changed in the "
                           "running script", false);
      runner_->send({{"type", msg::set}, {"knob", k}, {"value", v}});
      // Wait for its answer; steps that arrive meanwhile belong to neither configuration.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      for (;;) {
        if (std::chrono::steady_clock::now() > deadline)
          throw TrialFailure("the script did not answer `set " + k + "=" + v + "` within 60 s", false);
        auto m = runner_->next(1.0);
        if (!m) {
          if (runner_->finished()) {  // the script ended: the next start takes the whole configuration
            current_[k] = v;
            break;
          }
          continue;
        }
        const std::string type = m->value("type", std::string());
        if (type == msg::config_applied) {
          current_[k] = v;
          break;
        }
        if (type == msg::error) throw TrialFailure(m->value("message", std::string("the script refused ") + k), false);
        if (type == msg::step) live_step(*m);
        note(*m);
      }
    }
  }

  measure::Window measure(int steps) override {
    measure::Window w;
    int64_t measured = 0;
    double last = -1;
    // The script's epochs are no noise (measure/pass_rhythm.h): short passes make windows of whole passes, the
    // first step of a long one is left out.
    const int want = rhythm_.window_steps(steps);
    const bool leave_out_starts = rhythm_.leaves_out_pass_starts(steps);
    if (const std::string said = rhythm_.said(steps); !said.empty()) rhythm_said_ = said;
    window_steps_ = want;
    left_out_starts_ = leave_out_starts;
    const double waited_from = now_s();
    while (measured < want) {
      ensure_running();
      if (measured == 0 && now_s() > warmup_deadline_s_) give_up_warmup(now_s() - waited_from);
      auto m = runner_->next(std::min(600.0, 1.0));
      if (!m) {
        if (runner_->finished()) continue;  // ensure_running() restarts it
        if (runner_->seconds_since_step() > 600) throw TrialFailure("no optimizer step for 600 s", false);
        continue;
      }
      const std::string type = m->value("type", std::string());
      if (type == msg::error) throw TrialFailure(m->value("message", std::string("the script failed")), false);
      if (type != msg::step) {
        note(*m);
        continue;
      }
      const bool pass_start = live_step(*m);
      // torch.compile's time in a step is paid once: said as the window's one-time cost, the step unmeasured.
      const int64_t compile_ns = m->value("compile_ns", int64_t(0));
      w.one_time_s += compile_ns * 1e-9;
      if (m->value("warmup", false) || compile_ns > 0) {
        ++w.warmup_steps;
        continue;
      }
      if (leave_out_starts && pass_start) continue;
      // A step that began before the script was last let go on spanned a fresh process's window (or was
      // sent before it): it belongs to no window here.
      if (m->value("t_ns", int64_t(0)) < runner_->resumed_ns()) continue;
      ++process_measured_;
      if (measured == 0) w.start_s = now_s() - m->value("wall_ns", int64_t(0)) * 1e-9;
      if (first_measured_s_ < 0 && restarts_ == 0) first_measured_s_ = w.start_s - started_s_;
      ++measured;
      ++w.steps;
      w.samples += client::protocol::evaluated_samples(*m);
      note_evaluations(*m);
      w.wall_s += m->value("wall_ns", int64_t(0)) * 1e-9;
      w.data_wait_s += m->value("data_wait_ns", int64_t(0)) * 1e-9;
      w.minor_faults += m->value("minor_faults", int64_t(0));
      if (m->contains("memory")) add_step_memory(w, memory_of_json((*m)["memory"]));
      last = now_s();
    }
    (void)last;
    return w;
  }

  std::optional<measure::Window> measure_fresh(const Config& config, int steps) override {
    const Paused paused(*runner_);
    auto it = config.find("cpu_allocator");
    auto r = start(pairs_of(config), it == config.end() ? std::string("glibc") : it->second);
    return window_of(*r, steps, config);
  }

  std::optional<measure::Window> measure_patched(const std::vector<std::pair<std::string, std::string>>& sources,
                                                 int steps) override {
    const Paused paused(*runner_);
    auto it = baseline_.find("cpu_allocator");
    auto r = start(pairs_of(baseline_), it == baseline_.end() ? std::string("glibc") : it->second, sources);
    return window_of(*r, steps, baseline_);
  }

  void release() override {
    if (runner_) runner_->stop(5);
  }

  void give_up_warmup_at(double at_s) override { warmup_deadline_s_ = at_s; }

  std::vector<double> loss_probe(const Config&, int) override {
    throw TrialFailure("no loss probe for scripts", false);
  }
  bool has_loss_probe() const override { return false; }

  double now_s() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }
  std::string measurement_allocator() const override { return live_allocator_; }
  double start_s() const override { return first_measured_s_; }
  // A step(closure) script's windows count its batch once per evaluation (client/protocol.h evaluated_samples):
  // the range seen, said once as the rate's unit.
  void note_evaluations(const nlohmann::json& step) {
    const int64_t e = step.value("evaluations", int64_t(0));
    if (e <= 0) return;
    evaluations_lo_ = evaluations_lo_ > 0 ? std::min(evaluations_lo_, e) : e;
    evaluations_hi_ = std::max(evaluations_hi_, e);
  }

  int pass_steps_outside_windows() const override { return left_out_starts_ ? rhythm_.pass_steps() : 0; }
  int cpu_cores() override {
    return std::max(1, runner_->hello().value(nlohmann::json::json_pointer("/device/cores"), 1));
  }
  nlohmann::json describe() override {
    const auto& h = runner_->hello();
    nlohmann::json j;
    const auto d = h.value("device", nlohmann::json::object());
    j["device"] = d.value("kind", std::string("cpu")) + ": " + d.value("name", std::string("?")) +
                  (d.contains("cores") ? " (" + d["cores"].dump() + " cores)" : "");
    j["versions"] = h.value("versions", nlohmann::json::object());
    j["model"] = "script:" + opts_.script;
    std::string args;
    for (const auto& a : opts_.args) args += (args.empty() ? "" : " ") + a;
    j["data"] = args.empty() ? std::string("(no arguments)") : args;
    j["python"] = runner_->python().path;
    j["measurement_allocator"] = live_allocator_ + (pinned_allocator_.empty()
                                                        ? " (the live script's interpreter, for steady windows; "
                                                          "cpu_allocator is measured in fresh processes)"
                                                        : "");
    if (!sources_.empty()) j["source"] = sources_;
    if (!notes_.empty()) j["script_warnings"] = notes_;
    if (!rhythm_said_.empty()) j["windows"] = rhythm_said_;
    if (evaluations_hi_ > 0) j["rate"] = client::protocol::per_evaluation_text(evaluations_lo_, evaluations_hi_);
    return j;
  }

 private:
  // The live script stands still while a fresh process is measured beside it (client/script_runner.h pause).
  struct Paused {
    client::ScriptRunner& r;
    explicit Paused(client::ScriptRunner& x) : r(x) { r.pause(); }
    ~Paused() { r.resume(); }
  };

  // `steps` measured steps of a fresh process, which then stops.
  // A fresh process's window: whole passes, or without the passes' first steps, as the live process's rhythm
  // says for the same batch size (a fresh process starts at its first pass).
  measure::Window window_of(client::ScriptRunner& r, int steps, const Config& config) {
    measure::Window w;
    int64_t measured = 0;
    const bool same_passes = value_of(config, "batch_size") == value_of(current_, "batch_size");
    const int want = same_passes ? rhythm_.window_steps(steps) : steps;
    const bool leave_out_starts = same_passes && rhythm_.leaves_out_pass_starts(steps);
    measure::PassRhythm passes;
    while (measured < want) {
      auto m = r.next(1.0);
      if (!m) {
        if (r.finished()) throw TrialFailure("the script ended before " + std::to_string(steps) + " measured steps", false);
        if (r.seconds_since_step() > 600) throw TrialFailure("no optimizer step for 600 s", false);
        continue;
      }
      if (m->value("type", std::string()) == msg::error) throw TrialFailure(m->value("message", std::string("failed")), false);
      if (m->value("type", std::string()) != msg::step) continue;
      const bool pass_start = passes.step(m->value("loader_pass", int64_t(0)), m->value("loader_len", int64_t(0)));
      const int64_t compile_ns = m->value("compile_ns", int64_t(0));  // paid once: unmeasured, said apart
      w.one_time_s += compile_ns * 1e-9;
      if (m->value("warmup", false) || compile_ns > 0) continue;
      if (leave_out_starts && pass_start) continue;
      if (measured == 0) w.start_s = now_s();
      ++measured;
      ++w.steps;
      w.samples += client::protocol::evaluated_samples(*m);
      note_evaluations(*m);
      w.wall_s += m->value("wall_ns", int64_t(0)) * 1e-9;
      if (m->contains("memory")) add_step_memory(w, memory_of_json((*m)["memory"]));
    }
    r.stop(5);
    return w;
  }

  std::vector<std::pair<std::string, std::string>> pairs_of(const Config& c) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [k, v] : c) {
      if (k == "cpu_allocator") continue;  // the environment's, not the launcher's
      auto it = baseline_.find(k);
      // Only what differs from the script's own values: a knob left alone stays what the script wrote.
      if (baseline_.empty() || it == baseline_.end() || it->second != v) out.push_back({k, v});
    }
    return out;
  }

  std::unique_ptr<client::ScriptRunner> start(const std::vector<std::pair<std::string, std::string>>& set,
                                               const std::string& allocator,
                                               const std::vector<std::pair<std::string, std::string>>& sources = {}) {
    client::ScriptOptions o = opts_;
    o.children_to_end = false;  // nothing to tune in a process that makes no step: said at once
    o.set = set;
    o.sources = sources;
    o.env = allocator_env(allocator);
    if (allocator == "jemalloc" || allocator == "tcmalloc") {
      if (cpu_allocator_library(allocator).empty()) throw TrialFailure(cpu_allocator_unavailable(allocator), false);
    }
    for (const auto& kv : opts_.set)
      if (std::none_of(set.begin(), set.end(), [&](const auto& x) { return x.first == kv.first; })) o.set.push_back(kv);
    auto r = std::make_unique<client::ScriptRunner>();
    if (Status st = r->start(o); !st) throw TrialFailure(st.error().message, false);
    if (!r->hello().is_object())  // client/script_runner.h: the training ran in child processes, now ended
      throw TrialFailure("the training runs in child processes (torch.multiprocessing), which TuneBench does not "
                         "follow: there is no step in this process to tune", false);
    return r;
  }

  // The script ended (its epochs are done) or crashed between windows: start it again where the tune is.
  // A script whose whole run is shorter than one window would be restarted for every window, each start
  // paying its imports and warm-up (one of 4 LBFGS steps restarted 50 times took 318 s of a 40 s budget):
  // after two such runs in a row the tune stops and says so.
  void ensure_running() {
    if (!runner_->finished()) return;
    runner_->stop(5);
    ++restarts_;
    short_runs_ = process_measured_ < std::max(1, window_steps_) ? short_runs_ + 1 : 0;
    if (short_runs_ >= 2)
      throw TrialFailure("the script ends after " + std::to_string(process_steps_) + " optimizer steps (" +
                             std::to_string(process_measured_) + " past its warm-up), shorter than one measuring "
                             "window of " + std::to_string(std::max(1, window_steps_)) +
                             " steps, twice in a row: give it more epochs or steps so one run holds several windows",
                         false);
    if (restarts_ > 50) throw TrialFailure("the script ended 50 times during the tune: give it more epochs", false);
    process_steps_ = process_measured_ = 0;
    rhythm_.restart();  // the new process begins at its first pass; the passes' length stays known
    runner_ = start(pairs_of(current_), live_allocator_);
  }

  // The warm-up after the last apply (a compile) ran past the tuner's deadline: the script is stopped and
  // started again under the configuration before that apply (a `set` back would wait for the compile's step).
  [[noreturn]] void give_up_warmup(double waited_s) {
    runner_->stop(5);
    current_ = before_apply_;
    process_steps_ = process_measured_ = 0;
    rhythm_.restart();
    ++restarts_;
    runner_ = start(pairs_of(current_), live_allocator_);
    TrialFailure f("still in its warm-up (compiling) after " + std::to_string(int(waited_s)) + " s: stopped, and the script "
                   "started again without the change",
                   false);
    f.gave_up_after_s = waited_s;
    throw f;
  }

  bool process_knob(const std::string& id) const {
    for (const auto& k : knobs_)
      if (k.info.id == id) return k.info.process_scope;
    return false;
  }

  // A step of the live process: counted, and its pass read (returns whether it began a pass).
  bool live_step(const nlohmann::json& m) {
    ++process_steps_;
    return rhythm_.step(m.value("loader_pass", int64_t(0)), m.value("loader_len", int64_t(0)));
  }

  static std::string value_of(const Config& c, const std::string& k) {
    auto it = c.find(k);
    return it == c.end() ? std::string() : it->second;
  }

  void note(const nlohmann::json& m) {
    const std::string type = m.value("type", std::string());
    if (type == msg::source) sources_.push_back(m);
    // The launcher's stall warning after the tune held the script still (pause) is the tune's doing.
    if (type == msg::warning && m.value("kind", std::string()) == "stalled" && runner_ && runner_->resumed_ns() > 0) return;
    if (type == msg::warning && notes_.size() < 20) notes_.push_back(m.value("message", std::string()));
  }

  client::ScriptOptions opts_;
  std::unique_ptr<client::ScriptRunner> runner_;
  std::vector<KnobState> knobs_;
  Config baseline_, current_;
  Config before_apply_;  // the configuration before the last apply(): a warm-up given up returns to it
  double warmup_deadline_s_ = std::numeric_limits<double>::infinity();
  std::vector<nlohmann::json> sources_;
  std::vector<std::string> notes_;
  int restarts_ = 0;
  int64_t evaluations_lo_ = 0, evaluations_hi_ = 0;  // a step(closure) call's evaluations seen in windows
  int window_steps_ = 1, short_runs_ = 0;       // the window asked for last; runs in a row shorter than it
  int process_steps_ = 0, process_measured_ = 0;  // the live child's steps (all, past warm-up) since its start
  double started_s_ = 0, first_measured_s_ = -1;  // the live child's start, its first measured step
  std::string pinned_allocator_, live_allocator_;
  std::chrono::steady_clock::time_point t0_;
  measure::PassRhythm rhythm_;  // the live process's passes of its training loader
  std::string rhythm_said_;     // what the windows did with them, once they did something
  bool left_out_starts_ = false;  // the last window left the passes' first steps out (long passes)
};

}  // namespace

std::unique_ptr<Workload> make_script_workload(const client::ScriptOptions& options) {
  return std::make_unique<ScriptWorkload>(options);
}

}  // namespace tb::engine
