// Simulated worlds (tuner/workloads/sim_world.h): a job described by a file, checked in one line, whose step is
// its parts; and the tuner in fifty seeded random worlds it was not written against, held to what a user of
// a 300 s tune expects of it in any of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "engine/tuner.h"
#include "sim_tune_checks.h"
#include "tuner/workloads/sim_world.h"

using namespace tb::engine;

namespace {

// A small world whose every figure is known: 1 ms + 0.5 ms a sample on the GPU, 10 ms of launches, 0.1 ms a
// sample to copy, 2 ms a sample to load.
nlohmann::json small_world() {
  return nlohmann::json::parse(R"({
    "format": "tunebench-world 1", "name": "small", "cores": 4, "batch": 32,
    "parts": {
      "gpu": {"ms": 1, "per_sample_ms": 0.5, "source": "test"},
      "host": {"ms": 10, "source": "test"},
      "copy": {"per_sample_ms": 0.1, "source": "test"},
      "loader": {"per_sample_ms": 2, "contention": 0.1, "prefetch_gain": 0.2, "ceiling_samples_s": 3000, "source": "test"}
    },
    "memory": {"held_mb": 1000, "per_sample_mb": 100, "source": "test"},
    "memory_total_mb": 20000,
    "knobs": {
      "workers": {"values": ["0", "1", "2", "4"]},
      "prefetch": {"values": ["2", "4"]},
      "amp": {"values": ["off", "bf16"], "effects": {"bf16": {"gpu": 0.5, "loss": 0.01, "source": "test"}}},
      "cuda_graphs": {"values": ["off", "on"], "effects": {"on": {"host": 0.1, "source": "test"}}},
      "channels_last": {"values": ["off", "on"], "effects": {"on": {"gpu": 1.2, "source": "test"}}},
      "batch_size": {"values": ["32", "64", "128", "256"]}
    },
    "interactions": [{"when": {"amp": "bf16", "channels_last": "on"}, "effects": {"gpu": 0.5, "source": "test"}}],
    "invalid": [{"when": {"workers": "0", "prefetch": "!2"}, "why": "prefetch needs workers"}],
    "noise": {"per_pair": 0.05, "source": "test"},
    "costs": {"process_start_s": 4, "source": "test"}
  })");
}

Config with(Config c, std::initializer_list<std::pair<const char*, const char*>> kv) {
  for (auto& [k, v] : kv) c[k] = v;
  return c;
}

std::string error_of(nlohmann::json j) {
  auto m = make_world_model(j);
  return m ? std::string() : m.error().message;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5))];
}

}  // namespace

TEST(TunerWorlds, TheStepIsItsParts) {
  auto m = make_world_model(small_world());
  ASSERT_TRUE(m) << m.error().message;
  SimulatedWorkload w(1, world_options(small_world()), std::move(*m));
  const Config base = w.baseline();
  EXPECT_EQ(base.at("workers"), "0");
  EXPECT_EQ(base.at("batch_size"), "32");
  // No workers: load 64 + copy 3.2 + max(host 10, gpu 17) = 84.2 ms.
  EXPECT_NEAR(w.step_ms(base), 84.2, 1e-9);
  // Two workers: 64 / (2 / 1.1) x (1 + 0.2 / 2) = 38.72 ms of loading against 20.2 of training.
  EXPECT_NEAR(w.step_ms(with(base, {{"workers", "2"}})), 38.72, 1e-9);
  // ... and the ceiling: 4 workers would load in 20.4 ms, but 3000 samples/s is 10.67 ms for 32: the loader
  // is under it; with prefetch 4 and bf16 the training side is 3.2 + 10 = 13.2.
  EXPECT_NEAR(w.step_ms(with(base, {{"workers", "4"}, {"prefetch", "4"}, {"amp", "bf16"}})),
              64 / (4 / 1.3) * 1.05, 1e-9);
  // Factors and an interaction: bf16 halves the GPU; channels_last alone costs 20%, with bf16 it pays.
  const Config fast_loader = with(base, {{"workers", "4"}});
  EXPECT_NEAR(w.model().step(w.model().complete(with(fast_loader, {{"amp", "bf16"}}))).gpu, 8.5, 1e-9);
  EXPECT_NEAR(w.model().step(w.model().complete(with(fast_loader, {{"channels_last", "on"}}))).gpu, 20.4, 1e-9);
  EXPECT_NEAR(w.model().step(w.model().complete(with(fast_loader, {{"amp", "bf16"}, {"channels_last", "on"}}))).gpu,
              17 * 0.5 * 1.2 * 0.5, 1e-9);
  // What the job refuses, runs out of memory on, and the loss it pays.
  EXPECT_EQ(w.model().refuses(with(base, {{"prefetch", "4"}})).value_or(""), "prefetch needs workers");
  EXPECT_FALSE(w.model().refuses(with(base, {{"prefetch", "4"}, {"workers", "1"}})));
  EXPECT_FALSE(w.model().out_of_memory(with(base, {{"batch_size", "128"}})));
  EXPECT_TRUE(w.model().out_of_memory(with(base, {{"batch_size", "256"}})));
  EXPECT_NEAR(w.model().loss_penalty(with(base, {{"amp", "bf16"}})), 0.01, 1e-12);
  // The exhaustive best keeps what the file says pays.
  // (Loader-bound at 4 workers: 21.8 ms of loading against 13.2 of training, so bf16 is not worth its loss.)
  const Config best = w.best_config_where({{"batch_size", "32"}});
  EXPECT_EQ(best.at("workers"), "4");
  EXPECT_EQ(best.at("prefetch"), "4");
  EXPECT_EQ(best.at("batch_size"), "32");
}

