// Engine vs PyTorch eager: the same mnist_cnn training loop on synthetic data, same thread count, same
// default knobs (AdamW per-parameter loop, zero_grad memset, loss read every step). Prints samples/s of both
// and the ratio (goal: engine >= 1.2x). Not run in CI.
//
// Both run on the same LibTorch. The engine's edge is its CPU dense-layer path (engine/src/dense.h): on a
// LibTorch whose BLAS is the reference one (Debian 12), it runs Linear through oneDNN. Run with
// TUNEBENCH_CPU_DENSE=blas to compare the bare loops on identical kernels (about 1.0x: the loop is
// compute-bound, Python's per-op overhead is ~1 ms of the step).
//
//   bench_engine_vs_python [--steps N] [--batch B] [--threads T] [--rounds R] [--python /usr/bin/python3]
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
  std::string python = "/usr/bin/python3";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--python")) python = argv[i + 1];
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
  }

  // Alternate Python and engine rounds (A/B/A/B) so load drift on a shared machine hits both alike;
  // report the median of the per-round ratios.
  const auto script = std::filesystem::path(TB_BENCH_DIR) / "mnist_eager.py";
  std::string cmd = python + " " + script.string() + " --steps " + std::to_string(steps) + " --warmup " +
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
  std::vector<double> py_rates, engine_rates, ratios;
  for (int round = 0; round < rounds; ++round) {
    double py_rate = 0;
    if (FILE* p = popen(cmd.c_str(), "r")) {
      std::string out;
      char buf[512];
      while (fgets(buf, sizeof buf, p)) out += buf;
      int rc = pclose(p);
      auto j = nlohmann::json::parse(out, nullptr, false);
      if (rc != 0 || j.is_discarded()) {
        std::fprintf(stderr, "python side failed (%s): %s\n", cmd.c_str(), out.c_str());
        return 1;
      }
      py_rate = j["samples_per_s"].get<double>();
    }
    auto s = tb::engine::Session::create(o);
    std::vector<double> rates;
    for (int i = 0; i < warmup + steps; ++i) {
      auto r = s->step();
      if (!r.warmup) rates.push_back(double(r.samples) * 1e9 / double(r.wall_ns));
    }
    const double engine_rate = median(rates);
    py_rates.push_back(py_rate);
    engine_rates.push_back(engine_rate);
    ratios.push_back(engine_rate / py_rate);
    std::printf("  round %d: python %8.1f  engine %8.1f samples/s  ratio %.2fx\n", round + 1, py_rate, engine_rate,
                engine_rate / py_rate);
  }

  std::printf("engine cpu dense path: %s\n", tb::engine::environment_info().value("cpu_dense", "n/a").c_str());
  std::printf("mnist_cnn synthetic batch %d, %d threads, %d rounds x %d measured steps (median samples/s)\n", batch,
              threads, rounds, steps);
  std::printf("  pytorch eager (python): %10.1f samples/s\n", median(py_rates));
  std::printf("  tunebench engine      : %10.1f samples/s\n", median(engine_rates));
  std::printf("  ratio engine/python   : %10.2fx median of rounds (goal >= 1.2x)\n", median(ratios));
  return 0;
}
