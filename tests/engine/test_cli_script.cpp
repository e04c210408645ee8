// A user's script, unmodified, through the CLI (run --script, tune --script) and the launcher package
// (python/tunebench): the ways a run ends badly, each a short run of its own (bad input one line, the script's own
// error, an exception, an out-of-memory error, a training that runs in child processes, a kill of the CLI, a
// script too short to tune). What a script's good run, trace and tune leave is read in test_e2e_script.cpp
// (E2eScript), from runs made once.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "engine/make_dataset.h"
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
  Out quota = cli("run --script " + example() + " --trace " + tmp("t.json") + " --trace-steps -1");
  EXPECT_EQ(quota.code, 2);
  EXPECT_EQ(quota.err, "tunebench-cli: error: run: --trace-steps needs a number of traced steps, 0 or more (0: no "
                       "quota)\n");
}

// --trace's bad input: a detail it does not know is a usage error; a path it cannot write is one line, and the
// run's own line is still printed (3 steps are all warm-up: it says so). The launcher is asked for the trace's
// default quota, min(--steps N, 20) traced steps (an interpreter that notes its command line says so).
TEST_F(CliScript, ATraceItCannotWriteIsOneLineAndTheRunsLineStays) {
  EXPECT_EQ(cli("run --script " + example() + " --trace " + tmp("t.json") + " --trace-detail shape").code, 2);
  const std::string python = tmp("noting_python.sh"), noted = tmp("noted_argv.txt");
  std::ofstream(python) << "#!/bin/sh\necho \"$*\" >> " << noted << "\nexec " << TB_TEST_PYTHON << " \"$@\"\n";
  std::filesystem::permissions(python, std::filesystem::perms::owner_all);
  Out bad = cli("run --script " + example() + " --python " + python + " --steps 3 --trace /nonexistent/dir/t.json -- "
                "--data " + data() + " --epochs 20 --batch-size 8");
  std::ifstream in(noted);
  const std::string argv{std::istreambuf_iterator<char>(in), {}};
  EXPECT_NE(argv.find("tunebench.launch"), std::string::npos) << argv;
  EXPECT_NE(argv.find(" --trace-steps 3 "), std::string::npos) << argv;
  EXPECT_EQ(bad.code, 1);
  const size_t said = bad.err.find("tunebench-cli: error: --trace:");
  EXPECT_NE(said, std::string::npos) << bad.err;
  EXPECT_EQ(bad.err.find("tunebench-cli: error: --trace:", said + 1), std::string::npos) << "said twice:\n" << bad.err;
  EXPECT_NE(bad.out.find("train_folder.py: nothing measured: all 3 steps were warm-up"), std::string::npos) << bad.out;
}

