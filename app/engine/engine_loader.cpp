#include "engine_loader.h"

#include <algorithm>
#include <thread>

namespace tb::cli {

client::LoaderVerdict engine_loader_verdict(const nlohmann::json& describe, const std::vector<engine::StepRecord>& records,
                                            const measure::SystemLoad& load, const measure::TreeCpuProbe& own) {
  const nlohmann::json parts =
      describe.contains("loader") ? describe["loader"].value("parts", nlohmann::json()) : nlohmann::json();
  int64_t samples = 0, wall = 0, wait = 0, h2d = 0, all_samples = 0, loading_cpu = 0;
  for (const auto& r : records) {
    all_samples += r.samples;
    if (!r.warmup) samples += r.samples, wall += r.wall_ns, wait += r.data_wait_ns, h2d += r.h2d_ns;
  }
  if (parts.is_array())
    for (const auto& p : parts) loading_cpu += p.value("cpu_ns", int64_t(0));
  // The training's own CPU a sample: the process's since the steps began less its loader's (whose first
  // batches, made before, are in it too: the training's is a little under).
  const long long cpu = own.cpu_ns();
  const double train_cpu_ms =
      cpu >= 0 && all_samples > 0 ? double(std::max<long long>(0, cpu - loading_cpu)) / 1e6 / double(all_samples) : 0;
  const int machine = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const double own_cores = own.cores();
  const int free = own_cores >= 0 && load.busy_share == load.busy_share
                       ? client::cores_free(machine, load.busy_share, own_cores)
                       : machine;
  client::LoaderVerdict v = client::loader_verdict(parts, samples, wall, wait, free, train_cpu_ms);
  v.machine_cores = machine;
  v.add_transfer(h2d, wall);  // the engine times its batches' copies to the device apart from the wait
  return v;
}

}  // namespace tb::cli
