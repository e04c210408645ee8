// A user's script, unmodified, through the CLI (run --script, tune --script) and the launcher package
// (python/tunebench): the example of examples/train_folder.py on a tiny image folder made here.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "engine/make_dataset.h"
#include "engine/report.h"
#include "profiler/trace_io.h"
#include "tuner/report/report_script.h"

namespace {

using Out = tb::test_util::CliOut;

Out cli(const std::string& args) { return tb::test_util::run_cli_shell("", args); }

class CliScript : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (std::filesystem::temp_directory_path() / ("tb_script_data_" + std::to_string(::getpid()))).string();
    make_folder(dir_ + "/images", 96);
  }
  // `images` JPEGs of 96x72 in 3 classes under `out`.
  static void make_folder(const std::string& out, int images) {
    tb::engine::ImageFolderSpec spec;
    spec.out = out;
    spec.images = images;
    spec.width = 96;
    spec.height = 72;
    spec.classes = 3;
    tb::engine::generate_image_folder(spec);
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  static std::string example() { return std::string(TB_SOURCE_DIR) + "/examples/train_folder.py"; }
  static std::string data() { return dir_ + "/images"; }
  static std::string tmp(const std::string& name) { return dir_ + "/" + name; }
  static std::string dir_;
};
std::string CliScript::dir_;

TEST_F(CliScript, RunsTheExampleUnmodifiedAndReadsWorkersBack) {
  const std::string js = tmp("run.json");
  Out r = cli("run --script " + example() + " --steps 12 --set workers=2 --json " + js + " -- --data " + data() +
              " --epochs 20 --batch-size 8");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["config"]["workers"], "2");
  EXPECT_EQ(j["steps"].size(), 12u);
  EXPECT_EQ(j["steps"][5]["samples"], 8);
  EXPECT_GT(j["throughput"]["samples_per_s"].get<double>(), 0);
  EXPECT_EQ(j["done"]["reason"], "steps");
  // Where the DataLoader was made, and what it really ran with: the line a report tells the user to edit.
  bool loader = false;
  for (const auto& s : j["source"])
    if (s["kind"] == "dataloader") {
      loader = true;
      EXPECT_NE(s["code"].get<std::string>().find("DataLoader(ds, batch_size=args.batch_size, shuffle=True)"),
                std::string::npos);
      EXPECT_EQ(s["effective"]["num_workers"], 2);
    }
  EXPECT_TRUE(loader);
  EXPECT_NE(r.err.find("  | epoch 0 step 0 loss"), std::string::npos);  // the script's own prints, marked
}

// --trace: the launcher's chunks become one trace that `analyze` reads as one run, its steps in order.
TEST_F(CliScript, TraceMergesTheChunksIntoOneRun) {
  const std::string tr = tmp("script.trace.json");
  Out r = cli("run --script " + example() + " --steps 9 --trace " + tr + " --trace-every 4 --trace-share 0 -- --data " + data() +
              " --epochs 20 --batch-size 8");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("3 chunks of up to 4 steps"), std::string::npos) << r.err;
  Out a = cli("analyze " + tr + " --json " + tmp("script.analysis.json"));
  ASSERT_EQ(a.code, 0) << a.err;
  std::ifstream f(tmp("script.analysis.json"));
  auto j = nlohmann::json::parse(f);
  const auto& items = j["steps"]["items"];
  ASSERT_EQ(items.size(), 9u) << a.out;  // the range open when the run stopped is no step
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(items[i]["index"].get<int64_t>(), int64_t(i)) << a.out;
    // Chunks one after another, not overlaid at 0.
    if (i > 0) EXPECT_GT(items[i]["start_us"].get<int64_t>(), items[i - 1]["start_us"].get<int64_t>()) << a.out;
  }
  // Asked for, the op shapes and the Python stacks come through the merge: shapes as the ops' detail, the
  // stack as ranges named by file and line around them.
  const std::string detailed = tmp("script.detail.json");
  Out d = cli("run --script " + example() + " --steps 3 --trace " + detailed + " --trace-detail shapes,stack -- --data " +
              data() + " --epochs 20 --batch-size 8");
  ASSERT_EQ(d.code, 0) << d.err;
  std::ifstream df(detailed);
  const auto dj = nlohmann::json::parse(df);
  bool shapes = false, stack = false;
  for (const auto& e : dj["traceEvents"]) {
    const std::string name = e.value("name", "");
    if (name == "aten::conv2d" && e.contains("args") && e["args"].value("detail", "").rfind("shapes [", 0) == 0)
      shapes = true;
    stack |= name.find("train_folder.py(") != std::string::npos;
  }
  EXPECT_TRUE(shapes);
  EXPECT_TRUE(stack);
  EXPECT_EQ(cli("run --script " + example() + " --trace " + detailed + " --trace-detail shape").code, 2);
  // A bad path is one line, and the run's line is still printed (3 steps are all warm-up: it says so).
  Out bad = cli("run --script " + example() + " --steps 3 --trace /nonexistent/dir/t.json -- --data " + data() +
                " --epochs 20 --batch-size 8");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("tunebench-cli: error: --trace:"), std::string::npos) << bad.err;
  EXPECT_NE(bad.out.find("train_folder.py: nothing measured: all 3 steps were warm-up"), std::string::npos) << bad.out;
}