// A run that measures nothing says why in one line and in its JSON, never "0.0 samples/s": a script whose training
// runs in torch.multiprocessing children (no "is this a training script?"). A first step longer than the time-out
// is E2eScript's (it mostly waits, beside that suite's other runs).
TEST_F(CliScript, ATrainingInChildProcessesSaysSoAndMeasuresNothing) {
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

// A tune has nothing to measure in a process whose training runs in children: it says so at the launcher's
// warning and stops the script, not when the children are done (a hogwild tune had waited 113 s for them). Its
// children here would train for hours: timeout(1) is the hang guard, far past a start-up on a busy machine.
TEST_F(CliScript, ATuneOfATrainingInChildProcessesStopsAtOnce) {
  const std::string hog = std::string(TB_SOURCE_DIR) + "/python/tests/corpus/hogwild.py";
  Out r = tb::test_util::run_cli_shell("", "tune --script " + hog + " --budget 60 -- --epochs 100000", 240);
  EXPECT_EQ(r.code, 2) << r.err;  // the script could not be tuned, as one that fails before its first step
  EXPECT_NE(r.err.find("the training runs in 2 child processes (torch.multiprocessing), which TuneBench does not "
                       "follow"),
            std::string::npos)
      << r.err;
}

// Stopping tunebench-cli stops the script: a SIGTERM to it once left the script training for ~25 s, until the
// script's next write found the channel closed. The CLI is sent its SIGTERM (as a user's `kill` or a CI's time limit
// would) once the script trains, during a long step (one waiting on its accelerator or its data) in which it writes
// nothing: it must go with the CLI, not at its next step. It marks the step by writing its pid.
TEST_F(CliScript, StoppingTheCliStopsTheScript) {
  const std::string script = tmp("forever.py"), pidfile = tmp("forever.pid"), partial = pidfile + ".part";
  std::ofstream(script) << "import os, time, torch\n"
                           "m = torch.nn.Linear(8, 1); opt = torch.optim.SGD(m.parameters(), lr=0.01)\n"
                           "step = 0\n"
                           "while True:\n"
                           "    loss = m(torch.randn(16, 8)).pow(2).mean()\n"
                           "    opt.zero_grad(); loss.backward(); opt.step()\n"
                           "    step += 1\n"
                           "    if step == 2:\n"
                           "        open(" << nlohmann::json(partial).dump() << ", 'w').write(str(os.getpid()))\n"
                           "        os.rename(" << nlohmann::json(partial).dump() << ", "
                        << nlohmann::json(pidfile).dump() << ")\n"
                           "        time.sleep(300)\n";
  const std::string err = tmp("forever.err");
  const pid_t cli = ::fork();
  ASSERT_GE(cli, 0);
  if (cli == 0) {
    if (!std::freopen(err.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout)) ::_exit(126);
    ::execl(TB_CLI_PATH, TB_CLI_PATH, "run", "--script", script.c_str(), "-q", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Up to 120 s for the script to start (a hang guard: the import of torch on a busy machine).
  pid_t pid = 0;
  for (int i = 0; i < 1200 && pid == 0; ++i) {
    std::ifstream f(pidfile);
    if (!(f >> pid)) {
      pid = 0;
      if (::waitpid(cli, nullptr, WNOHANG) == cli) break;  // the CLI ended first
      ::usleep(100000);
    }
  }
  ::kill(cli, SIGTERM);
  int status = 0;
  for (int i = 0; i < 600 && ::waitpid(cli, &status, WNOHANG) != cli; ++i) ::usleep(100000);  // 60 s: a hang guard
  if (::kill(cli, 0) == 0) {
    ::kill(cli, SIGKILL);
    ::waitpid(cli, &status, 0);
  }
  std::ifstream ef(err);
  const std::string err_text{std::istreambuf_iterator<char>(ef), {}};
  ASSERT_GT(pid, 0) << "the script never trained: " << err_text;
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

// A plain run of an LBFGS script counts what the tuner's windows count: its batch once per closure evaluation
// (each step evaluates it 1-20 times, fewer as the fit converges), said on its line and in its JSON; each step
// keeps the loader's batch and its evaluations apart.
TEST_F(CliScript, APlainRunOfAClosureStepCountsItsBatchOncePerEvaluation) {
  const std::string js = tmp("lbfgs.json");
  // In the test's folder: the script saves its predictions (predict*.npy) where it runs.
  Out r = tb::test_util::run_cli_shell("cd " + dir_ + " &&", "run --script " + std::string(TB_SOURCE_DIR) +
                                                                 "/python/tests/corpus/sine_lbfgs.py --steps 20 --json " +
                                                                 js + " -- --steps 3000");
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(js);
  auto j = nlohmann::json::parse(f);
  int64_t evaluated = 0, per_step = 0, most = 0;
  for (const auto& s : j["steps"]) {
    ASSERT_TRUE(s.contains("evaluations")) << s.dump();
    most = std::max(most, s["evaluations"].get<int64_t>());
    if (s["warmup"].get<bool>()) continue;
    evaluated += s["samples"].get<int64_t>() * s["evaluations"].get<int64_t>();
    per_step += s["samples"].get<int64_t>();
  }
  EXPECT_GT(most, 1) << "no step evaluated its closure more than once";
  EXPECT_EQ(j["window"]["samples"].get<int64_t>(), evaluated) << j["window"].dump();
  EXPECT_GT(evaluated, per_step);
  EXPECT_EQ(j["throughput"].value("rate", "").rfind("per closure evaluation: ", 0), 0u) << j["throughput"].dump();
  EXPECT_NE(r.out.find("; per closure evaluation: "), std::string::npos) << r.out;
}

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

// A script that fails in its own argument parsing, on a machine where a library logs an "ERROR:" line after it
// (torch without a GPU): the line shown is argparse's.
TEST_F(CliScript, TheScriptsOwnErrorIsTheOneLine) {
  Out r = cli("run --script " + std::string(TB_SOURCE_DIR) + "/python/tests/corpus/arch_cli.py --steps 4 -- -a resnet999");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("tunebench-cli: error: "), std::string::npos) << r.err;
  const std::string last = r.err.substr(r.err.rfind("tunebench-cli: error: "));
  EXPECT_NE(last.find("error: argument -a/--arch: invalid choice: 'resnet999'"), std::string::npos) << r.err;
  EXPECT_EQ(last.find("DeviceProperties.cpp"), std::string::npos) << r.err;
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
  // Two starts, not fifty: fifty took 318 s, and timeout(1) ends a run at 180 s (exit 124), a hang guard well past
  // two starts on a busy machine (9 s here quiet, 67 s beside two CPU burners and other tests).
  Out r = tb::test_util::run_cli_shell("", "tune --script " + s + " --budget 40", 180);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("the script ends after 4 optimizer steps"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("give it more epochs or steps"), std::string::npos) << r.err;
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

}  // namespace
