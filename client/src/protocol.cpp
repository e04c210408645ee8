// The run protocol's C++ side (client/protocol.h).
#include "client/protocol.h"

#include "client/inline_files.h"

namespace msg = tb::client::protocol::msg;

namespace tb::client::protocol {

void Channel::send(nlohmann::json msg) {
  msg["v"] = kVersion;
  if (inline_files) (void)client::inline_files(msg);  // a file it cannot read: the message says so (inline_error)
  const std::string line = msg.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fputc('\n', out_);
  std::fflush(out_);
}

bool Channel::send_done(const nlohmann::json& summary) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_sent_) return false;
    done_sent_ = true;
  }
  send({{"type", msg::done}, {"summary", summary}});
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  return true;
}

void Channel::error(const std::string& message, bool recoverable) {
  send({{"type", msg::error}, {"message", message}, {"recoverable", recoverable}});
}

void Channel::warning(const std::string& message) { send({{"type", msg::warning}, {"message", message}}); }

void Inbox::push(nlohmann::json msg) {
  {
    std::lock_guard<std::mutex> lock(mu);
    messages.push_back(std::move(msg));
  }
  cv.notify_all();
}

std::vector<nlohmann::json> Inbox::drain() {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<nlohmann::json> out(messages.begin(), messages.end());
  messages.clear();
  return out;
}

nlohmann::json Inbox::wait_next() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [this] { return stop.load() || !messages.empty(); });
  if (stop) return nullptr;
  nlohmann::json msg = std::move(messages.front());
  messages.pop_front();
  return msg;
}

void read_messages(std::istream& in, Channel& out, Inbox& inbox, const std::function<void()>& on_stop) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json msg = nlohmann::json::parse(line, nullptr, false);
    if (msg.is_discarded() || !msg.is_object() || !msg.contains("type") || !msg["type"].is_string()) {
      out.error("malformed message (expected one JSON object with a \"type\" per line): " + line.substr(0, 120), true);
      continue;
    }
    if (msg["type"] == msg::stop) {
      inbox.stop = true;
      inbox.cv.notify_all();
      if (on_stop) on_stop();
      continue;
    }
    inbox.push(std::move(msg));
  }
  inbox.eof = true;
  inbox.stop = true;
  inbox.cv.notify_all();
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return std::to_string(static_cast<int64_t>(v.get<double>()));
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace tb::client::protocol
