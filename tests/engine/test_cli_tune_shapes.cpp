// The tuner's budget rules on scripts shaped as the ones a new user tried (`tune --script`, 40 s): a fast script
// with a hand-written update and no DataLoader (its tune once tried `workers` four times and wrote a 12.82x
// patch), an LSTM over a DataLoader (its tunes once tried no knob: "the budget ran out" with half of it left),
// and a script that takes seconds to start. Each tune measures at least one knob, stays within its budget
// and the 10% margin, and says why it ended; the fast one never tries a loader knob.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace {

using Out = tb::test_util::CliOut;

class CliTuneShapes : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("tb_tune_shapes_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // tune --script at `budget` s; the JSON document it wrote.
  nlohmann::json tune(const std::string& script, const std::string& args, int budget) {
    const std::string js = dir_ + "/tune.json";
    Out r = tb::test_util::run_cli_shell("", "tune --script " + script + " --budget " + std::to_string(budget) +
                                                 " --json " + js + " --quiet -- " + args);
    EXPECT_EQ(r.code, 0) << r.err << r.out;
    std::ifstream f(js);
    if (!f) return {};
    auto j = nlohmann::json::parse(f);
    out_ = r.out;
    return j;
  }

  // A knob measured by the search (not the A/A, not the final).
  static int knob_trials(const nlohmann::json& j) {
    int n = 0;
    for (const auto& t : j["trials"])
      n += !t.value("knob", std::string()).empty() && t.value("phase", std::string()) != "final";
    return n;
  }

  void expect_within_budget(const nlohmann::json& j, int budget) {
    ASSERT_TRUE(j.is_object());
    EXPECT_LE(j["elapsed_s"].get<double>(), budget * 1.10) << j["ended"] << "\n" << out_;
    EXPECT_GE(knob_trials(j), 1) << j["ended"] << "\n" << out_;
    EXPECT_FALSE(j.value("ended", std::string()).empty());
  }

  std::string dir_, out_;
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
  const auto j = tune(s, "", 40);
  expect_within_budget(j, 40);
  for (const auto& t : j["trials"]) {
    const std::string k = t.value("knob", std::string());
    EXPECT_TRUE(k != "workers" && k != "pin_memory" && k != "prefetch" && k != "persistent_workers") << k;
  }
  bool said = false;
  for (const auto& sk : j["skipped"])
    said |= sk.value("knob", std::string()) == "workers" &&
            sk.value("reason", std::string()).find("no DataLoader") != std::string::npos;
  EXPECT_TRUE(said) << j["skipped"].dump();
}

TEST_F(CliTuneShapes, AnLstmOverADataLoaderTriesAKnobWithinItsBudget) {
  const auto j = tune(std::string(TB_SOURCE_DIR) + "/python/tests/corpus/rnn_classify.py", "--epochs 100000", 40);
  expect_within_budget(j, 40);
}

TEST_F(CliTuneShapes, AScriptThatStartsSlowlyStillTriesAKnob) {
  const std::string s = dir_ + "/slow_start.py";
  std::ofstream(s) << "import time\n"
                      "import torch\n"
                      "from torch.utils.data import DataLoader, TensorDataset\n"
                      "time.sleep(6)  # reading an index, building a vocabulary: seconds before the first step\n"
                      "torch.manual_seed(0)\n"
                      "model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))\n"
                      "data = TensorDataset(torch.randn(512, 32), torch.randint(0, 4, (512,)))\n"
                      "loader = DataLoader(data, batch_size=32, shuffle=True)\n"
                      "opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
                      "for epoch in range(100000):\n"
                      "    for x, y in loader:\n"
                      "        opt.zero_grad()\n"
                      "        torch.nn.functional.cross_entropy(model(x), y).backward()\n"
                      "        opt.step()\n";
  const auto j = tune(s, "", 45);
  expect_within_budget(j, 45);
}

}  // namespace