// Each mistake a person makes writing a world is one line that says where.
TEST(TunerWorlds, ABadWorldIsOneLineThatSaysWhere) {
  EXPECT_EQ(error_of(small_world()), "");
  auto bad = [](auto edit) {
    nlohmann::json j = small_world();
    edit(j);
    return error_of(j);
  };
  EXPECT_NE(bad([](auto& j) { j["parts"]["gpu"].erase("source"); }).find("parts.gpu: no 'source'"), std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["knobs"]["amp"]["effects"]["bf16"].erase("source"); }).find("knobs.amp.effects.bf16: no 'source'"),
            std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["knobs"]["warp_speed"] = {{"values", {"a", "b", "c"}}}; }).find("knobs.warp_speed: not a knob"),
            std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["knobs"]["amp"]["effects"]["bf16"]["gpu"] = -1; }).find("knobs.amp.effects.bf16.gpu"),
            std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["knobs"]["amp"]["effects"]["bf16"]["disk"] = 0.5; }).find("'disk' is not a part"),
            std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["knobs"]["amp"]["default"] = "fp8"; }).find("its default 'fp8' is not one of its values"),
            std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["invalid"][0]["when"] = {{"workers", "0"}}; }).find("the baseline itself is invalid"),
            std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["format"] = "v2"; }).find("format"), std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["noise"]["per_pair"] = 5; }).find("noise.per_pair"), std::string::npos);
  EXPECT_NE(bad([](auto& j) { j["knobs"]["amp"]["process"] = "yes"; }).find("world: "), std::string::npos);
  for (const std::string& e : {bad([](auto& j) { j.erase("knobs"); }), bad([](auto& j) { j["cores"] = 0; })}) {
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Through the CLI: exit 2 and one line, before anything runs.
  const auto dir = std::filesystem::temp_directory_path() / ("tb_worlds_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "w.json").string();
  {
    nlohmann::json j = small_world();
    j["parts"]["host"].erase("source");
    std::ofstream(file) << j.dump(1);
  }
  const std::string cmd = std::string(TB_CLI_PATH) + " tune --simulate --profile " + file + " --budget 60 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int code = pclose(p);
  EXPECT_EQ(WEXITSTATUS(code), 2) << out;
  EXPECT_EQ(out, "tunebench-cli: error: " + file + ": parts.host: no 'source' (every figure names where it comes from: a "
                 "measurement, or 'extrapolated: why')\n");
  // A good file tunes, and every figure says it is the simulation's.
  std::ofstream(file) << small_world().dump(1);
  p = popen((std::string(TB_CLI_PATH) + " tune --simulate --profile " + file + " --budget 120 2>/dev/null").c_str(), "r");
  out.clear();
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
  EXPECT_EQ(out.rfind("simulated the profile '" + file + "'", 0), 0u) << out;
  EXPECT_NE(out.find("workers"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

// The example in the repository is a valid world, its hand configuration what the file says.
TEST(TunerWorlds, TheExampleWorldIsValid) {
  auto j = read_world_file(std::string(TB_SOURCE_DIR) + "/examples/worlds/loader-bound.json");
  ASSERT_TRUE(j) << j.error().message;
  SimulatedWorkload w(1, world_options(*j), make_world_model(*j).value());
  EXPECT_EQ(w.hand_config().at("workers"), "4");
  EXPECT_GT(w.throughput(w.hand_config()), 1.5 * w.throughput(w.baseline()));
  EXPECT_EQ(read_world_file("/nonexistent/w.json").error().message, "/nonexistent/w.json: cannot be read");
}

// The H200 world is fitted to GPU round 5 (docs/gpu-results.md): it must give back the figures it cites, the tie
// included (a second worker and CUDA graphs each pay little alone at the host-bound step, together ~3.5x).
TEST(TunerWorlds, TheH200WorldGivesBackWhatTheH200Measured) {
  auto j = read_world_file(std::string(TB_SOURCE_DIR) + "/examples/worlds/h200-resnet50-jpeg.json");
  ASSERT_TRUE(j) << j.error().message;
  SimulatedWorkload w(1, world_options(*j), make_world_model(*j).value());
  const Config base = w.baseline();
  auto at = [&](std::map<std::string, std::string> c) {
    Config x = base;
    for (const auto& [k, v] : c) x[k] = v;
    return w.throughput(x);
  };
  auto near = [](double got, double want, double tol) { return std::abs(got / want - 1) <= tol; };
  EXPECT_PRED3(near, w.throughput(base), 392.9, 0.05);              // call 1: naive
  EXPECT_PRED3(near, w.throughput(w.hand_config()), 1477.6, 0.05);  // call 1: the hand sequence
  EXPECT_PRED3(near, at({{"workers", "1"}}), 700.0, 0.07);          // call 3's windows 670-770, call 4
  EXPECT_PRED3(near, at({{"workers", "2"}}), 695.1, 0.05);          // call 4
  EXPECT_PRED3(near, at({{"workers", "1"}, {"amp", "bf16"}}), 697.2, 0.05);
  EXPECT_PRED3(near, at({{"workers", "2"}, {"amp", "bf16"}}), 718.3, 0.05);
  // Graphs at one worker 1.169x, a second worker on top of them 1.680x (call 1). Call 3 measured the graphs at
  // one worker 0.942x and 1.036x; a loader of one per-sample cost cannot give both that and batch 64's 1.17x at
  // one worker, and the file takes call 1's figure (docs/tuning.md says what that flatters).
  const double w1 = at({{"workers", "1"}}), g1 = at({{"workers", "1"}, {"cuda_graphs", "on"}}),
               g2 = at({{"workers", "2"}, {"cuda_graphs", "on"}});
  EXPECT_PRED3(near, g1 / w1, 1.169, 0.05);
  EXPECT_PRED3(near, g2 / g1, 1.680, 0.05);
  EXPECT_PRED3(near, at({{"workers", "1"}, {"batch_size", "64"}}) / w1, 1.17, 0.05);  // call 3: 1.170x
  // Call 3's trials from a worker-fed reference varied 17.7% a pair, the baseline's A/A 2.6-11.1%.
  EXPECT_DOUBLE_EQ(w.model().window_noise_scale(base), 1.0);
  EXPECT_NEAR(w.model().window_noise_scale(with(base, {{"workers", "1"}})), 0.177 / 0.11, 1e-9);
}

// The H200 world with its tie made exact: one loader worker feeds the step as fast as the host launches it
// (prefetch_gain 0.49 instead of 0.17, which call 3's graphs at one worker, 0.942x and 1.036x, suggest), so a
// second worker and CUDA graphs each pay nothing alone and ~1.9x together. Tuned as the H200 was (300 s, the
// batch pinned), every seed must keep both: a search that pairs them only once no single is left ended at
// 1.40x and 1.71x in two of twenty seeds (channels_last + fused_optimizer + workers=2; workers=1).
TEST(TunerWorlds, ASecondWorkerAndGraphsThatTieArePairedBeforeTheSearchMovesOn) {
  auto j = read_world_file(std::string(TB_SOURCE_DIR) + "/examples/worlds/h200-resnet50-jpeg.json");
  ASSERT_TRUE(j) << j.error().message;
  (*j)["parts"]["loader"]["prefetch_gain"] = 0.49;
  (*j)["parts"]["loader"]["source"] = "extrapolated: the H200 world's loader with one worker as slow as the host's launches";
  int kept = 0;
  std::string missed;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    SimulatedWorkload w(seed, world_options(*j), make_world_model(*j).value());
    const Config tie = with(w.baseline(), {{"workers", "1"}});
    ASSERT_LT(std::abs(w.throughput(with(tie, {{"workers", "2"}})) / w.throughput(tie) - 1), 0.03);
    ASSERT_LT(std::abs(w.throughput(with(tie, {{"cuda_graphs", "on"}})) / w.throughput(tie) - 1), 0.03);
    TuneOptions o;
    o.budget_s = 300;
    o.seed = seed;
    o.skip_knobs = {"batch_size"};
    const TuneResult r = run_tune(w, o);
    const Config fin = w.model().complete(r.final_config);
    const bool both = fin.at("cuda_graphs") == "on" && std::stoi(fin.at("workers")) >= 2;
    kept += both;
    if (!both) {
      missed += " seed " + std::to_string(seed) + ":";
      for (const auto& [k, v] : r.final_config) missed += " " + k + "=" + v;
      missed += ";";
    }
  }
  EXPECT_EQ(kept, 12) << "kept CUDA graphs with two or more workers in " << kept << " of 12:" << missed;
}

TEST(TunerWorlds, RandomWorldsAreValidVariedAndSeeded) {
  std::set<std::string> shapes;
  int with_batch = 0, with_harm = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const nlohmann::json j = random_world(seed);
    EXPECT_EQ(j, random_world(seed));
    auto m = make_world_model(j);
    ASSERT_TRUE(m) << seed << ": " << m.error().message;
    SimulatedWorkload w(seed, world_options(j), std::move(*m));
    const auto s = w.model().step(w.baseline());
    shapes.insert(s.data_wait > 0.5 * s.step ? "loader" : s.launch > s.gpu ? "launch" : "compute");
    with_batch += j["knobs"].contains("batch_size");
    // A knob value that hurts on its own at the baseline.
    for (const auto& k : w.knobs())
      for (const auto& v : k.info.choices)
        if (v != k.value && w.throughput(with(w.baseline(), {{k.info.id.c_str(), v.c_str()}})) < 0.97 * w.throughput(w.baseline())) {
          ++with_harm;
          goto next;
        }
  next:;
    const double pair = j["noise"]["per_pair"];
    EXPECT_GE(pair, 0.02);
    EXPECT_LE(pair, 0.20);
  }
  EXPECT_EQ(shapes.size(), 3u);
  EXPECT_GE(with_batch, 15);
  EXPECT_GE(with_harm, 10);
}

// Fifty random worlds, a 300 s tune each (the budget of the README's GPU tune): the median reaches 90% of the
// world's best configuration at the baseline's batch (exhaustive, in the model); no world keeps a knob that
// hurts by more than its noise floor; every tune keeps the rules of sim_tune_checks.h (its budget spent or
// every knob measured, within its margin, nothing given up for budget while the budget could reach it).
TEST(TunerWorlds, FiftyRandomWorldsAt300s) {
  std::vector<double> reached, used;
  int every = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const nlohmann::json j = random_world(seed);
    // TB_WORLD_DIR=D keeps each world as D/world-N.json, to rerun one with tune --simulate --profile FILE --seed N.
    if (const char* dir = std::getenv("TB_WORLD_DIR"))
      std::ofstream(std::string(dir) + "/world-" + std::to_string(seed) + ".json") << j.dump(1);
    SimulatedWorkload w(seed, world_options(j), make_world_model(j).value());
    TuneOptions o;
    o.budget_s = 300;
    // Like for like: the batch stays the baseline's on both sides (a bigger batch is a recipe change, which a
    // user pins with --set; TunerGpuSim holds the search to trying it).
    o.skip_knobs = {"batch_size"};
    const TuneResult r = run_tune(w, o);
    const Config base = w.baseline();
    const Config fin = w.model().complete(r.final_config);
    Config fixed;
    if (base.count("batch_size")) fixed["batch_size"] = base.at("batch_size");
    const Config best = w.best_config_where(fixed);
    reached.push_back(w.fresh_throughput(fin) / w.fresh_throughput(best));
    if (std::getenv("TB_WORLD_DIR"))
      std::printf("world %d: %.2f of best, %.0f s used, ended: %s\n", int(seed), reached.back(), r.elapsed_s, r.ended.c_str());
    used.push_back(r.elapsed_s / 300);
    every += r.ended.find("every applicable knob was tried") != std::string::npos;
    const double floor = j["noise"]["per_pair"].get<double>();
    for (const auto& p : test::rule_problems(w, r, 300, o.overrun, std::max(0.02, floor), best))
      ADD_FAILURE() << "world " << seed << ": " << p << "\n  ended: " << r.ended;
  }
  // Any of them again, as a user would: tune --simulate --profile random:N (the same world, the same tune).
  const std::string cmd = std::string(TB_CLI_PATH) + " tune --simulate --profile random:46 --seed 46 --budget 300 "
                          "--set batch_size=32 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
  EXPECT_EQ(out.rfind("simulated the profile 'random:46', seed 46", 0), 0u) << out;
  EXPECT_NE(out.find("best "), std::string::npos) << out;
  std::printf("worlds: reached of best at the baseline's batch: min %.2f p10 %.2f median %.2f p90 %.2f; budget used: "
              "min %.2f median %.2f max %.2f; every knob tried in %d of %zu\n",
              quantile(reached, 0), quantile(reached, 0.1), quantile(reached, 0.5), quantile(reached, 0.9),
              quantile(used, 0), quantile(used, 0.5), quantile(used, 1), every, reached.size());
  EXPECT_GE(quantile(reached, 0.5), 0.90);
}
