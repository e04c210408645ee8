// Rank 0's orders and the other ranks' loop of a live data-parallel run (engine/live_group.h).
#include "engine/live_group.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include "engine/recording.h"
#include "profiler/ranks.h"
#include "profiler/recorder.h"
#include "profiler/trace_io.h"

namespace tb::engine {
namespace {

// A follower waits this long for rank 0's next order: longer than the longest auto-tune (24 h). Rank 0's end
// closes the store, which ends the wait at once; a store host that stops answering ends it within twice the
// group's timeout (dist::Group::await).
constexpr std::chrono::seconds kOrderWait{25 * 3600};

std::string chunk_key(int64_t k) { return "tunebench/chunk/" + std::to_string(k); }
constexpr const char* kEndKey = "tunebench/serve_end";

// A rank's state at the end of a live group (what GroupLeader::stop gathers).
nlohmann::json rank_end_state(Session& session, int64_t steps) {
  const nlohmann::json d = session.describe();
  return {{"rank", d.value(nlohmann::json::json_pointer("/distributed/rank"), 0)},
          {"pid", static_cast<int64_t>(::getpid())},
          {"host", d.value(nlohmann::json::json_pointer("/distributed/host"), std::string())},
          {"steps", steps},
          {"config_rev", session.revision()},
          {"config", nlohmann::json(session.config())},
          {"parameter_digest", session.parameter_digest()}};
}

}  // namespace

GroupLeader::GroupLeader(std::unique_ptr<Session> rank0) : s_(std::move(rank0)) {
  world_ = s_->describe().value(nlohmann::json::json_pointer("/distributed/world_size"), 1);
}

void GroupLeader::order(const nlohmann::json& o) {
  // Test hook (tests/dist/two_hosts.py): TUNEBENCH_TEST_ORDER_DELAY=N:S holds order N back S seconds, as a
  // long auto-tune trial does, so the followers are waiting for it when the test cuts the network.
  static const std::pair<long long, int> delay = [] {
    long long n = -1;
    int secs = 0;
    if (const char* d = std::getenv("TUNEBENCH_TEST_ORDER_DELAY")) std::sscanf(d, "%lld:%d", &n, &secs);
    return std::make_pair(n, secs);
  }();
  if (next_ == delay.first) std::this_thread::sleep_for(std::chrono::seconds(delay.second));
  s_->post_order(next_++, o.dump());
}

StepRecord GroupLeader::step() {
  order({{"do", "step"}});
  StepRecord r = s_->step();
  ++steps_;
  r.samples *= world_;
  return r;
}

int64_t GroupLeader::apply(const Config& changes) {
  // A change the session refuses is refused on every rank alike (same build, same configuration).
  order({{"do", "apply"}, {"changes", changes}});
  return s_->apply(changes);
}

void GroupLeader::trace(bool start) { order({{"do", "trace"}, {"action", start ? "start" : "stop"}}); }

GroupRecording GroupLeader::recording() {
  return {[this] { trace(true); },
          [this](std::unique_ptr<prof::Trace> mine) {
            auto merged = chunk(std::move(mine));
            trace(false);
            return merged;
          }};
}

std::unique_ptr<prof::Trace> GroupLeader::chunk(std::unique_ptr<prof::Trace> mine) {
  const std::string key = chunk_key(chunks_++);
  order({{"do", "chunk"}, {"key", key}});
  s_->resync_clock();  // rank 0 answers the exchanges of the ranks on other clocks (they do it before collecting)
  std::vector<std::unique_ptr<prof::Trace>> traces;
  if (mine) traces.push_back(std::move(mine));
  auto all = s_->gather(key, "");
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    auto parsed = prof::parse_trace(all[r], "rank " + std::to_string(r) + " trace");
    if (parsed.ok()) traces.push_back(std::move(parsed.value()));
  }
  return prof::merge_rank_traces(std::move(traces));
}

nlohmann::json GroupLeader::stop(bool gather) {
  if (stopped_) return end_;
  stopped_ = true;
  end_ = nlohmann::json::array();
  try {
    order({{"do", "stop"}});
  } catch (const EngineError&) {
    return end_;  // the store is gone: nobody is left to tell
  }
  if (!gather) return end_;
  for (const auto& s : s_->gather(kEndKey, rank_end_state(*s_, steps_).dump())) {
    nlohmann::json d = s.empty() ? nlohmann::json() : nlohmann::json::parse(s, nullptr, false);
    end_.push_back(d.is_object() ? d : nlohmann::json());
  }
  return end_;
}

int serve_follower(const SessionOptions& options) {
  const int rank = options.dist.rank;
  auto say = [rank](const char* what, const std::string& msg) {
    const std::string who = msg.rfind("rank ", 0) == 0 ? "" : "rank " + std::to_string(rank) + ": ";
    std::fprintf(stderr, "tunebench-cli: %s: %s%s\n", what, who.c_str(), msg.c_str());
  };
  std::unique_ptr<Session> session;
  try {
    session = Session::create(options);
  } catch (const EngineError& e) {
    say("error", e.what());
    return 2;
  }
  auto flush_warnings = [&] {
    for (auto& w : session->take_warnings()) say("warning", w);
  };
  flush_warnings();
  const bool cuda = session->describe().value(nlohmann::json::json_pointer("/device/kind"), std::string()) == "cuda";
  int64_t steps = 0;
  for (int64_t n = 0;; ++n) {
    nlohmann::json o;
    try {
      o = nlohmann::json::parse(session->await_order(n, kOrderWait), nullptr, false);
    } catch (const EngineError& e) {
      say("error", std::string(e.what()) + "; rank 0 is gone");
      return 1;
    }
    const std::string what = o.is_object() ? o.value("do", std::string()) : std::string();
    if (what == "step") {
      try {
        session->step();
        ++steps;
      } catch (const EngineError& e) {
        say("error", e.what());
        return 1;
      }
    } else if (what == "apply") {
      // A change the session refuses is refused on rank 0 too (same build, same config), which reports it.
      try {
        session->apply(o.value("changes", Config()));
      } catch (const EngineError&) {
      }
    } else if (what == "trace") {
      if (o.value("action", std::string()) == "start") {
        prof::set_thread_name("train");  // as rank 0's: the timeline names the training thread alike on every rank
        if (std::string why = start_recording(cuda); !why.empty()) say("warning", why);
      } else {
        prof::Recorder::instance().stop();
      }
    } else if (what == "chunk") {
      session->synchronize();
      session->resync_clock();
      auto t = collect_recorded_trace(session->describe());
      session->gather(o.value("key", std::string()), t ? prof::to_chrome_trace_json(*t) : std::string());
    } else if (what == "stop") {
      session->gather(kEndKey, rank_end_state(*session, steps).dump());
      flush_warnings();
      return 0;
    } else {
      say("error", "unknown order " + std::to_string(n) + " from rank 0: " + o.dump());
      return 1;
    }
    flush_warnings();
  }
}

}  // namespace tb::engine