TEST_F(CliScript, BadInputIsOneClearLine) {
  Out missing = cli("run --script /no/such/train.py --steps 2");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.err, "tunebench-cli: error: script not found: /no/such/train.py\n");
  Out knob = cli("run --script " + example() + " --steps 2 --set batch_size=64 -- --data " + data());
  EXPECT_NE(knob.code, 0);
  EXPECT_NE(knob.err.find("does not apply to scripts"), std::string::npos) << knob.err;
  const std::string not_training = tmp("hello.py");
  std::ofstream(not_training) << "print('hello')\n";
  Out nt = cli("run --script " + not_training + " --steps 2");
  EXPECT_NE(nt.code, 0);
  EXPECT_NE(nt.err.find("without a training step"), std::string::npos) << nt.err;
}

// A run that measures nothing says why in one line and in its JSON, never "0.0 samples/s": a first step
// slower than the time-out (it began, so the message says the step is long and names the option; the import
// of torch takes seconds on a busy machine, hence a 12 s limit, and the first step's 20 closures take 20 s), and a
// script whose training runs in torch.multiprocessing children (no "is this a training script?").
// Tracing's own cost is stated by `run` when it is above 5%: a fast script with a hand-written update (no
// DataLoader, a small model, ~0.1 ms steps here) runs far slower traced, and the run said nothing of it. Its
// first 10 measured steps run untraced as the reference; the trace covers the rest.
TEST_F(CliScript, ARunStatesTracingsOwnCost) {
  const std::string fast = tmp("fast_regression.py");
  std::ofstream(fast) << "import torch\n"
                         "torch.manual_seed(0)\n"
                         "model = torch.nn.Linear(8, 1)\n"
                         "x = torch.randn(256, 8); y = x @ torch.arange(8.0).view(8, 1) + 1\n"
                         "for step in range(100000):\n"
                         "    loss = ((model(x) - y) ** 2).mean()\n"
                         "    model.zero_grad()\n"
                         "    loss.backward()\n"
                         "    with torch.no_grad():\n"
                         "        for p in model.parameters():\n"
                         "            p -= 0.01 * p.grad\n";
  const std::string js = tmp("fast.json"), tr = tmp("fast.trace.json");
  Out r = cli("run --script " + fast + " --steps 120 --trace " + tr + " --trace-share 0 --json " + js);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("from after 10 untraced measured steps"), std::string::npos) << r.err;
  std::ifstream f(js);
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("tracing_cost")) << j.dump();
  // On a busy machine (the run says its load average) the reference steps share the cores with other work and
  // the cost may not show beyond it: loaded round 19 measured the traced steps at 0.98x (0.250 against 0.245 ms,
  // the reference 2.5x slower than quiet). The run then states no cost; what holds is that it states one exactly
  // when it measured one. Quiet, the cost is stated.
  const double speed = j["tracing_cost"]["traced_speed"].get<double>();
  const bool stated = r.out.find("tracing cost: the ") != std::string::npos;
  if (r.out.find("; load average ") == std::string::npos) {
    EXPECT_TRUE(stated) << r.out << r.err;
    EXPECT_LT(speed, 0.95) << j["tracing_cost"].dump();
  } else {
    EXPECT_EQ(stated, speed < 0.95) << r.out << j["tracing_cost"].dump();
  }
  // `trace start` goes out after the 10th measured step; the steps already begun when it arrives are untraced
  // too. How many depends on how soon the parent reads the steps and its message arrives: 10-13 quiet, 14 at a
  // load of 4 on 2 cores, 67 of this ~1 ms-step script beside another test in CI. What must hold: at least the
  // 10, and traced steps left to measure the cost with.
  EXPECT_GE(j["tracing_cost"]["untraced_steps"].get<int>(), 10);
  EXPECT_LE(j["tracing_cost"]["untraced_steps"].get<int>(), 100);
  EXPECT_GT(speed, 0.01) << j["tracing_cost"].dump();
  EXPECT_GT(j["tracing_cost"]["untraced_step_ms"].get<double>(), 0) << j["tracing_cost"].dump();
  EXPECT_GT(j["throughput"]["samples_per_s"].get<double>(), 0) << j["throughput"].dump();
  // The trace is a run `analyze` reads, from the first traced step on.
  Out a = cli("analyze " + tr + " --json " + tmp("fast.analysis.json"));
  ASSERT_EQ(a.code, 0) << a.err;
  std::ifstream fa(tmp("fast.analysis.json"));
  const auto an = nlohmann::json::parse(fa);
  ASSERT_FALSE(an["steps"]["items"].empty()) << a.out;
  EXPECT_GE(an["steps"]["items"][0]["index"].get<int64_t>(), 10) << a.out;
  // A short run is traced whole, and says nothing of a cost it did not measure.
  Out s = cli("run --script " + fast + " --steps 20 --trace " + tmp("short.trace.json"));
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.out.find("tracing cost"), std::string::npos) << s.out;
  EXPECT_EQ(s.err.find("untraced measured steps"), std::string::npos) << s.err;
}

