#include "client/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace tb::client {
namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}
}  // namespace

std::string join_config(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string s;
  for (const auto& [k, v] : kv) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s;
}

ChildProcess::~ChildProcess() {
  if (proc_.started() && !proc_.status()) terminate(0, 1);
  close_fd(proto_);
  close_fd(input_);
  finish_pump();
  close_fd(output_);
}

Status ChildProcess::start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                OutputFn output) {
  if (argv.empty()) return Error{"nothing to start"};
  int proto[2], input[2], out[2];
  if (pipe2(proto, O_CLOEXEC) != 0) return Error{std::string("pipe: ") + std::strerror(errno)};
  if (pipe2(input, O_CLOEXEC) != 0) {
    ::close(proto[0]), ::close(proto[1]);
    return Error{std::string("pipe: ") + std::strerror(errno)};
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    ::close(proto[0]), ::close(proto[1]), ::close(input[0]), ::close(input[1]);
    return Error{std::string("pipe: ") + std::strerror(errno)};
  }
  // A child that dies must not kill us with SIGPIPE when we write to its channel.
  signal(SIGPIPE, SIG_IGN);
  // Its own process group: terminate() reaches DataLoader worker processes the script started, too. It dies
  // with us: a SIGTERM to tunebench-cli left the script training for ~25 s, until its next write found the
  // channel closed (DataLoader workers notice their parent's end by themselves).
  auto p = Process::launch({.argv = argv, .env = env, .in = kDevNull, .out = out[1], .err = out[1],
                            .fds = {{proto[1], 3}, {input[0], 4}}, .own_group = true, .dies_with_parent = true});
  ::close(proto[1]);
  ::close(input[0]);
  ::close(out[1]);
  if (!p) {
    ::close(proto[0]), ::close(input[1]), ::close(out[0]);
    return p.error();
  }
  proc_ = std::move(p).value();
  proto_ = proto[0];
  input_ = input[1];
  output_ = out[0];
  forward_ = std::move(output);
  pump_ = std::thread([this] { pump(); });
  return {};
}

void ChildProcess::pump() {
  std::string line;
  char buf[4096];
  for (;;) {
    // poll with a timeout: a process that escaped the group may hold the pipe open; stop_pump_ ends us then.
    pollfd p{output_, POLLIN, 0};
    const int r = ::poll(&p, 1, 200);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      if (stop_pump_) break;
      continue;
    }
    const ssize_t n = ::read(output_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        if (line.size() < 16384) line += buf[i];
        continue;
      }
      if (forward_) forward_(line);
      {
        std::lock_guard<std::mutex> lock(tail_mu_);
        tail_.push_back(line);
        while (tail_.size() > 40) tail_.pop_front();
      }
      line.clear();
    }
  }
  if (!line.empty()) {
    if (forward_) forward_(line);
    std::lock_guard<std::mutex> lock(tail_mu_);
    tail_.push_back(line);
  }
  pump_done_ = true;
}

void ChildProcess::finish_pump() {
  if (!pump_.joinable()) return;
  // Everything the child printed before it exited is in the pipe: give the pump a moment to read it.
  for (int i = 0; i < 200 && !pump_done_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop_pump_ = true;
  pump_.join();
}

std::optional<std::string> ChildProcess::read_line(double timeout_s) {
  const double deadline = now_s() + std::max(0.0, timeout_s);
  for (;;) {
    const auto nl = buf_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (line.empty()) continue;
      return line;
    }
    if (eof_ || proto_ < 0) return std::nullopt;
    const double left = deadline - now_s();
    if (left <= 0) return std::nullopt;
    pollfd p{proto_, POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min(left, 3600.0) * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char chunk[65536];
    const ssize_t n = ::read(proto_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof_ = true;
      if (!buf_.empty() && buf_.back() != '\n') buf_ += '\n';  // a last unterminated line still counts
      continue;
    }
    buf_.append(chunk, size_t(n));
  }
}

bool ChildProcess::write_line(const std::string& line) {
  if (input_ < 0) return false;
  std::string s = line + "\n";
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(input_, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += size_t(n);
  }
  return true;
}

void ChildProcess::close_input() { close_fd(input_); }

bool ChildProcess::exited() { return !proc_.started() || proc_.poll(); }

std::optional<int> ChildProcess::exit_code() const {
  if (!proc_.status()) return std::nullopt;
  return proc_.exit_code();
}

int ChildProcess::terminate(double timeout_s, double grace_s) {
  if (!proc_.started()) return -1;
  proc_.wait(timeout_s);
  proc_.stop(grace_s);  // also the group's last SIGKILL: a crashed script's DataLoader workers outlive it otherwise
  finish_pump();
  return proc_.exit_code();
}

std::vector<std::string> ChildProcess::output_tail() const {
  std::lock_guard<std::mutex> lock(tail_mu_);
  return {tail_.begin(), tail_.end()};
}

}  // namespace tb::client
