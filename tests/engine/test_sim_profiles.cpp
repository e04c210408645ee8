// The built-in simulation profiles are world files of the repository (engine/profiles/, compiled in): the
// file and the built-in name are one job; every figure of an "ops" world names its source and a bad one is one
// line; a user's own file can extend a built-in one and change what their GPU measured.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "engine/tuner.h"
#include "tuner/workloads/sim_workload.h"
#include "tuner/workloads/sim_world.h"

using namespace tb::engine;

namespace {

const std::pair<const char*, const char*> kProfiles[] = {{"gpu", "h100-resnet50-jpeg.json"},
                                                          {"gpu-synthetic", "h100-resnet50-synthetic.json"},
                                                          {"script-gpu", "h100-imagenet-script.json"}};

std::string profile_path(const char* file) { return std::string(TB_SOURCE_DIR) + "/engine/profiles/" + file; }

nlohmann::json engine_profile() {
  std::ifstream in(profile_path("h100-resnet50-jpeg.json"));
  return nlohmann::json::parse(in);
}

std::string error_of(const nlohmann::json& j) {
  auto m = make_world_model(j);
  return m ? std::string() : m.error().message;
}

Config with(Config c, const std::string& k, const std::string& v) {
  c[k] = v;
  return c;
}

}  // namespace

// `--profile gpu` and `--profile engine/profiles/h100-resnet50-jpeg.json` are the same job: the same step
// under every configuration the tests look at, and the same tune from the same seed.
TEST(SimProfiles, TheBuiltInProfilesAreTheRepositorysFiles) {
  for (const auto& [name, file] : kProfiles) {
    SCOPED_TRACE(name);
    auto j = read_world_file(profile_path(file));
    ASSERT_TRUE(j) << j.error().message;
    EXPECT_EQ(j->at("name"), name);
    SimulatedWorkload builtin(3, sim_options_for(name));
    SimulatedWorkload from_file(3, world_options(*j), make_world_model(*j).value());
    for (const Config& c : {builtin.baseline(), builtin.hand_config(), builtin.best_config(),
                            with(builtin.baseline(), "amp", "bf16"), with(builtin.hand_config(), "channels_last", "on")})
      EXPECT_DOUBLE_EQ(builtin.throughput(c), from_file.throughput(c));
    TuneOptions o;
    o.budget_s = 120;
    o.seed = 3;
    const TuneResult a = run_tune(builtin, o), b = run_tune(from_file, o);
    EXPECT_EQ(a.final_config, b.final_config);
    EXPECT_DOUBLE_EQ(a.speedup.ratio, b.speedup.ratio);
    EXPECT_DOUBLE_EQ(a.speedup.lo, b.speedup.lo);
  }
  // The names the CLI offers are the files' names.
  const auto names = sim_model_names();
  for (const auto& [name, file] : kProfiles) EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

// A world's best configuration (the exhaustive search the report's "best" comes from) is kept per world for the
// process: a world that differs in one figure gets its own, and the same world read again gets the first answer.
TEST(SimProfiles, EachWorldHasItsOwnBestConfiguration) {
  SimulatedWorkload a(1, sim_options_for("gpu"));
  const Config best = a.best_config();
  // The same world with a little less memory than its best configuration's peak: that one no longer fits.
  nlohmann::json less = engine_profile();
  less["memory_total_mb"] = a.model().step(best).peak_mb * 0.99;
  SimulatedWorkload b(1, world_options(less), make_world_model(less).value());
  ASSERT_TRUE(b.model().out_of_memory(best));
  const Config b_best = b.best_config();
  EXPECT_NE(b_best, best);
  EXPECT_EQ(b_best, b.best_config_where({}));
  EXPECT_FALSE(b.model().out_of_memory(b_best));
  auto again = read_world_file(profile_path("h100-resnet50-jpeg.json"));
  ASSERT_TRUE(again) << again.error().message;
  SimulatedWorkload c(2, world_options(*again), make_world_model(*again).value());
  EXPECT_EQ(c.best_config(), best);
  EXPECT_EQ(c.best_config(), c.best_config_where({}));
}

// A process starts every knob it has: one that starts with cuDNN's autotuner pays its search (the H200's 13.9 s
// first step, the gpu profile's costs.startup_s) on top of the start every process pays, and a running process
// asked for it pays nothing (the knob waits for a process). Virtual seconds: the simulation's own accounts.
TEST(SimProfiles, AFreshProcessPaysTheStartUpsOfItsKnobs) {
  SimulatedWorkload w(1, sim_options_for("gpu"));
  const Config base = w.baseline();
  auto cost = [&](const Config& c) {
    const double t0 = w.now_s();
    EXPECT_TRUE(w.measure_fresh(c, 5));
    return w.now_s() - t0;
  };
  const double off = cost(with(base, "cudnn_benchmark", "off")), on = cost(with(base, "cudnn_benchmark", "on"));
  EXPECT_GE(on - off, 13.9 * 0.8) << off << " s against " << on << " s";
  const double t0 = w.now_s();
  w.apply(with(base, "cudnn_benchmark", "on"));
  EXPECT_LT(w.now_s() - t0, 13.9 * 0.5);
}

// Every figure names its source; a field the format does not know, a knob the engine does not have, a world
// it extends that is nowhere: each one line naming where.
TEST(SimProfiles, AnOpsWorldIsCheckedFieldByField) {
  const nlohmann::json good = engine_profile();
  ASSERT_EQ(error_of(good), "");
  for (const char* part : {"gpu", "host", "optimizer", "sync", "copy", "loader", "memory"}) {
    nlohmann::json j = good;
    j["step"][part].erase("source");
    EXPECT_EQ(error_of(j), std::string("step.") + part +
                               ": no 'source' (every figure names where it comes from: a measurement, or "
                               "'extrapolated: why')");
  }
  for (const char* section : {"loss", "costs", "noise"}) {
    nlohmann::json j = good;
    j[section].erase("source");
    EXPECT_NE(error_of(j).find(std::string(section) + ": no 'source'"), std::string::npos) << section;
  }
  auto bad = [&](auto change) {
    nlohmann::json j = good;
    change(j);
    const std::string e = error_of(j);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    return e;
  };
  EXPECT_EQ(bad([](auto& j) { j["step"]["gpu"]["per_sample_ms"]["fp8"] = 0.1; }),
            "step.gpu.per_sample_ms: unknown field 'fp8'");
  EXPECT_EQ(bad([](auto& j) { j["step"]["host"]["op_ms"] = "fast"; }), "step.host.op_ms: not a number");
  EXPECT_EQ(bad([](auto& j) { j["step"]["optimizer"].erase("params"); }), "step.optimizer: 'params' is missing");
  EXPECT_EQ(bad([](auto& j) { j["knobs"] = nlohmann::json::array({{{"id", "warp_speed"}, {"engine", true}}}); }),
            "knobs.warp_speed: not a knob of the engine's catalog (tunebench-cli knobs lists them)");
  EXPECT_EQ(bad([](auto& j) { j["search_space"][0]["knob"] = "warp_speed"; }),
            "search_space[0]: 'warp_speed' is not one of the world's knobs");
  EXPECT_EQ(bad([](auto& j) { j["job"] = {{"workers", "4"}, {"source", "t"}}; }),
            "job.workers: a knob of the world (the job's own settings are what it has no knob for)");
  EXPECT_EQ(bad([](auto& j) { j["shape"] = "graph"; }), "world.shape: \"parts\" (the default) or \"ops\"");
  EXPECT_EQ(bad([](auto& j) { j["hand"]["warp_speed"] = "on"; }), "world.hand: 'warp_speed' is not one of the world's knobs");
  auto missing = resolve_extends(nlohmann::json{{"extends", "no-such-world.json"}}, "/nonexistent");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "world.extends: 'no-such-world.json' is neither beside it nor a built-in profile's file");
}

