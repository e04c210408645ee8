// Engine vs PyTorch: the same mnist_cnn training loop on synthetic data, same thread count, same default
// knobs (AdamW per-parameter loop, zero_grad memset, loss read every step), against PyTorch eager and against
// the same loop with torch.compile (inductor), all on the LibTorch of one PyTorch wheel (the engine links the
// wheel of the Python it starts). Rounds alternate (eager, compiled, engine) so load drift hits all alike;
// prints each round, then the median ratio with the range over rounds. Not run in CI.
//
//   bench_engine_vs_python [--steps N] [--batch B] [--threads T] [--rounds R] [--python PY] [--no-compile]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.h"

int main(int argc, char** argv) {
  int steps = 30, batch = 64, warmup = 5, rounds = 3;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  std::string python = TB_BENCH_PYTHON[0] ? TB_BENCH_PYTHON : "python3";
  bool with_compile = true;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--no-compile")) with_compile = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--python")) python = argv[i + 1];
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
  }

  const auto script = std::filesystem::path(TB_BENCH_DIR) / "mnist_eager.py";
  const std::string cmd = python + " " + script.string() + " --steps " + std::to_string(steps) + " --warmup " +
                          std::to_string(warmup) + " --batch " + std::to_string(batch) + " --threads " +
                          std::to_string(threads);
  tb::engine::SessionOptions o;
  o.model = "mnist_cnn";
  o.data = "synthetic";
  o.warmup_steps = warmup;
  o.drift_guard_steps = 0;
  o.threads = threads;
  o.knobs["batch_size"] = std::to_string(batch);
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  auto range = [](const std::vector<double>& v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "[%.2f, %.2f]", *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(buf);
  };
  // One run of the Python loop: its median samples/s, or 0 (with the reason printed) when it failed.
  std::string torch_version;
  auto python_rate = [&](const std::string& c) {
    std::string out;
    if (FILE* p = popen(c.c_str(), "r")) {
      char buf[512];
      while (fgets(buf, sizeof buf, p)) out += buf;
      const int rc = pclose(p);
      auto j = nlohmann::json::parse(out.substr(out.rfind('{') == std::string::npos ? 0 : out.rfind('{')), nullptr, false);
      if (rc == 0 && !j.is_discarded()) {
        torch_version = j.value("torch", "");
        return j["samples_per_s"].get<double>();
      }
    }
    std::fprintf(stderr, "python side failed (%s): %s\n", c.c_str(), out.c_str());
    return 0.0;
  };
  std::vector<double> eager_rates, compiled_rates, engine_rates, vs_eager, vs_compiled;
  for (int round = 0; round < rounds; ++round) {
    const double eager = python_rate(cmd);
    const double compiled = with_compile ? python_rate(cmd + " --compile") : 0.0;
    if (eager <= 0 || (with_compile && compiled <= 0)) return 1;
    auto s = tb::engine::Session::create(o);
    std::vector<double> rates;
    for (int i = 0; i < warmup + steps; ++i) {
      auto r = s->step();
      if (!r.warmup) rates.push_back(double(r.samples) * 1e9 / double(r.wall_ns));
    }
    const double engine = median(rates);
    eager_rates.push_back(eager);
    engine_rates.push_back(engine);
    vs_eager.push_back(engine / eager);
    if (with_compile) {
      compiled_rates.push_back(compiled);
      vs_compiled.push_back(engine / compiled);
    }
    std::printf("  round %d: eager %8.1f  compiled %8.1f  engine %8.1f samples/s  engine/eager %.2fx\n", round + 1,
                eager, compiled, engine, engine / eager);
  }

  std::printf("torch %s; mnist_cnn synthetic batch %d, %d threads, %d rounds x %d measured steps (median samples/s)\n",
              torch_version.c_str(), batch, threads, rounds, steps);
  std::printf("  pytorch eager          : %10.1f samples/s\n", median(eager_rates));
  if (with_compile) std::printf("  pytorch torch.compile  : %10.1f samples/s\n", median(compiled_rates));
  std::printf("  tunebench engine       : %10.1f samples/s\n", median(engine_rates));
  std::printf("  ratio engine/eager     : %10.2fx median of rounds, range %s\n", median(vs_eager), range(vs_eager).c_str());
  if (with_compile)
    std::printf("  ratio engine/compiled  : %10.2fx median of rounds, range %s\n", median(vs_compiled),
                range(vs_compiled).c_str());
  return 0;
}
