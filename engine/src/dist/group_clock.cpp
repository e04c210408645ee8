// The ranks' hosts and clocks (dist/ddp.h, RankClock): which ranks share rank 0's clock, and the offset of
// those that do not.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <stdexcept>

#include "dist/ddp.h"
#include "profiler/recorder.h"

namespace tb::engine::dist {
namespace {

constexpr int kClockExchanges = 16;
constexpr int kClockTag = 0x7b0c;

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

// Two processes read the same CLOCK_MONOTONIC when they run on the same boot of the same kernel and in the
// same time namespace. Empty when either cannot be read: then the offset is measured.
std::string clock_identity() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(f, boot);
  char ns[128] = {};
  const ssize_t n = ::readlink("/proc/self/ns/time", ns, sizeof ns - 1);
  if (boot.empty() || n <= 0) return "";
  return boot + " " + std::string(ns, size_t(n));
}

std::string before_newline(const std::string& s) { return s.substr(0, s.find('\n')); }
std::string after_newline(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? "" : s.substr(nl + 1);
}

}  // namespace

nlohmann::json RankClock::to_json() const {
  nlohmann::json j{{"host", host}, {"hosts", hosts}, {"same_clock_as_rank0", same_clock}};
  if (!same_clock) {
    j["clock_offset_ns"] = offset_ns;
    j["clock_error_ns"] = error_ns;
    auto& a = j["clock_samples"] = nlohmann::json::array();
    for (const Sample& s : samples) a.push_back({{"at_ns", s.at_ns}, {"offset_ns", s.offset_ns}, {"error_ns", s.error_ns}});
  }
  return j;
}

void Group::sync_clocks() {
  const auto timeout = std::chrono::milliseconds(int64_t(opts_.timeout_s) * 1000);
  const std::string key = "tunebench/clock/";
  const std::string mine = host_name() + "\n" + clock_identity();
  post(key + std::to_string(opts_.rank), mine);
  // Every rank reads every identity, so all agree on which ranks exchange with rank 0, and in what order.
  std::vector<std::string> ids(size_t(opts_.world_size));
  for (int r = 0; r < opts_.world_size; ++r) {
    store_->wait({key + std::to_string(r)}, timeout);
    const auto v = store_->get(key + std::to_string(r));
    ids[size_t(r)].assign(v.begin(), v.end());
  }
  clock_.host = before_newline(ids[size_t(opts_.rank)]);
  std::set<std::string> hosts;
  for (const auto& id : ids) hosts.insert(before_newline(id));
  clock_.hosts = int(hosts.size());
  off_clock_.assign(size_t(opts_.world_size), false);
  for (int r = 1; r < opts_.world_size; ++r) {
    const std::string c = after_newline(ids[size_t(r)]);
    off_clock_[size_t(r)] = c.empty() || c != after_newline(ids[0]);
  }
  clock_.same_clock = !off_clock_[size_t(opts_.rank)];
  measure_offsets();
}

void Group::resync_clock() {
  if (resync_failed_ || std::none_of(off_clock_.begin(), off_clock_.end(), [](bool b) { return b; })) return;
  try {
    measure_offsets();
  } catch (const std::exception&) {
    // A timed-out receive stays posted in Gloo: a later exchange on the same tag could take its message.
    resync_failed_ = true;
    throw;
  }
}

void Group::measure_offsets() {
  const auto timeout = std::chrono::milliseconds(int64_t(opts_.timeout_s) * 1000);
  torch::Tensor t = torch::zeros({1}, torch::kInt64);
  std::vector<torch::Tensor> buf{t};
  for (int r = 1; r < opts_.world_size; ++r) {
    if (!off_clock_[size_t(r)] || (opts_.rank != 0 && opts_.rank != r)) continue;
    int64_t best_rtt = std::numeric_limits<int64_t>::max();
    RankClock::Sample best;
    for (int i = 0; i < kClockExchanges; ++i) {
      if (opts_.rank == 0) {
        pg_->recv(buf, r, kClockTag)->wait(timeout);
        t.fill_(prof::now_ns());
        pg_->send(buf, r, kClockTag)->wait(timeout);
      } else {
        const int64_t t1 = prof::now_ns();
        t.fill_(t1);
        pg_->send(buf, 0, kClockTag)->wait(timeout);
        pg_->recv(buf, 0, kClockTag)->wait(timeout);
        const int64_t t3 = prof::now_ns();
        // Rank 0 read its clock after our send and before our receive: at some instant in [t1, t3].
        if (t3 - t1 < best_rtt) {
          best_rtt = t3 - t1;
          best = {(t1 + t3) / 2, t.item<int64_t>() - (t1 + t3) / 2, (t3 - t1 + 1) / 2};
        }
      }
    }
    if (opts_.rank == r) {
      // The first and the latest are what the traces need; a live group re-measures at every chunk.
      if (clock_.samples.size() >= 2) clock_.samples.pop_back();
      clock_.samples.push_back(best);
      clock_.offset_ns = best.offset_ns;
      clock_.error_ns = best.error_ns;
    }
  }
}

}  // namespace tb::engine::dist
