#include "optimizer.h"

#include <cmath>

namespace tb::engine {

AdamW::ParamState& AdamW::state_for(const torch::Tensor& p) {
  auto& s = state_[p.unsafeGetTensorImpl()];
  if (!s.exp_avg.defined()) {
    s.exp_avg = torch::zeros_like(p, at::MemoryFormat::Preserve);
    s.exp_avg_sq = torch::zeros_like(p, at::MemoryFormat::Preserve);
  }
  return s;
}

void AdamW::match_layouts(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (p.dim() != 4) continue;
    auto it = state_.find(p.unsafeGetTensorImpl());
    if (it == state_.end() || !it->second.exp_avg.defined()) continue;
    const auto fmt = p.is_contiguous() ? at::MemoryFormat::Contiguous
                     : p.is_contiguous(at::MemoryFormat::ChannelsLast) ? at::MemoryFormat::ChannelsLast
                                                                       : at::MemoryFormat::Contiguous;
    it->second.exp_avg = it->second.exp_avg.contiguous(fmt);
    it->second.exp_avg_sq = it->second.exp_avg_sq.contiguous(fmt);
  }
}

void AdamW::step(const std::vector<torch::Tensor>& params, bool foreach) {
  torch::NoGradGuard no_grad;
  const double lr = opts_.lr, b1 = opts_.beta1, b2 = opts_.beta2, eps = opts_.eps;
  std::vector<torch::Tensor> P, G, M, V;
  std::vector<at::Scalar> denom_scale, step_size;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto& s = state_for(p);
    ++s.step;
    const double bc1 = 1.0 - std::pow(b1, double(s.step));
    const double bc2 = 1.0 - std::pow(b2, double(s.step));
    if (!foreach) {
      // torch.optim.AdamW's single-tensor path.
      auto g = p.grad();
      p.mul_(1.0 - lr * opts_.weight_decay);
      s.exp_avg.mul_(b1).add_(g, 1.0 - b1);
      s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
      auto denom = (s.exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(eps);
      p.addcdiv_(s.exp_avg, denom, -lr / bc1);
      continue;
    }
    P.push_back(p);
    G.push_back(p.grad());
    M.push_back(s.exp_avg);
    V.push_back(s.exp_avg_sq);
    denom_scale.emplace_back(std::sqrt(bc2));
    step_size.emplace_back(-lr / bc1);
  }
  if (foreach && !P.empty()) {
    torch::_foreach_mul_(P, 1.0 - lr * opts_.weight_decay);
    torch::_foreach_mul_(M, b1);
    torch::_foreach_add_(M, G, 1.0 - b1);
    torch::_foreach_mul_(V, b2);
    torch::_foreach_addcmul_(V, G, G, 1.0 - b2);
    auto denom = torch::_foreach_sqrt(V);
    torch::_foreach_div_(denom, denom_scale);
    torch::_foreach_add_(denom, eps);
    torch::_foreach_addcdiv_(P, M, denom, step_size);
  }
  ++steps_;
}

void AdamW::step_capturable(const std::vector<torch::Tensor>& params, torch::Tensor& step_count) {
  torch::NoGradGuard no_grad;
  const double lr = opts_.lr, b1 = opts_.beta1, b2 = opts_.beta2, eps = opts_.eps;
  step_count.add_(1);
  auto bc1 = 1 - torch::pow(b1, step_count);
  auto bc2_sqrt = (1 - torch::pow(b2, step_count)).sqrt();
  auto step_size = bc1.reciprocal().mul(-lr);
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto& s = state_for(p);
    auto g = p.grad();
    p.mul_(1.0 - lr * opts_.weight_decay);
    s.exp_avg.mul_(b1).add_(g, 1.0 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
    auto denom = (s.exp_avg_sq.sqrt() / bc2_sqrt).add_(eps);
    p.add_(s.exp_avg / denom * step_size);
  }
}

void AdamW::sync_step_counts() {
  // Every parameter in use steps together (the engine never steps a subset), so one count fits all.
  for (auto& [key, s] : state_) s.step = steps_;
}

std::unordered_map<const void*, AdamW::ParamState> AdamW::snapshot() const {
  auto out = state_;
  for (auto& [k, s] : out) {
    if (s.exp_avg.defined()) s.exp_avg = s.exp_avg.clone();
    if (s.exp_avg_sq.defined()) s.exp_avg_sq = s.exp_avg_sq.clone();
  }
  return out;
}

}  // namespace tb::engine
