// The data-parallel part of the Session (session_impl.h): the Reducer follows the parameters and the DDP
// knobs, and the store-based gather the run uses to collect every rank's results.
#include <chrono>
#include <cstring>

#include "session_impl.h"

namespace tb::engine::session_detail {

bool is_ddp_knob(const std::string& id) {
  return id == "bucket_cap_mb" || id == "gradient_as_bucket_view" || id == "comm_hook" ||
         id == "broadcast_buffers" || id == "static_graph";
}

void SessionImpl::realize_ddp(const Config& c) {
  dist::DdpSettings s;
  s.bucket_cap_mb = std::max<int64_t>(1, num(c, "bucket_cap_mb"));
  s.gradient_as_bucket_view = on(c, "gradient_as_bucket_view");
  s.comm_hook = val(c, "comm_hook");
  s.broadcast_buffers = on(c, "broadcast_buffers");
  s.static_graph = on(c, "static_graph");
  // Gradient accumulation runs no_sync micro-batches, which a 2.x static-graph Reducer miscounts (compat.h).
  const bool refuse_static = s.static_graph && flags_.grad_accumulation > 1 && compat::ddp_static_graph_breaks_no_sync();
  if (refuse_static) s.static_graph = false;
  // The same parameters (same tensors, same order) and settings: keep the Reducer and its bucket plan.
  bool same = ddp_ && ddp_->settings() == s && ddp_->params().size() == params_.size();
  for (size_t i = 0; same && i < params_.size(); ++i)
    same = ddp_->params()[i].unsafeGetTensorImpl() == params_[i].unsafeGetTensorImpl();
  if (same) return;
  if (refuse_static)
    warnings_.push_back("static_graph stays off while grad_accumulation > 1: in LibTorch " + compat::libtorch_version() +
                        " a static-graph Reducer stops all-reducing after the first step when steps accumulate "
                        "no_sync micro-batches (pytorch/pytorch#187732)");
  std::vector<torch::Tensor> buffers;
  for (const auto& t : model_->state_tensors())
    if (!t.requires_grad()) buffers.push_back(t);
  try {
    ddp_.reset();  // the old Reducer removes its autograd hooks first
    ddp_ = std::make_unique<dist::Ddp>(group_, params_, std::move(buffers), s);
  } catch (const std::exception& e) {
    throw EngineError("rank " + std::to_string(group_->rank()) + ": cannot set up DDP's Reducer: " + first_line(e.what()));
  }
}

std::vector<std::string> SessionImpl::gather(const std::string& key, const std::string& mine) {
  if (!group_) return {mine};
  try {
    return group_->gather(key, mine, std::chrono::seconds(group_->options().timeout_s));
  } catch (const std::exception& e) {
    warnings_.push_back("rank " + std::to_string(group_->rank()) + ": could not post '" + key +
                        "' to the rendezvous store: " + first_line(e.what()));
    return {};
  }
}

std::string SessionImpl::ranks_without_room(bool fits, int64_t& back) {
  const size_t n = size_t(group_->size()), me = size_t(group_->rank());
  std::vector<int64_t> mine(2 * n, 0);
  mine[me] = fits ? 0 : 1;
  mine[n + me] = back;
  std::vector<int64_t> all;
  try {
    all = group_->sum_over_ranks(mine);
  } catch (const std::exception& e) {
    throw EngineError("rank " + std::to_string(me) + ": the ranks could not agree on a batch size: " + first_line(e.what()));
  }
  std::string failed;
  for (size_t r = 0; r < n; ++r) {
    if (all[r] != 0) failed += (failed.empty() ? "" : ", ") + std::to_string(r);
    back = std::min(back, all[n + r]);
  }
  if (failed.empty()) return "";
  return std::string(" runs out of memory on rank") + (failed.find(',') == std::string::npos ? " " : "s ") + failed;
}

namespace {
std::string order_key(int64_t n) { return "tunebench/order/" + std::to_string(n); }
}  // namespace

void SessionImpl::post_order(int64_t n, const std::string& order) {
  if (!group_) return;
  try {
    group_->post(order_key(n), order);
    if (n >= 1024) group_->drop(order_key(n - 1024));
  } catch (const std::exception& e) {
    throw EngineError("rank 0: cannot post order " + std::to_string(n) + " to the group: " + first_line(e.what()));
  }
}

std::string SessionImpl::await_order(int64_t n, std::chrono::seconds timeout) {
  if (!group_) throw EngineError("not a rank of a data-parallel group: there is no one to take orders from");
  try {
    return group_->await(order_key(n), timeout);
  } catch (const std::exception& e) {
    throw EngineError("rank " + std::to_string(group_->rank()) + ": no order " + std::to_string(n) +
                      " from rank 0 (" + first_line(e.what()) + ")");
  }
}

void SessionImpl::resync_clock() {
  if (!group_) return;
  try {
    group_->resync_clock();
  } catch (const std::exception& e) {
    warnings_.push_back("rank " + std::to_string(group_->rank()) + ": the clock exchange with rank 0 failed (" +
                        first_line(e.what()) + "): traces keep the offset measured before");
  }
}

std::string SessionImpl::parameter_digest() const {
  // FNV-1a over every trainable parameter's values (contiguous fp32 copies on the CPU): cheap, and any
  // difference of a single bit between ranks shows.
  uint64_t h = 1469598103934665603ull;
  for (const auto& p : params_) {
    auto t = p.detach().to(torch::kCPU).contiguous();
    const auto* b = static_cast<const unsigned char*>(t.data_ptr());
    const size_t len = size_t(t.numel()) * t.element_size();
    for (size_t i = 0; i < len; ++i) h = (h ^ b[i]) * 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace tb::engine::session_detail
