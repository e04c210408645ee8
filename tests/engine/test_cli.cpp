// tunebench-cli knobs/run/serve, spawned as a child process (TB_CLI_PATH) like a user or the GUI would.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Child {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
};

Child spawn(const std::vector<std::string>& args) {
  int pin[2], pout[2], perr[2];
  EXPECT_EQ(pipe(pin), 0);
  EXPECT_EQ(pipe(pout), 0);
  EXPECT_EQ(pipe(perr), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(pin[0], 0);
    dup2(pout[1], 1);
    dup2(perr[1], 2);
    for (int fd : {pin[0], pin[1], pout[0], pout[1], perr[0], perr[1]}) close(fd);
    std::vector<char*> argv;
    std::string exe = TB_CLI_PATH;
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  close(pin[0]);
  close(pout[1]);
  close(perr[1]);
  c.in = pin[1];
  c.out = pout[0];
  c.err = perr[0];
  return c;
}

std::string read_all(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, n);
  return s;
}

struct Result {
  int code = -1;
  std::string out, err;
};

Result run_cli(const std::vector<std::string>& args) {
  Child c = spawn(args);
  close(c.in);
  Result r;
  // stderr is small for these runs; read stdout first, then stderr.
  r.out = read_all(c.out);
  r.err = read_all(c.err);
  int status = 0;
  waitpid(c.pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  close(c.out);
  close(c.err);
  return r;
}

std::string tmp_file(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("tb_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A serve child's messages, one JSON a line, to `on` until it returns true (the run is over) or `seconds` pass;
// then its input is closed and it is waited for. Its exit status.
int serve_messages(Child& c, int seconds, const std::function<bool(const nlohmann::json&)>& on) {
  FILE* out = fdopen(c.out, "r");
  EXPECT_NE(out, nullptr);
  char* buf = nullptr;
  size_t cap = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (out && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = getline(&buf, &cap, out);
    if (n <= 0) break;
    auto m = nlohmann::json::parse(std::string(buf, n), nullptr, false);
    EXPECT_FALSE(m.is_discarded()) << buf;
    if (m.is_discarded() || on(m)) break;
  }
  free(buf);
  close(c.in);
  int status = 0;
  waitpid(c.pid, &status, 0);
  if (out) fclose(out);
  return status;
}

TEST(Cli, KnobsJsonListsTheCatalog) {
  auto r = run_cli({"knobs", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["knobs"].size(), 28u);
  for (const auto& k : j["knobs"]) {
    EXPECT_TRUE(k.contains("applicable"));
    if (!k["applicable"].get<bool>()) EXPECT_FALSE(k["reason"].get<std::string>().empty());
  }
  auto text = run_cli({"knobs"});
  EXPECT_EQ(text.code, 0);
  EXPECT_NE(text.out.find("channels_last"), std::string::npos);
}

TEST(Cli, RunWritesJsonWithThroughput) {
  const std::string out = tmp_file("run.json");
  auto r = run_cli({"run", "--model", "mnist_cnn", "--data", "synthetic", "--measured-steps", "3", "--warmup", "2",
                    "--set", "batch_size=8,zero_grad_none=on", "--json", out});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(out);
  auto j = nlohmann::json::parse(f);
  EXPECT_GT(j["throughput"]["median"].get<double>(), 0);
  EXPECT_GT(j["throughput"]["samples_per_s"].get<double>(), 0);
  EXPECT_EQ(j["throughput"]["unit"], "samples/s");
  EXPECT_EQ(j["throughput"]["measured_steps"], 3);
  // Warm-up until stable: at least --warmup steps and two blocks of 2 to compare, at most the cap.
  const int warm = j["warmup"]["steps"].get<int>();
  EXPECT_GE(warm, 4);
  EXPECT_LE(warm, 30);
  EXPECT_EQ(j["steps"].size(), size_t(warm + 3));
  for (int i = 0; i < warm + 3; ++i) EXPECT_EQ(j["steps"][i]["warmup"].get<bool>(), i < warm) << i;
  EXPECT_EQ(j["steps"][warm]["samples"], 8);
  // The measured steps as one synced window: samples over its wall time.
  EXPECT_EQ(j["window"]["steps"], 3);
  EXPECT_EQ(j["window"]["samples"], 24);
  EXPECT_GT(j["window"]["wall_s"].get<double>(), 0);
  EXPECT_FALSE(j["throughput"]["noise"]["verdict"].get<std::string>().empty());
  EXPECT_TRUE(j["throughput"].contains("page_faults_per_step"));
  EXPECT_EQ(j["cpu_allocator"], "glibc");
  EXPECT_EQ(j["config"]["zero_grad_none"], "on");
  EXPECT_TRUE(j["device"].contains("kind"));
  EXPECT_TRUE(j["versions"].contains("libtorch"));
  if (j["device"]["kind"] == "cpu")  // a run without a GPU says why there is none
    EXPECT_FALSE(j["device"]["no_cuda"].get<std::string>().empty()) << j["device"];
  EXPECT_TRUE(j["warnings"].is_array());
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);
}

TEST(Cli, RunTraceHoldsTrainingRanges) {
  const std::string trace = tmp_file("run_trace.json");
  auto r = run_cli({"run", "--model", "mnist_cnn", "--data", "synthetic", "--steps", "3", "--warmup", "1", "--set",
                    "batch_size=4", "--trace", trace});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(trace);
  auto j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  const auto& events = j.is_object() ? j["traceEvents"] : j;
  std::map<std::string, int> count;
  for (const auto& e : events)
    if (e.value("ph", "") == "X") ++count[e.value("name", "")];
  EXPECT_EQ(count["step"], 3);
  EXPECT_EQ(count["forward"], 3);
  EXPECT_EQ(count["backward"], 3);
  EXPECT_EQ(count["optimizer"], 3);
  EXPECT_GE(count["sync"], 3);
}

// Why the engine's own loader is slow: a traced run of a model on photo-sized JPEGs (640x480, decoded whole for a
// 28x28 input) loaded on the training thread says what a script's run says: the step's grade, the parts
// costliest first (the decode), and what more workers would give on this machine's cores; `analyze` prints the
// same lines from the trace, which carries the verdict.
TEST(Cli, RunTraceSaysWhyTheEnginesLoaderIsSlow) {
  const std::string dir = tmp_file("loader_images");
  auto made = run_cli({"make-dataset", "--out", dir, "--images", "48", "--size", "640x480", "--classes", "3"});
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string trace = tmp_file("loader_trace.json"), js = tmp_file("loader_run.json");
  auto r = run_cli({"run", "--model", "mnist_cnn", "--data", "imagefolder:" + dir, "--steps", "16", "--warmup", "2",
                    "--set", "batch_size=8,workers=0", "--trace", trace, "--json", js});
  ASSERT_EQ(r.code, 0) << r.err;
  // The engine times its batches' copies apart: the input split into the host's wait and the transfer (on a
  // CPU a copy to the same device: next to nothing).
  // Its grade (highly, moderately...) is a measurement's: a busy machine's decode is slower, its step too.
  EXPECT_NE(r.out.find(" input-bound: input took "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(host) and copied them to the device "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("in the training process (num_workers=0)"), std::string::npos) << r.out;
  std::ifstream f(js);
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("loader")) << r.out;
  const auto& v = j["loader"];
  EXPECT_EQ(v["workers"], 0);
  ASSERT_GE(v["parts"].size(), 3u) << v.dump();
  EXPECT_EQ(v["parts"][0]["name"], "decode (JPEG, PNG)") << v.dump();
  EXPECT_GE(v["need_workers"].get<int>(), 1) << v.dump();
  EXPECT_GT(v["train_cpu_ms"].get<double>(), 0) << v.dump();
  EXPECT_GE(v["transfer_share"].get<double>(), 0) << v.dump();
  EXPECT_LT(v["transfer_share"].get<double>(), 0.05) << v.dump();
  // Its loading threads hand batches over in the process: no caveat of a way between processes.
  EXPECT_EQ(v["threads"], true) << v.dump();
  EXPECT_EQ(r.out.find("between processes"), std::string::npos) << r.out;
  std::string lines;
  for (size_t at = r.out.find("loader: "); at != std::string::npos; at = r.out.find("loader: ", at + 1))
    if (at == 0 || r.out[at - 1] == '\n') lines += r.out.substr(at, r.out.find('\n', at) + 1 - at);
  auto a = run_cli({"analyze", trace});
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find(lines), std::string::npos) << "run said:\n" << lines << "analyze said:\n" << a.out;
  // A synthetic dataset loads nothing: no verdict.
  auto s = run_cli({"run", "--model", "mnist_cnn", "--data", "synthetic", "--steps", "6", "--warmup", "1", "--trace",
                    tmp_file("synthetic_trace.json")});
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(s.out.find("loader: "), std::string::npos) << s.out;
}

// The GUI's live engine run: serve sends the engine loader's parts after each trace chunk, as a script's launcher
// does, with the training's CPU since its first step and `transfer` (the engine's steps time their copies), so
// the Loader tab gives the verdict `run --trace` prints.
TEST(Cli, ServeSendsTheEnginesLoaderPartsAfterEachChunk) {
  const std::string dir = tmp_file("serve_loader_images");
  auto made = run_cli({"make-dataset", "--out", dir, "--images", "24", "--size", "320x240", "--classes", "2"});
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string tdir = tmp_file("serve_loader_trace");
  std::filesystem::create_directories(tdir);
  Child c = spawn({"serve", "--model", "mnist_cnn", "--data", "imagefolder:" + dir, "--set", "batch_size=4,workers=0",
                   "--warmup", "1", "--drift-steps", "0", "--steps", "8", "--trace-dir", tdir, "--trace-every", "4"});
  int traces = 0, loaders = 0;
  bool done = false;
  serve_messages(c, 180, [&](const nlohmann::json& m) {
    const std::string type = m.value("type", std::string());
    if (type == "trace") {
      ++traces;
    } else if (type == "loader_parts") {
      ++loaders;
      EXPECT_EQ(loaders, traces) << "a loader_parts follows its chunk";
      const bool has_parts = m["parts"].is_array() && !m["parts"].empty();
      EXPECT_TRUE(has_parts) << m.dump();
      if (!has_parts) return true;
      EXPECT_EQ(m["parts"][0]["who"], "main") << m.dump();
      EXPECT_GT(m["parts"][0]["samples"].get<int64_t>(), 0) << m.dump();
      EXPECT_TRUE(m["parts"][0]["parts"].contains("decode (JPEG, PNG)")) << m.dump();
      EXPECT_GT(m.value("cpu_ns", int64_t(0)), 0) << m.dump();
      EXPECT_EQ(m.value("transfer", false), true) << m.dump();
    } else if (type == "done") {
      done = true;
    }
    return done;
  });
  EXPECT_TRUE(done);
  EXPECT_GE(traces, 2);
  EXPECT_EQ(loaders, traces);
  std::filesystem::remove_all(tdir);
  std::filesystem::remove_all(dir);
}

// The GUI's live script run ends with serve's `done`, which carries the launcher's last loader totals: with
// num_workers=0 they hold what taking each batch from a worker would cost (probed at the script's end), which no
// live message carried, so the Loader tab's verdict at the end is the one `run --script` prints.
TEST(Cli, ServeOfAScriptEndsWithItsLoadersLastTotals) {
  const std::string script = tmp_file("serve_script_loader.py");
  std::ofstream(script) << "import torch\n"
                           "class Rows(torch.utils.data.Dataset):\n"
                           "    def __len__(self):\n"
                           "        return 192\n"
                           "    def __getitem__(self, i):\n"
                           "        return torch.full((3, 16, 16), float(i)), i % 2\n"
                           "loader = torch.utils.data.DataLoader(Rows(), batch_size=8, shuffle=True)\n"
                           "model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(768, 2))\n"
                           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                           "for x, y in loader:\n"
                           "    opt.zero_grad()\n"
                           "    torch.nn.functional.cross_entropy(model(x), y).backward()\n"
                           "    opt.step()\n";
  const std::string tdir = tmp_file("serve_script_trace");
  std::filesystem::create_directories(tdir);
  Child c = spawn({"serve", "--script", script, "--trace-dir", tdir, "--trace-every", "8"});
  nlohmann::json summary;
  serve_messages(c, 180, [&](const nlohmann::json& m) {
    if (m.value("type", std::string()) != "done") return false;
    summary = m.value("summary", nlohmann::json::object());
    return true;
  });
  ASSERT_TRUE(summary.is_object()) << "no done";
  EXPECT_EQ(summary.value("reason", std::string()), "completed") << summary.dump();
  ASSERT_TRUE(summary.contains("loader_parts") && summary["loader_parts"].is_array() &&
              !summary["loader_parts"].empty()) << summary.dump();
  const auto& main = summary["loader_parts"][0];
  EXPECT_EQ(main.value("who", std::string()), "main") << summary.dump();
  EXPECT_EQ(main.value("samples", 0), 192) << summary.dump();
  ASSERT_TRUE(main.contains("receive")) << summary.dump();
  EXPECT_EQ(main["receive"].value("bytes", 0), 8 * 3 * 16 * 16 * 4 + 8 * 8) << summary.dump();
  EXPECT_GT(main["receive"].value("ns", 0), 0) << summary.dump();
  EXPECT_GT(summary.value("cpu_ns", int64_t(0)), 0) << summary.dump();
  std::filesystem::remove_all(tdir);
}

TEST(Cli, RunRejectsBadInputWithExitTwoAndOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--model", "alexnet", "--data", "synthetic"},
           {"run", "--model", "mnist_cnn", "--data", "synthetic", "--set", "bogus=1"},
           {"run", "--model", "mnist_cnn", "--data", "synthetic", "--set", "amp=fp8"},
           {"run", "--model", "mnist_cnn", "--data", "imagefolder:/no/such/dir"},
           {"run", "--model", "torchscript:/no/such/file.pt", "--data", "synthetic"},
           {"run", "--model", "mnist_cnn"}}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args[2] << " " << r.err;
    EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
    // One line: the error line is the last line and has no embedded newline before it.
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// A knob setting and a tune budget are checked by one rule (client/inputs.h) on every surface: a malformed
// --set item is an error for run, tune and a script serve alike (the last once dropped it silently), and a
// budget outside 10-86400 s is refused by the CLI as by serve.
TEST(Cli, EverySurfaceChecksSettingsAndTheBudgetTheSameWay) {
  const std::string script = ::testing::TempDir() + "/tb_inputs_script.py";
  std::ofstream(script) << "print('never run')\n";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--script", script, "--set", "workers"},
           {"tune", "--script", script, "--set", "workers"},
           {"serve", "--script", script, "--set", "workers"},
           {"run", "--model", "mnist_cnn", "--data", "synthetic", "--set", "workers"}}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << r.err;
    EXPECT_NE(r.err.find("bad knob setting 'workers': expected knob=value"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  for (const char* budget : {"5", "86401", "abc"}) {
    auto r = run_cli({"tune", "--simulate", "--budget", budget});
    EXPECT_EQ(r.code, 2) << budget << " " << r.err;
    EXPECT_NE(r.err.find("budget"), std::string::npos) << r.err;
  }
  std::remove(script.c_str());
}

// One --steps rule (client/inputs.h) on run, serve and their --script forms: a count out of the command's range
// is one line naming the range and exit 2, before anything trains or starts. serve --script's bad values once got
// only "bad option"; now they say what the option needs, as run --script's do.
TEST(Cli, StepsOutOfTheirRangeAreOneLineNamingItAndExitTwo) {
  const std::string script = ::testing::TempDir() + "/tb_steps_script.py";
  std::ofstream(script) << "print('never run')\n";
  const std::string run_range = "--steps needs an integer from 1 to 1000000";
  const std::string serve_range = "--steps needs an integer from 0 (until stopped) to 1000000";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "--model", "mnist_cnn", "--data", "synthetic", "--steps", "0"}, "run: " + run_range + ", got '0'"},
      {{"run", "--model", "mnist_cnn", "--data", "synthetic", "--steps"}, "run: " + run_range},
      {{"run", "--script", script, "--steps", "0"}, "run: " + run_range + ", got '0'"},
      {{"run", "--script", script, "--steps", "1000001"}, "run: " + run_range + ", got '1000001'"},
      {{"serve", "--steps", "-1"}, "serve: " + serve_range + ", got '-1'"},
      {{"serve", "--script", script, "--steps", "-1"}, "serve: " + serve_range + ", got '-1'"},
      {{"serve", "--script", script, "--steps", "12x"}, "serve: " + serve_range + ", got '12x'"},
      {{"serve", "--script", script, "--trace-every", "0"}, "serve: --trace-every needs a positive integer"}};
  for (const auto& [args, says] : cases) {
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << says << ": " << r.err;
    EXPECT_EQ(r.err, "tunebench-cli: error: " + says + "\n");
    EXPECT_EQ(r.out, "") << says;
  }
  std::remove(script.c_str());
}

TEST(Cli, ServeRoundTripWithLiveSet) {
  Child c = spawn({"serve", "--model", "mnist_cnn", "--data", "synthetic", "--set", "batch_size=4", "--warmup", "1",
                   "--drift-steps", "0"});
  FILE* out = fdopen(c.out, "r");
  ASSERT_NE(out, nullptr);
  auto send = [&](const nlohmann::json& m) {
    std::string line = m.dump() + "\n";
    ASSERT_EQ(write(c.in, line.data(), line.size()), ssize_t(line.size()));
  };
  bool hello = false, started = false, applied = false, done = false, bad_line_error = false, bad_knob_error = false;
  int steps_after_set = 0, steps_before = 0;
  auto t_stop = std::chrono::steady_clock::time_point::max();
  double stop_latency_s = -1;
  char* buf = nullptr;
  size_t cap = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = getline(&buf, &cap, out);
    if (n <= 0) break;
    auto m = nlohmann::json::parse(std::string(buf, n), nullptr, false);
    ASSERT_FALSE(m.is_discarded()) << buf;
    EXPECT_EQ(m["v"], 1);
    const std::string type = m["type"];
    if (type == "hello") {
      hello = true;
      EXPECT_EQ(m["knobs"].size(), 28u);
      EXPECT_TRUE(m["versions"].contains("libtorch"));
      if (m["device"]["kind"] == "cpu") {
        // CPU: the collector line says why the timeline is CPU-only, and why there is no CUDA device.
        EXPECT_EQ(m["collector"]["enabled"], false);
        EXPECT_NE(m["collector"]["reason"].get<std::string>().find("no CUDA device"), std::string::npos);
        EXPECT_NE(m["collector"]["reason"].get<std::string>().find(m["device"]["no_cuda"].get<std::string>()),
                  std::string::npos) << m["collector"]["reason"];
      } else {
        // CUDA, not tracing (no --trace-dir): the collector is off and says so.
        EXPECT_EQ(m["collector"]["enabled"], false);
        EXPECT_NE(m["collector"]["reason"].get<std::string>().find("not tracing"), std::string::npos);
      }
    } else if (type == "started") {
      started = true;
      EXPECT_EQ(m["config"]["batch_size"], "4");
      send({{"type", "tune"}, {"budget_s", 5}});
      send({{"type", "set"}, {"knob", "bogus"}, {"value", 1}});
      std::string junk = "this is not json\n";
      ASSERT_GT(write(c.in, junk.data(), junk.size()), 0);
    } else if (type == "error") {
      EXPECT_TRUE(m["recoverable"].get<bool>());
      bad_line_error |= m["message"].get<std::string>().find("malformed") != std::string::npos;
      bad_knob_error |= m["message"].get<std::string>().find("unknown knob 'bogus'") != std::string::npos;
    } else if (type == "step") {
      if (!applied) {
        if (++steps_before == 2) send({{"type", "set"}, {"knob", "batch_size"}, {"value", 6}});
      } else {
        EXPECT_EQ(m["config_rev"], 1);
        EXPECT_EQ(m["samples"], 6);
        if (++steps_after_set == 2) {
          send({{"type", "stop"}});
          t_stop = std::chrono::steady_clock::now();
        }
      }
    } else if (type == "config_applied") {
      applied = true;
      EXPECT_EQ(m["rev"], 1);
      EXPECT_EQ(m["changed"]["batch_size"], "6");
      EXPECT_EQ(m["knobs"]["batch_size"], "6");
    } else if (type == "done") {
      done = true;
      stop_latency_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_stop).count();
      EXPECT_GE(m["summary"]["steps"].get<int>(), 4);
      EXPECT_EQ(m["summary"]["unit"], "samples/s");
    }
  }
  free(buf);
  close(c.in);
  int status = 0;
  waitpid(c.pid, &status, 0);
  fclose(out);
  close(c.err);
  EXPECT_TRUE(hello);
  EXPECT_TRUE(started);
  EXPECT_TRUE(applied);
  EXPECT_TRUE(bad_line_error);
  EXPECT_TRUE(bad_knob_error);
  EXPECT_TRUE(done);
  EXPECT_LT(stop_latency_s, 2.0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Cli, ServeStartMessageAndStdinClose) {
  Child c = spawn({"serve"});
  // `set` before the start is answered as during a run: an error for a bad knob, config_applied for a good one.
  std::string start = nlohmann::json({{"type", "set"}, {"knob", "bogus"}, {"value", 1}}).dump() + "\n" +
                      nlohmann::json({{"type", "set"}, {"knob", "pin_memory"}, {"value", "true"}}).dump() + "\n" +
                      nlohmann::json({{"type", "start"}, {"model", "nope"}, {"data", "synthetic"}}).dump() + "\n" +
                      nlohmann::json({{"type", "start"}, {"model", "mnist_cnn"}, {"data", "synthetic"}, {"steps", 2},
                                      {"knobs", {{"batch_size", 2}}}})
                          .dump() +
                      "\n";
  ASSERT_GT(write(c.in, start.data(), start.size()), 0);
  std::string all = read_all(c.out);  // child exits after 2 steps
  close(c.in);
  int status = 0;
  waitpid(c.pid, &status, 0);
  close(c.out);
  close(c.err);
  EXPECT_NE(all.find("\"recoverable\":true"), std::string::npos) << all;
  EXPECT_NE(all.find("unknown knob 'bogus'"), std::string::npos) << all;  // the words a running session says
  bool applied = false;
  std::istringstream lines(all);
  for (std::string line; std::getline(lines, line);) {
    const auto m = nlohmann::json::parse(line, nullptr, false);
    if (m.is_object() && m.value("type", std::string()) == "config_applied") {
      applied = true;
      EXPECT_EQ(m["rev"], 0);
      EXPECT_EQ(m["changed"]["pin_memory"], "on");  // normalized as a running session does
      EXPECT_EQ(m["knobs"]["pin_memory"], "on");
      EXPECT_EQ(m["knobs"].size(), 28u);  // the whole configuration, as during a run
    }
    if (m.is_object() && m.value("type", std::string()) == "started") EXPECT_EQ(m["config"]["pin_memory"], "on");
  }
  EXPECT_TRUE(applied) << all;
  EXPECT_NE(all.find("\"type\":\"started\""), std::string::npos) << all;
  EXPECT_NE(all.find("\"reason\":\"completed\""), std::string::npos) << all;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