// Why the loader is slow (issue: the loader analyzer), as `run --script --trace` says it: a folder of JPEGs read
// from a slow disk (10 ms a file, a sleep) through torchvision transforms by 2 workers, for a model whose step waits
// 20 ms for its accelerator (a sleep: what a GPU's step is to the training process). The verdict names the slow
// part first, grades the step and predicts the workers that would feed the model; a run with that count,
// untraced as a user runs it, confirms the prediction within 15%. Sleeps on both sides keep the check about the
// prediction, not about the cores a busy machine leaves. The traced run has workers because the batches' way
// between processes costs the training process too (~1 ms a batch here): measured from a run loading in the
// training process, the model's rate was 4-18% above what 4-5 workers then fed (docs/analysis.md).
TEST_F(CliScript, TheLoaderVerdictNamesTheSlowPartAndItsWorkerCountHolds) {
  // 120 batches a pass: the second run's measured steps hold no pass's start (its workers refill the queue then).
  const std::string folder = tmp("slow_disk_images");
  make_folder(folder, 960);
  const std::string script = tmp("slow_disk_folder.py");
  std::ofstream(script) << "import sys, time, torch\n"
                           "from torchvision import datasets, transforms\n"
                           "torch.set_num_threads(1)\n"
                           "class SlowDisk:\n"
                           "    def __call__(self, img):\n"
                           "        time.sleep(0.010)  # a network mount's read\n"
                           "        return img\n"
                           "tf = transforms.Compose([SlowDisk(), transforms.CenterCrop(64), transforms.ToTensor()])\n"
                           "ds = datasets.ImageFolder(sys.argv[1], tf)\n"
                           "workers = int(sys.argv[2])\n"
                           "loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True, num_workers=workers,\n"
                           "                                     persistent_workers=workers > 0)\n"
                           "model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3), torch.nn.ReLU(),\n"
                           "                            torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(512, 3))\n"
                           "opt = torch.optim.Adam(model.parameters())\n"
                           "for epoch in range(1000):\n"
                           "    for x, y in loader:\n"
                           "        opt.zero_grad()\n"
                           "        torch.nn.functional.cross_entropy(model(x), y).backward()\n"
                           "        opt.step()\n"
                           "        time.sleep(0.020)  # the accelerator's step: the training process waits for it\n";
  const std::string js = tmp("slow_disk.json");
  Out r = tb::test_util::run_cli_shell("TUNEBENCH_LOADER_PARTS=on", "run --script " + script + " --steps 80 --trace " +
                                       tmp("slow_disk.trace.json") + " --json " + js + " -- " + folder + " 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("loader: highly input-bound"), std::string::npos) << r.out;
  std::ifstream f(js);
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("loader")) << r.out;
  const auto& v = j["loader"];
  EXPECT_EQ(v["workers"], 2);
  EXPECT_EQ(v["parts"][0]["name"], "SlowDisk") << v.dump();
  EXPECT_GE(v["parts"][0]["ms"].get<double>(), 10.0) << v.dump();
  EXPECT_GE(v["wait_share"].get<double>(), 0.2) << v.dump();
  const int w = v["need_workers"].get<int>();
  ASSERT_GT(w, 2) << v.dump();
  const double predicted = v["expect_samples_s"].get<double>(), alone = j["throughput"]["samples_per_s"].get<double>();
  EXPECT_NE(r.out.find("--set workers=" + std::to_string(w)), std::string::npos) << r.out;
  // The change to make, at the script's own line (the class is defined on line 4), and its bound.
  EXPECT_NE(r.out.find("loader: change SlowDisk (slow_disk_folder.py:4), "), std::string::npos) << r.out;
  EXPECT_EQ(v["fixes"][0]["where"], script + ":4") << v.dump();
  // The trace carries the verdict: `analyze` prints the lines `run` printed, and its JSON the same figures.
  Out a = cli("analyze " + tmp("slow_disk.trace.json") + " --json " + tmp("slow_disk.analysis.json"));
  ASSERT_EQ(a.code, 0) << a.err;
  std::string run_lines;
  for (size_t at = r.out.find("loader: "); at != std::string::npos; at = r.out.find("loader: ", at + 1))
    if (at == 0 || r.out[at - 1] == '\n') run_lines += r.out.substr(at, r.out.find('\n', at) + 1 - at);
  ASSERT_FALSE(run_lines.empty()) << r.out;
  EXPECT_NE(a.out.find(run_lines), std::string::npos) << "run said:\n" << run_lines << "analyze said:\n" << a.out;
  std::ifstream fa(tmp("slow_disk.analysis.json"));
  EXPECT_EQ(nlohmann::json::parse(fa)["loader"], v);
  // The loader's lanes are in the trace, on its clock: each sample the workers loaded while a chunk
  // recorded lies among the traced steps, its slow part inside it.
  auto trace = tb::prof::load_trace(tmp("slow_disk.trace.json"));
  ASSERT_TRUE(trace.ok()) << trace.error().to_string();
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::vector<std::pair<int64_t, int64_t>> samples, slow;
  for (const auto& track : trace.value()->tracks())
    for (const auto& e : track.events()) {
      const std::string_view name = trace.value()->name(e.name);
      if (name.rfind("ProfilerStep#", 0) == 0) first = std::min(first, e.start_ns), last = std::max(last, e.end_ns);
      if (name == "sample") samples.push_back({e.start_ns, e.end_ns});
      if (name == "SlowDisk") slow.push_back({e.start_ns, e.end_ns});
    }
  ASSERT_FALSE(samples.empty());
  ASSERT_FALSE(slow.empty());
  for (const auto& [a, b] : samples) {
    EXPECT_GE(a, first - 1'000'000'000) << "a sample 1 s before the first traced step";
    EXPECT_LE(b, last + 1'000'000'000) << "a sample 1 s after the last traced step";
  }
  for (const auto& [a, b] : slow)
    EXPECT_TRUE(std::any_of(samples.begin(), samples.end(), [&](const auto& s) { return s.first <= a && b <= s.second; }));
  // The prediction, run (untraced, as the user would).
  const std::string js2 = tmp("slow_disk_w.json");
  Out r2 = cli("run --script " + script + " --steps 150 --json " + js2 + " -- " + folder + " " + std::to_string(w));
  ASSERT_EQ(r2.code, 0) << r2.err;
  std::ifstream f2(js2);
  const double got = nlohmann::json::parse(f2)["throughput"]["samples_per_s"].get<double>();
  const std::string said = "predicted " + std::to_string(predicted) + " samples/s with " + std::to_string(w) +
                           " workers, got " + std::to_string(got) + " (alone " + std::to_string(alone) + ")\n" + r.out;
  std::printf("%s", said.c_str());
  // The machine the prediction was made for: its cores, and those other work left free during the traced run.
  // Within 15% when no other work took a core from the traced run; on a busy machine the model's rate it measured
  // is not the one the second run meets (a load of 4 on 2 cores: 249.3 predicted with 1 core free, 205.9 got),
  // and the check says so and holds the run to 35%.
  const int machine = v["machine_cores"].get<int>(), free = v["cores"].get<int>();
  const bool quiet = free >= machine;
  std::printf("on this machine's %d cores (%d free during the traced run): %s\n", machine, free,
              quiet ? "the prediction is held to 15%" : "too busy to hold the prediction to 15%: held to 35%");
  EXPECT_FALSE(v["cores_bound"].get<bool>()) << v.dump();
  EXPECT_NEAR(got / predicted, 1.0, quiet ? 0.15 : 0.35) << said;
  // The count predicted feeds the model: more than the 2 workers. Under a load of 4 the model's own rate drops
  // with the cores other work takes, and so does the gain (1.26x, 221.1 of 174.9; 1.13x, 199.1 of 176.1): there
  // the run is held to beat the 2 workers past the noise a run shows here (±5-8%).
  EXPECT_GE(got, (quiet ? 1.3 : 1.05) * alone) << said;
  // The same script loading in its own process (num_workers=0, DataLoader's default): the launcher probes what
  // taking each batch from a worker would cost the training process, on the run's own batch, and the prediction
  // counts it (six runs by hand: 0.89-1.04 of it with the count it named; docs/analysis.md).
  const std::string js0 = tmp("slow_disk_0.json");
  Out r0 = cli("run --script " + script + " --steps 60 --trace " + tmp("slow_disk_0.trace.json") + " --json " + js0 +
               " -- " + folder + " 0");
  ASSERT_EQ(r0.code, 0) << r0.err;
  std::ifstream f0(js0);
  const auto v0 = nlohmann::json::parse(f0)["loader"];
  EXPECT_EQ(v0["workers"], 0) << v0.dump();
  EXPECT_GT(v0["receive_ms"].get<double>(), 0.0) << v0.dump();
  EXPECT_LT(v0["fed_samples_s"].get<double>(), v0["consume_samples_s"].get<double>()) << v0.dump();
  EXPECT_NE(r0.out.find("counting what taking each batch from a worker costs it"), std::string::npos) << r0.out;
  const double predicted0 = v0["expect_samples_s"].get<double>();
  const std::string said0 = "from num_workers=0: predicted " + std::to_string(predicted0) + " samples/s with " +
                            std::to_string(v0["need_workers"].get<int>()) + " workers\n" + r0.out;
  std::printf("%s", said0.c_str());
  // When it names the count the run above measured, that run checks it too.
  if (v0["need_workers"].get<int>() == w) EXPECT_NEAR(got / predicted0, 1.0, quiet ? 0.15 : 0.35) << said0 << said;
}

TEST_F(CliScript, ARunThatMeasuresNothingSaysWhy) {
  const std::string slow = tmp("slow_first_step.py");
  std::ofstream(slow) << "import time, torch\n"
                         "torch.manual_seed(0)\n"
                         "m = torch.nn.Linear(4, 1)\n"
                         "opt = torch.optim.LBFGS(m.parameters(), max_iter=20, tolerance_grad=0, tolerance_change=0)\n"
                         "x = torch.randn(64, 4); y = x.sum(1, keepdim=True)\n"
                         "def closure():\n"
                         "    opt.zero_grad(); loss = torch.nn.functional.mse_loss(m(x), y); loss.backward()\n"
                         "    time.sleep(1.0); return loss\n"
                         "for step in range(3):\n"
                         "    opt.step(closure)\n";
  const std::string js = tmp("slow.json");
  Out r = cli("run --script " + slow + " --first-step-timeout 12 --json " + js);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("the first training step did not end in 12 s (it began"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--first-step-timeout S"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("is this a training script"), std::string::npos) << r.err;
  {
    std::ifstream f(js);
    ASSERT_TRUE(f.good()) << "no JSON written";
    const auto j = nlohmann::json::parse(f);
    EXPECT_NE(j.value("not_measured", std::string()).find("did not end in 12 s"), std::string::npos) << j.dump();
  }
  const std::string hog = std::string(TB_SOURCE_DIR) + "/python/tests/corpus/hogwild.py";
  const std::string hj = tmp("hogwild.json");
  // 30 s: under a load of 4 on 2 cores the children took more than 5 s to start training.
  Out h = cli("run --script " + hog + " --first-step-timeout 30 --json " + hj);
  EXPECT_EQ(h.code, 0) << h.err;
  EXPECT_NE(h.out.find("nothing measured: the training ran in 2 child processes"), std::string::npos) << h.out;
  EXPECT_EQ(h.err.find("is this a training script"), std::string::npos) << h.err;
  EXPECT_EQ(h.out.find("samples/s"), std::string::npos) << h.out;
  std::ifstream f(hj);
  const auto j = nlohmann::json::parse(f);
  EXPECT_NE(j.value("not_measured", std::string()).find("child processes"), std::string::npos) << j.dump();
}

// Stopping tunebench-cli stops the script: a SIGTERM to it once left the script training for ~25 s.
TEST_F(CliScript, StoppingTheCliStopsTheScript) {
  const std::string script = tmp("forever.py"), pidfile = tmp("forever.pid");
  std::ofstream(script) << "import os, torch\n"
                           "open(" << nlohmann::json(pidfile).dump() << ", 'w').write(str(os.getpid()))\n"
                           "m = torch.nn.Linear(8, 1); opt = torch.optim.SGD(m.parameters(), lr=0.01)\n"
                           "while True:\n"
                           "    loss = m(torch.randn(16, 8)).pow(2).mean()\n"
                           "    opt.zero_grad(); loss.backward(); opt.step()\n";
  // timeout(1) sends the CLI a SIGTERM after 15 s, as a user's `kill` or a CI's time limit would.
  Out r = tb::test_util::run_cli_shell("timeout -s TERM 15", "run --script " + script + " -q");
  ASSERT_NE(r.code, 0);
  std::ifstream f(pidfile);
  pid_t pid = 0;
  ASSERT_TRUE(f >> pid) << "the script never started: " << r.err;
  bool gone = false;
  for (int i = 0; i < 50 && !gone; ++i) {  // 5 s
    gone = ::kill(pid, 0) != 0;
    if (!gone) ::usleep(100000);
  }
  EXPECT_TRUE(gone) << "the script (pid " << pid << ") outlived tunebench-cli by 5 s";
  if (!gone) ::kill(pid, SIGKILL);
}

TEST_F(CliScript, AnExceptionKeepsTheStepsAndTheTraceback) {
  const std::string bad = tmp("bad.py");
  {
    std::ifstream in(example());
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const std::string at = "            step += 1\n";
    text.replace(text.find(at), at.size(), at + "            if step == 4: raise ValueError('the data ran out')\n");
    std::ofstream(bad) << text;
  }
  const std::string js = tmp("bad.json");
  Out r = cli("run --script " + bad + " --json " + js + " -- --data " + data() + " --batch-size 8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tunebench-cli: error: ValueError: the data ran out"), std::string::npos) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["steps"].size(), 4u);
  EXPECT_NE(j["traceback"].get<std::string>().find("Traceback"), std::string::npos);
}

// A word-level language model as people write it (batchify/get_batch over one long tensor, sequence-first
// (35, 20) batches, no optimizer: clip_grad_norm_ and p.data.add_): its run JSON has each step's phases and
// counts its 20 sequences, not its 35 time steps.
TEST_F(CliScript, ALanguageModelWithAHandWrittenUpdateHasItsPhasesAndItsBatch) {
  const std::string corpus = tmp("text");
  std::filesystem::create_directories(corpus);
  for (const char* name : {"train", "valid", "test"}) {
    std::ofstream f(corpus + "/" + name + ".txt");
    unsigned x = 1;
    for (int line = 0; line < 300; ++line) {
      for (int w = 0; w < 8; ++w) {
        x = x * 1103515245u + 12345u;
        f << "w" << (x >> 16) % 40 << ' ';
      }
      f << '\n';
    }
  }
  const std::string js = tmp("lm.json");
  Out r = cli("run --script " + std::string(TB_SOURCE_DIR) + "/python/tests/corpus/word_lm.py --steps 6 --json " + js +
              " -- --data " + corpus + " --model LSTM");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  ASSERT_GE(j["steps"].size(), 6u);
  for (const auto& s : j["steps"]) {
    EXPECT_EQ(s["samples"], 20) << s.dump();
    EXPECT_EQ(s["unit"], "sequences") << s.dump();
    EXPECT_EQ(s["update"], "hand-written") << s.dump();
    EXPECT_GT(s["forward_ns"].get<int64_t>(), 0) << s.dump();
    EXPECT_GT(s["backward_ns"].get<int64_t>(), 0) << s.dump();
    EXPECT_GT(s["optim_ns"].get<int64_t>(), 0) << s.dump();
  }
  EXPECT_EQ(j["throughput"]["unit"], "sequences/s");
  EXPECT_NE(r.out.find("sequences/s"), std::string::npos) << r.out;
}

// A script that fails in its own argument parsing, on a machine where a library logs an "ERROR:" line after it
// (torch without a GPU): the line shown is argparse's.
// Memory beside time for a script: each step's resident set in the run JSON and its summary, and an
// out-of-memory error (a whole-set evaluation batch the host cannot hold, after a few steps of training) says
// after which step and how full the process was, in its one line.
TEST_F(CliScript, StepsCarryTheirMemoryAndAnOutOfMemoryErrorSaysWhere) {
  const std::string script = tmp("eval_all.py");
  {
    std::ofstream f(script);
    f << "import argparse\nimport torch\nfrom torch import nn\n"
         "p = argparse.ArgumentParser()\np.add_argument('--eval-rows', type=int, default=0)\nargs = p.parse_args()\n"
         "torch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))\n"
         "opt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
         "sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)\n"
         "for epoch in range(2):\n"
         "    model.train()\n"
         "    for i in range(3):\n"
         "        x, y = torch.randn(16, 32), torch.randint(0, 4, (16,))\n"
         "        loss = nn.functional.cross_entropy(model(x), y)\n"
         "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
         "    sched.step()\n"
         "    if args.eval_rows:\n"
         "        model.eval()\n"
         "        with torch.no_grad():\n"
         "            everything = torch.empty(args.eval_rows, 1 << 20)\n"
         "            print(model(everything[:, :32]).argmax(1).float().mean().item())\n";
  }
  const std::string js = tmp("eval_all.json");
  Out ok = cli("run --script " + script + " --steps 5 --json " + js);
  ASSERT_EQ(ok.code, 0) << ok.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  ASSERT_GE(j["steps"].size(), 5u);
  for (const auto& s : j["steps"]) EXPECT_GT(s["memory"]["host_rss"].get<int64_t>(), 10 << 20) << s.dump();
  EXPECT_GT(j["memory"]["host_rss_peak"].get<int64_t>(), 10 << 20) << j["memory"].dump();
  EXPECT_NE(ok.out.find("memory: peak host RSS "), std::string::npos) << ok.out;
  // 2^40 rows of 1 MiB: no host has that; the allocator says so at once.
  Out oom = cli("run --script " + script + " --steps 20 -- --eval-rows 1099511627776");
  EXPECT_NE(oom.code, 0);
  const size_t at = oom.err.rfind("tunebench-cli: error: ");
  ASSERT_NE(at, std::string::npos) << oom.err;
  const std::string last = oom.err.substr(at);
  EXPECT_NE(last.find("can't allocate memory"), std::string::npos) << oom.err;
  // Steps 0 and 1 were reported; the third iteration's step is still open when the evaluation fails (a
  // script's step ends where the next one starts), so the error follows step 1.
  EXPECT_NE(last.find("[after step 1; host RSS "), std::string::npos) << oom.err;
}

TEST_F(CliScript, TheScriptsOwnErrorIsTheOneLine) {
  Out r = cli("run --script " + std::string(TB_SOURCE_DIR) + "/python/tests/corpus/arch_cli.py --steps 4 -- -a resnet999");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("tunebench-cli: error: "), std::string::npos) << r.err;
  const std::string last = r.err.substr(r.err.rfind("tunebench-cli: error: "));
  EXPECT_NE(last.find("error: argument -a/--arch: invalid choice: 'resnet999'"), std::string::npos) << r.err;
  EXPECT_EQ(last.find("DeviceProperties.cpp"), std::string::npos) << r.err;
}

