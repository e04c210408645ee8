// Which knobs a script's tune tries is decided before anything is measured: after the script's first step the
// launcher says which of its knobs apply to it (python/tunebench/knobs.py: a loader knob only to a script whose
// steps draw from a DataLoader), and the tuner skips what does not apply, saying why. Tested here on what the
// launcher really says of two shapes a new user tried (`tune --script`), through a tune whose windows are recorded
// figures on a clock of their own: a fast script with a hand-written update and no DataLoader (its tune once tried
// `workers` four times and wrote a 12.82x patch) tries no loader knob and says why; an LSTM over a DataLoader has
// its loader knobs to try. Whether a 40 s tune of each shape (and of a script that takes seconds to start) tries a
// knob within its budget is a measurement of this machine: bench/bench_script.py --shapes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/script_runner.h"
#include "engine/tuner.h"

namespace {

using namespace tb::engine;
namespace fs = std::filesystem;

const std::set<std::string> kLoaderKnobs = {"workers", "pin_memory", "prefetch", "persistent_workers"};

// A script's knobs as its launcher described them, over windows that are recorded figures: 10 ms a step, 1.5x
// faster with loader workers (were they tried), the same otherwise, each window off by a fixed pattern of 1% so
// that the noise floor has a spread. The clock is the windows' own: the tune takes no time.
class RecordedScript : public Workload {
 public:
  explicit RecordedScript(std::vector<KnobState> knobs) : knobs_(std::move(knobs)) {
    for (const auto& k : knobs_) base_[k.info.id] = k.value;
    current_ = base_;
  }
  std::vector<KnobState> knobs() override { return knobs_; }
  Config baseline() override { return base_; }
  void apply(const Config& c) override {
    current_ = c;
  }
  tb::measure::Window measure(int steps) override {
    const bool workers = current_.count("workers") && current_["workers"] != "0";
    tb::measure::Window w;
    w.steps = steps;
    w.samples = 16 * int64_t(steps);
    w.warmup_steps = 2;
    w.wall_s = steps * 0.010 / (workers ? 1.5 : 1.0) * (1 + 0.01 * double(int(++n_ % 3) - 1));
    clock_ += 0.02;
    w.start_s = clock_;
    clock_ += w.wall_s;
    return w;
  }
  std::vector<double> loss_probe(const Config&, int) override { throw TrialFailure("no loss probe for scripts", false); }
  bool has_loss_probe() const override { return false; }
  double now_s() override { return clock_; }
  int cpu_cores() override { return 2; }
  nlohmann::json describe() override { return {{"model", "script:recorded.py"}, {"device", "cpu: recorded"}}; }

 private:
  std::vector<KnobState> knobs_;
  Config base_, current_;
  double clock_ = 0;
  int n_ = 0;
};

class CliTuneShapes : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("tb_tune_shapes_" + std::to_string(::getpid()))).string();
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The tune's own workload of `script`, under the project's Python.
  static std::unique_ptr<Workload> script_workload(const std::string& script, const std::vector<std::string>& args = {}) {
    tb::client::ScriptOptions o;
    o.script = script;
    o.args = args;
    o.python = TB_TEST_PYTHON;
    return make_script_workload(o);
  }
  // The knobs the launcher describes for `script` after its first step (the tune's own workload, stopped again).
  static std::vector<KnobState> launcher_knobs(const std::string& script, const std::vector<std::string>& args = {}) {
    auto w = script_workload(script, args);
    auto k = w->knobs();
    w->release();
    return k;
  }
  static const KnobState* knob(const std::vector<KnobState>& ks, const std::string& id) {
    for (const auto& k : ks)
      if (k.info.id == id) return &k;
    return nullptr;
  }
  // A 40 s tune over the recorded windows.
  static TuneResult tune(const std::vector<KnobState>& knobs) {
    RecordedScript w(knobs);
    TuneOptions o;
    o.budget_s = 40;
    return run_tune(w, o);
  }
  static std::set<std::string> tried(const TuneResult& r) {
    std::set<std::string> s;
    for (const auto& t : r.trials)
      if (!t.knob.empty()) s.insert(t.knob);
    return s;
  }

  std::string dir_;
};

TEST_F(CliTuneShapes, AFastScriptWithoutALoaderTriesNoLoaderKnob) {
  const std::string s = dir_ + "/regression.py";
  std::ofstream(s) << "import torch\n"
                      "torch.manual_seed(0)\n"
                      "w = torch.zeros(8, 1, requires_grad=True)\n"
                      "b = torch.zeros(1, requires_grad=True)\n"
                      "x = torch.randn(512, 8); y = x @ torch.arange(8.0).view(8, 1) + 1\n"
                      "for step in range(10 ** 7):\n"
                      "    loss = ((x @ w + b - y) ** 2).mean()\n"
                      "    loss.backward()\n"
                      "    with torch.no_grad():\n"
                      "        w -= 0.01 * w.grad; b -= 0.01 * b.grad\n"
                      "        w.grad.zero_(); b.grad.zero_()\n";
  const auto knobs = launcher_knobs(s);
  for (const auto& id : kLoaderKnobs) {
    const KnobState* k = knob(knobs, id);
    ASSERT_NE(k, nullptr) << id;
    EXPECT_FALSE(k->applicability.applicable) << id;
  }
  EXPECT_NE(knob(knobs, "workers")->applicability.reason.find("no DataLoader"), std::string::npos)
      << knob(knobs, "workers")->applicability.reason;
  const TuneResult r = tune(knobs);
  const auto t = tried(r);
  EXPECT_FALSE(t.empty()) << r.ended;  // other knobs are tried
  for (const auto& k : t) EXPECT_FALSE(kLoaderKnobs.count(k)) << k;
  bool said = false;
  for (const auto& sk : r.skipped)
    said |= sk.knob == "workers" && sk.reason.rfind("not applicable here: ", 0) == 0 &&
            sk.reason.find("no DataLoader") != std::string::npos;
  EXPECT_TRUE(said) << r.ended;
}