// A user with another GPU copies nothing: their file extends the built-in one and changes what they measured;
// through the CLI it tunes, and says it is a simulation.
TEST(SimProfiles, AUserFileExtendsABuiltInProfile) {
  const auto dir = std::filesystem::temp_directory_path() / ("tb_profiles_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "my-gpu.json").string();
  std::ofstream(file) << R"({"extends": "h100-resnet50-jpeg.json", "name": "my-gpu",
    "step": {"gpu": {"per_sample_ms": {"amp_channels_last": 0.2}, "source": "my GPU: 0.2 ms a sample in bf16 NHWC"}}})";
  auto j = read_world_file(file);
  ASSERT_TRUE(j) << j.error().message;
  SimulatedWorkload mine(1, world_options(*j), make_world_model(*j).value());
  SimulatedWorkload h100(1, sim_options_for("gpu"));
  const Config fast = with(with(h100.hand_config(), "channels_last", "on"), "batch_size", "128");
  EXPECT_GT(mine.throughput(fast), 1.2 * h100.throughput(fast));
  EXPECT_DOUBLE_EQ(mine.throughput(h100.baseline()), h100.throughput(h100.baseline()));  // fp32: unchanged
  const std::string cmd = std::string(TB_CLI_PATH) + " tune --simulate --profile " + file + " --budget 60 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
  EXPECT_EQ(out.rfind("simulated the profile '" + file + "'", 0), 0u) << out;
  std::filesystem::remove_all(dir);
}