TEST_F(CliScript, TunesTheExampleAndWritesTheSameDocument) {
  const std::string js = tmp("tune.json");
  Out r = cli("tune --script " + example() + " --budget 40 --knobs workers,zero_grad_none --json " + js +
              " -- --data " + data() + " --epochs 1000 --batch-size 8");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j["format"], "tunebench-tune");
  EXPECT_NE(j["environment"]["model"].get<std::string>().find("script:"), std::string::npos);
  ASSERT_GE(j["trials"].size(), 1u);
  EXPECT_EQ(j["trials"][0]["phase"], "noise floor");
  // workers is measured, or (a busy machine: load 4-5 on 2 cores once left 40 s room for the A/A alone) listed
  // as skipped for budget with what it needed.
  bool workers = false, skipped = false;
  for (const auto& t : j["trials"]) workers |= t["knob"] == "workers";
  for (const auto& s : j["skipped"])
    skipped |= s["knob"] == "workers" && s["reason"].get<std::string>().rfind("budget", 0) == 0;
  EXPECT_TRUE(workers || skipped) << j["ended"];
  EXPECT_TRUE(j["noise"].contains("verdict"));
}

// A script whose whole run is shorter than one window (the LBFGS example's shape: a few closure steps, then a
// prediction saved) was restarted 50 times, 318 s of a 40 s budget, before the tune said why; after two such
// runs it stops, within the budget, and names the steps a run holds.
TEST_F(CliScript, AScriptShorterThanAWindowStopsTheTuneAfterTwoRuns) {
  const std::string s = tmp("short_lbfgs.py");
  std::ofstream(s) << "import torch\n"
                      "torch.manual_seed(0)\n"
                      "m = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))\n"
                      "opt = torch.optim.LBFGS(m.parameters(), lr=0.8)\n"
                      "x = torch.randn(256, 8); y = x.sin().sum(1, keepdim=True)\n"
                      "for i in range(4):\n"
                      "    def closure():\n"
                      "        opt.zero_grad(); loss = torch.nn.functional.mse_loss(m(x), y); loss.backward()\n"
                      "        return loss\n"
                      "    opt.step(closure)\n"
                      "with torch.no_grad():\n"
                      "    print('prediction', m(x[:4]).squeeze().tolist())\n";
  Out r = tb::test_util::run_cli_shell("", "tune --script " + s + " --budget 40", 200);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("the script ends after 4 optimizer steps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give it more epochs or steps"), std::string::npos) << r.err;
  // Two starts, not fifty (24 s here on 2 idle cores; the bound leaves a busy machine's slower starts room).
  EXPECT_LT(r.seconds, 90.0) << r.err;
}

