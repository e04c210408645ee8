// The run protocol's C++ side (docs/protocol.md): JSON lines on a serve's stdout and stdin, each message an
// object with a "type" and the version "v". Serve's writers (the engine's and a script's) send through one
// Channel and read their parent through one Inbox; the GUI checks the version a hello carries against
// kVersion. The Python side is python/tunebench/protocol.py.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <istream>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tb::client::protocol {

inline constexpr int kVersion = 1;

// Every message type, declared once: docs/protocol.md's tables and python/tunebench/protocol.py's TO_PARENT and
// FROM_PARENT say the same (python/tests/test_protocol.py holds the three together). A new message is a line
// here, its twin there, and its row in the document. Each end writes and compares these names, never a literal
// (the same test finds a literal "type" in the product's C++). A serve forwards a script's messages as they come:
// a type unknown here is passed on and ignored by a parent that does not know it.
namespace msg {
// A serve (the engine's or a script's launcher) to its parent.
inline constexpr char hello[] = "hello";
inline constexpr char started[] = "started";
inline constexpr char step[] = "step";
inline constexpr char config_applied[] = "config_applied";
inline constexpr char trace[] = "trace";  // both ways: a finished chunk up, start/stop down
inline constexpr char trace_lanes[] = "trace_lanes";
inline constexpr char loader_parts[] = "loader_parts";
inline constexpr char finding[] = "finding";
inline constexpr char warning[] = "warning";
inline constexpr char tune_progress[] = "tune_progress";
inline constexpr char tune_done[] = "tune_done";
inline constexpr char error[] = "error";
inline constexpr char done[] = "done";
// A script's launcher only.
inline constexpr char source[] = "source";
inline constexpr char loader[] = "loader";
inline constexpr char outside[] = "outside";
inline constexpr char training[] = "training";
inline constexpr char compile[] = "compile";
// The parent to a serve.
inline constexpr char start[] = "start";
inline constexpr char set[] = "set";
inline constexpr char tune[] = "tune";
inline constexpr char stop[] = "stop";
}  // namespace msg

inline constexpr const char* kToParent[] = {msg::hello,   msg::started,     msg::step,      msg::config_applied,
                                            msg::trace,   msg::trace_lanes, msg::loader_parts, msg::finding,
                                            msg::warning, msg::tune_progress, msg::tune_done, msg::error,
                                            msg::done,    msg::source,      msg::loader,    msg::outside,
                                            msg::training, msg::compile};
inline constexpr const char* kFromParent[] = {msg::start, msg::set, msg::trace, msg::tune, msg::stop};

// What a `step` message's time bought, for a rate: its batch once per evaluation of a step(closure) call
// (`evaluations`, LBFGS: fewer as it converges, each step faster with them), else once. Counted per step, a
// converging LBFGS script's windows varied by ±192% and its baseline read as "left slower" by a failed trial.
// Every rate of a script's steps counts this (the tuner's windows, a plain run's throughput, the GUI's chart);
// what the loader delivered counts `samples` alone.
inline int64_t evaluated_samples(int64_t samples, int64_t evaluations) {
  return samples * (evaluations > 1 ? evaluations : 1);
}
inline int64_t evaluated_samples(const nlohmann::json& step) {
  return evaluated_samples(step.value("samples", int64_t(0)), step.value("evaluations", int64_t(0)));
}
// What such a rate is, in words, for steps that evaluated their closure `lo` to `hi` times.
inline std::string per_evaluation_text(int64_t lo, int64_t hi) {
  return "per closure evaluation: each step(closure) call evaluated its closure " +
         (lo == hi ? std::to_string(hi) : std::to_string(lo) + "-" + std::to_string(hi)) +
         " times (LBFGS: fewer as it converges), so a rate counts its batch once per evaluation: samples evaluated "
         "(forward and backward) per second, which convergence does not change";
}

// A serve's stdout. Thread-safe (the trainer and a stop watchdog both write); `done` is sent once and
// nothing after it, so a watchdog's `done` and the trainer's cannot both reach the parent.
class Channel {
 public:
  explicit Channel(std::FILE* out = stdout) : out_(out) {}
  bool inline_files = false;  // --inline-files: the files a message names travel in it (client/inline_files.h)
  void send(nlohmann::json msg);
  // Sends `done` with this summary once; returns false when it was already sent.
  bool send_done(const nlohmann::json& summary);
  void error(const std::string& message, bool recoverable);
  void warning(const std::string& message);

 private:
  std::FILE* out_;
  std::mutex mu_;
  bool done_sent_ = false;
  bool closed_ = false;
};

// The parent's messages, queued by read_messages() on its own thread for the trainer to take at a step
// boundary. `stop` is not queued: it sets `stop` at once (it must be answered within 2 s, whatever a step
// takes); the end of the input sets `eof` and `stop`.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<nlohmann::json> messages;
  std::atomic<bool> stop{false};
  std::atomic<bool> eof{false};
  void push(nlohmann::json msg);
  std::vector<nlohmann::json> drain();
  // Waits until a message is queued or stop is set; returns the message, or null at stop.
  nlohmann::json wait_next();
};

// Reads `in` line by line into `inbox` until it ends: a line that is no JSON object with a string "type" is
// answered on `out` (a recoverable error) and dropped; at `stop`, `on_stop` runs (on the reader's thread) after
// the flag is set. Blocks: run it on a thread of its own.
void read_messages(std::istream& in, Channel& out, Inbox& inbox, const std::function<void()>& on_stop = {});

// A knob value as a parent may send it (true, 4, "fp16") in the catalog's words ("on", "4", "fp16").
std::string value_text(const nlohmann::json& v);

}  // namespace tb::client::protocol
