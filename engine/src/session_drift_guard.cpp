// The loss-drift guard of the engine's Session (session_impl.h): a change that may alter numerics is run
// against the previous configuration over the same seeded batches from the same saved state.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <random>

#include "session_impl.h"

#if TUNEBENCH_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace tb::engine::session_detail {

Snapshot SessionImpl::snapshot() {
  Snapshot s;
  for (auto& t : model_->state_tensors()) s.model.push_back(t.detach().clone());
  s.optim = optim_.snapshot();
  s.scale = scale_.clone();
  s.growth = growth_.clone();
  s.micro = micro_;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    s.rng = gen.get_state();
  }
#if TUNEBENCH_TORCH_CUDA
  if (device_.is_cuda()) {
    auto cg = at::cuda::detail::getDefaultCUDAGenerator(device_.index() < 0 ? 0 : device_.index());
    std::lock_guard<std::mutex> lock(cg.mutex());
    s.rng_cuda = cg.get_state();
  }
#endif
  return s;
}

void SessionImpl::restore(const Snapshot& s) {
  {
    torch::NoGradGuard no_grad;
    auto cur = model_->state_tensors();
    for (size_t i = 0; i < cur.size() && i < s.model.size(); ++i) cur[i].copy_(s.model[i]);
    for (auto& t : cur) t.mutable_grad() = torch::Tensor();
  }
  optim_.restore(s.optim);
  scale_.copy_(s.scale);
  growth_.copy_(s.growth);
  micro_ = s.micro;
  {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(s.rng);
  }
#if TUNEBENCH_TORCH_CUDA
  if (s.rng_cuda.defined()) {
    auto cg = at::cuda::detail::getDefaultCUDAGenerator(device_.index() < 0 ? 0 : device_.index());
    std::lock_guard<std::mutex> lock(cg.mutex());
    cg.set_state(s.rng_cuda);
  }
#endif
}

// Seeded batches straight from the dataset (independent of the loader's position and workers).
std::vector<std::pair<torch::Tensor, torch::Tensor>> SessionImpl::guard_batches(int64_t batch, int count) {
  const auto& in = model_->input();
  std::vector<std::pair<torch::Tensor, torch::Tensor>> out;
  std::mt19937_64 rng(opts_.seed + 7919);
  int64_t index = 0;
  const int64_t n = std::max<int64_t>(1, dataset_->size());
  for (int k = 0; k < count; ++k) {
    auto x = torch::empty({batch, in.channels, in.height, in.width});
    auto y = torch::empty({batch}, torch::kLong);
    int64_t filled = 0, tries = 0;
    while (filled < batch && tries < batch * 4 + 16) {
      int64_t label = 0;
      if (dataset_->load(index % n, rng, x[filled].data_ptr<float>(), label)) {
        y[filled] = label;
        ++filled;
      }
      ++index;
      ++tries;
    }
    if (filled < batch) throw EngineError("loss-drift guard: the dataset yields too few readable samples");
    out.emplace_back(x.to(device_), y.to(device_));
  }
  return out;
}

std::vector<double> SessionImpl::guard_run(const Config& c, const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches) {
  realize(c, nullptr, /*touch_loader=*/false);
  micro_ = 0;
  const int64_t bs = num(c, "batch_size");
  std::vector<double> losses;
  for (size_t k = 0; k < batches.size(); ++k) {
    torch::manual_seed(opts_.seed + 104729 + k);  // same dropout masks in both runs
    StepRecord r;
    auto x = batches[k].first.narrow(0, 0, std::min<int64_t>(bs, batches[k].first.size(0)));
    auto y = batches[k].second.narrow(0, 0, x.size(0));
    losses.push_back(train_micro_batch(x, y, r, true));
  }
  return losses;
}

void SessionImpl::drift_guard(const Config& before, const Config& after) {
  const int steps = opts_.drift_guard_steps;
  const int64_t bs = std::max(num(before, "batch_size"), num(after, "batch_size"));
  auto batches = guard_batches(bs, steps);
  const std::vector<std::string> saved_warnings = warnings_;
  Snapshot snap = snapshot();
  std::vector<double> base, test;
  try {
    base = guard_run(before, batches);
    restore(snap);
    test = guard_run(after, batches);
    restore(snap);
  } catch (...) {
    restore(snap);
    realize(config_, nullptr, false);
    throw;
  }
  realize(config_, nullptr, false);
  warnings_ = saved_warnings;  // the guard's own runs must not repeat messages
  double worst = 0;
  bool finite = true;
  for (size_t i = 0; i < base.size(); ++i) {
    if (!std::isfinite(base[i]) || !std::isfinite(test[i])) {
      finite = std::isfinite(base[i]) == std::isfinite(test[i]) && finite && std::isfinite(test[i]);
      continue;
    }
    worst = std::max(worst, std::abs(test[i] - base[i]) / std::max(std::abs(base[i]), 1e-3));
  }
  const bool ok = finite && worst <= opts_.drift_tolerance;
  nlohmann::json changed = nlohmann::json::object();
  for (const auto& [k, v] : after)
    if (val(before, k.c_str()) != v && find_knob(k)->changes_numerics) changed[k] = v;
  drift_checks_.push_back({{"rev", rev_ + 1}, {"changed", changed}, {"steps", steps}, {"baseline", base},
                           {"test", test}, {"max_rel_diff", worst}, {"tolerance", opts_.drift_tolerance},
                           {"ok", ok}});
  if (!ok)
    warnings_.push_back("loss-drift guard: " + changed.dump() + " moved the loss by " +
                        std::to_string(int(worst * 100 + 0.5)) + "% over " + std::to_string(steps) +
                        " seeded steps (tolerance " + std::to_string(int(opts_.drift_tolerance * 100 + 0.5)) + "%)" +
                        (finite ? "" : "; the loss became non-finite"));
}

}  // namespace tb::engine::session_detail