TEST(ReportScript, EditCallReplacesOrAddsKeywordArguments) {
  using tb::engine::edit_call;
  EXPECT_EQ(edit_call("loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True)", {{"num_workers", "2"}}),
            "loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=2)");
  EXPECT_EQ(edit_call("dl = DataLoader(ds, num_workers=0, pin_memory=False)  # train",
                      {{"num_workers", "4"}, {"pin_memory", "True"}}),
            "dl = DataLoader(ds, num_workers=4, pin_memory=True)  # train");
  EXPECT_EQ(edit_call("DataLoader(ds, collate_fn=f(x), num_workers=1)", {{"num_workers", "2"}}),
            "DataLoader(ds, collate_fn=f(x), num_workers=2)");
  EXPECT_EQ(edit_call("DataLoader()", {{"num_workers", "2"}}), "DataLoader(num_workers=2)");
  EXPECT_EQ(edit_call("no call here", {{"num_workers", "2"}}), "no call here");
}

// The report's Python edits, applied by hand to a copy of the script, give the script the tuned loader with
// no TuneBench in between: what a user does with the report.
TEST_F(CliScript, TheReportsEditAppliedByHandGivesTheTunedLoader) {
  const std::string copy = tmp("mine.py");
  std::filesystem::copy_file(example(), copy, std::filesystem::copy_options::overwrite_existing);
  // Where the launcher finds the DataLoader of the copy.
  const std::string js = tmp("where.json");
  ASSERT_EQ(cli("run --script " + copy + " --steps 2 --json " + js + " -- --data " + data()).code, 0);
  std::ifstream f(js);
  auto run = nlohmann::json::parse(f);
  tb::engine::TuneResult r;
  r.environment = {{"model", "script:" + copy}, {"source", run["source"]}};
  r.baseline = {{"workers", "0"}, {"intra_op_threads", "2"}};
  r.final_config = {{"workers", "2"}, {"intra_op_threads", "2"}};
  const std::string py = tb::engine::final_code_pytorch(r);
  const auto minus = py.find("\n-    "), plus = py.find("\n+    ");
  ASSERT_NE(minus, std::string::npos) << py;
  ASSERT_NE(plus, std::string::npos) << py;
  const std::string old_line = py.substr(minus + 6, py.find('\n', minus + 1) - minus - 6);
  const std::string new_line = py.substr(plus + 6, py.find('\n', plus + 1) - plus - 6);
  EXPECT_NE(new_line.find("num_workers=2"), std::string::npos) << new_line;
  // Apply it.
  std::string text;
  {
    std::ifstream in(copy);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto at = text.find(old_line);
  ASSERT_NE(at, std::string::npos) << old_line;
  text.replace(at, old_line.size(), new_line);
  std::ofstream(copy) << text;
  // Run the edited script without any knob: its own DataLoader now has 2 workers.
  const std::string js2 = tmp("edited.json");
  ASSERT_EQ(cli("run --script " + copy + " --steps 2 --json " + js2 + " -- --data " + data()).code, 0);
  std::ifstream f2(js2);
  auto edited = nlohmann::json::parse(f2);
  EXPECT_EQ(edited["config"]["workers"], "2");
  for (const auto& s : edited["source"])
    if (s["kind"] == "dataloader") EXPECT_EQ(s["effective"]["num_workers"], 2);
}

}  // namespace