TEST_F(CliTuneShapes, AnLstmOverADataLoaderHasItsLoaderKnobsToTry) {
  const auto knobs =
      launcher_knobs(std::string(TB_SOURCE_DIR) + "/python/tests/corpus/rnn_classify.py", {"--epochs", "100000"});
  const KnobState* workers = knob(knobs, "workers");
  ASSERT_NE(workers, nullptr);
  EXPECT_TRUE(workers->applicability.applicable) << workers->applicability.reason;
  EXPECT_EQ(workers->value, "0");
  const TuneResult r = tune(knobs);
  EXPECT_TRUE(tried(r).count("workers")) << r.ended;
}

// LBFGS's step(closure) evaluates its closure several times a step (here, with a strong-Wolfe line search on a fresh
// mini-batch each step, 6-7 times; a full-batch fit converges to once a step), and each step's time follows: a
// window counts the batch (256 rows) once per evaluation, and the workload says so. Counted once a step, a
// converging LBFGS script's windows varied by ±192%.
TEST_F(CliTuneShapes, AClosureStepCountsItsBatchOncePerEvaluation) {
  const std::string s = dir_ + "/lbfgs_minibatch.py";
  std::ofstream(s) << "import torch\n"
                      "from torch import nn\n"
                      "torch.manual_seed(0)\n"
                      "X = torch.randn(4096, 16)\n"
                      "Y = torch.sin(X @ torch.randn(16, 1))\n"
                      "model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))\n"
                      "opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=5, history_size=10,\n"
                      "                        line_search_fn='strong_wolfe')\n"
                      "for step in range(10 ** 7):\n"
                      "    idx = torch.randint(0, 4096, (256,))\n"
                      "    x, y = X[idx], Y[idx]\n"
                      "    def closure():\n"
                      "        opt.zero_grad()\n"
                      "        loss = nn.functional.mse_loss(model(x), y)\n"
                      "        loss.backward()\n"
                      "        return loss\n"
                      "    loss = opt.step(closure)\n"
                      "    if step % 100 == 0:\n"
                      "        print(step, loss.item())\n";
  auto w = script_workload(s);
  (void)w->knobs();
  const auto win = w->measure(20);
  const nlohmann::json d = w->describe();
  w->release();
  ASSERT_EQ(win.steps, 20);
  EXPECT_EQ(win.samples % 256, 0) << win.samples;
  EXPECT_GE(win.samples, 256 * 2 * win.steps) << "the closure's evaluations were not counted";
  EXPECT_LE(win.samples, 256 * 7 * win.steps);  // at most max_eval = 5 * 5 / 4 a step
  ASSERT_TRUE(d.contains("rate")) << d.dump();
  EXPECT_EQ(d["rate"].get<std::string>().rfind("per closure evaluation: ", 0), 0u) << d["rate"];
}

// The tuner's deadline on a compile (Workload::give_up_warmup_at) on a real script: a compile=on window whose
// deadline has passed stops the script, starts it again without the change and says how long it waited; the
// next window measures the script as it was, compiling nothing.
TEST_F(CliTuneShapes, ACompileGivenUpAtItsDeadlineLeavesTheScriptAsItWas) {
  const std::string s = dir_ + "/fit.py";
  std::ofstream(s) << "import torch\n"
                      "from torch import nn\n"
                      "model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))\n"
                      "opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)\n"
                      "sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.5)\n"
                      "for step in range(10 ** 7):\n"
                      "    x = torch.randn(32, 16)\n"
                      "    loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))\n"
                      "    opt.zero_grad()\n"
                      "    loss.backward()\n"
                      "    opt.step()\n"
                      "    sched.step()\n";
  auto w = script_workload(s);
  const auto knobs = w->knobs();
  ASSERT_TRUE(std::any_of(knobs.begin(), knobs.end(), [](const KnobState& k) { return k.info.id == "compile"; }));
  const Config base = w->baseline();
  ASSERT_NE(base.at("compile"), "on");
  w->apply(base);
  ASSERT_EQ(w->measure(5).steps, 5);
  Config compiled = base;
  compiled["compile"] = "on";
  w->apply(compiled);
  w->give_up_warmup_at(w->now_s());  // already past: given up at once, whatever the compile takes here
  double gave_up = -1;
  try {
    (void)w->measure(5);
  } catch (const TrialFailure& f) {
    gave_up = f.gave_up_after_s;
    EXPECT_NE(std::string(f.what()).find("started again without the change"), std::string::npos) << f.what();
  }
  EXPECT_GE(gave_up, 0) << "the window ran past its deadline";
  w->give_up_warmup_at(std::numeric_limits<double>::infinity());
  // Back at the configuration before the compile's apply: measured as it is, without a `set`.
  const auto win = w->measure(5);
  w->release();
  EXPECT_EQ(win.steps, 5);
  EXPECT_EQ(win.one_time_s, 0) << "the script compiled: it did not start again without the change";
}

}  // namespace
