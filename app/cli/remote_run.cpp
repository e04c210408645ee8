// What a remote run over ssh is made of here (remote_run.h): the processes, the streams, the fetch; the remote
// shell scripts are client/remote_script.h.
#include "remote_run.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace tb::cli::remote {
namespace fs = std::filesystem;

int fail(const std::string& msg, int code) {
  std::fprintf(stderr, "tunebench-cli: error: %s\n", msg.c_str());
  return code;
}

std::vector<std::string> pump_lines(std::vector<Stream> streams,
                                    const std::function<std::string(std::string)>& rewrite) {
  std::vector<std::string> kept;
  std::vector<std::string> partial(streams.size());
  auto end_line = [&](size_t k) {
    std::string& line = partial[k];
    if (streams[k].to >= 0 && line.rfind("tunebench-remote: ", 0) != 0) {
      const std::string out = (rewrite ? rewrite(line) : line) + "\n";
      (void)!::write(streams[k].to, out.data(), out.size());
    }
    if (k + 1 == streams.size()) {
      kept.push_back(line);
      if (kept.size() > 200) kept.erase(kept.begin());
    }
    line.clear();
  };
  std::vector<pollfd> fds;
  for (const auto& st : streams) fds.push_back({st.from, POLLIN, 0});
  size_t open = fds.size();
  char buf[4096];
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!partial[k].empty()) end_line(k);
        fds[k].fd = -1;
        --open;
        continue;
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] == '\n') end_line(k);
        else partial[k] += buf[i];
      }
    }
  }
  return kept;
}

std::vector<std::string> split_hosts(const std::string& hosts) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t comma = hosts.find(',', at);
    out.push_back(hosts.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

std::string say_where(std::string line, const std::string& where) {
  static const std::string kErrorPrefix = "tunebench-cli: error: ";
  if (line.rfind(kErrorPrefix, 0) == 0) line.insert(kErrorPrefix.size(), "on " + where + ": ");
  return line;
}





std::string localize(std::string text, const std::string& id, const std::vector<Output>& outputs) {
  const std::string marker = "/tunebench-remote-" + id + "/";
  for (size_t at, from = 0; (at = text.find(marker, from)) != std::string::npos;) {
    const size_t blank = text.find_last_of(" '\"(\n", at);
    const size_t start = blank == std::string::npos ? 0 : blank + 1;
    const size_t slot = at + marker.size(), slash = text.find('/', slot);
    if (slash == std::string::npos) break;
    from = slot;
    if (!std::isdigit(static_cast<unsigned char>(text[slot]))) continue;  // not an output's slot ($d/tmp)
    const size_t i = size_t(std::atoi(text.c_str() + slot));
    const std::string dir = i < outputs.size() ? fs::path(outputs[i].local).parent_path().string() : "";
    text.replace(start, slash + 1 - start, dir.empty() ? "" : dir + "/");
    from = start;
  }
  return text;
}


int fetch(const client::RemoteTarget& t, const std::string& id, const std::vector<Output>& outputs) {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec) / ("tunebench-fetch-" + id);
  fs::create_directories(tmp, ec);
  if (ec) return fail("cannot make " + tmp.string() + ": " + ec.message(), 1);
  int data[2], err[2];
  if (pipe2(data, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return fail("pipe failed", 1);
  auto ssh = client::Process::launch(
      {.argv = client::ssh_argv(t, client::remote_fetch_script(id, outputs.size())), .out = data[1], .err = err[1]});
  auto tar = client::Process::launch({.argv = {"tar", "-xf", "-", "-C", tmp.string()}, .in = data[0]});
  ::close(data[0]), ::close(data[1]), ::close(err[1]);
  const auto ssh_err = pump_lines({{err[0], -1}});
  ::close(err[0]);
  const int ssh_rc = ssh && ssh->wait() ? ssh->exit_code() : 255;
  const int tar_rc = tar && tar->wait() ? tar->exit_code() : 1;
  int rc = 0;
  if (ssh_rc == 255) rc = fail("fetching the results: " + client::explain_ssh_failure(t, ssh_err), 1);
  else if (ssh_rc != 0 || tar_rc != 0) rc = fail("fetching the results from " + t.display() + " failed" +
                                                 (ssh_err.empty() ? std::string() : ": " + ssh_err.back()), 1);
  for (size_t i = 0; i < outputs.size() && rc == 0; ++i) {
    const fs::path local = outputs[i].local;
    for (const auto& e : fs::directory_iterator(tmp / std::to_string(i), ec)) {
      const fs::path dest = local.parent_path().empty() ? e.path().filename() : local.parent_path() / e.path().filename();
      if (outputs[i].option == "--trace") {  // big, and names no output file
        fs::copy_file(e.path(), dest, fs::copy_options::overwrite_existing, ec);
      } else {  // a run's JSON names its trace; a report its sidecar
        std::ifstream in(e.path(), std::ios::binary);
        const std::string text(std::istreambuf_iterator<char>(in), {});
        std::ofstream out(dest, std::ios::binary | std::ios::trunc);
        out << localize(text, id, outputs);
        if (!out) ec = std::make_error_code(std::errc::io_error);
      }
      if (ec) rc = fail("cannot write " + dest.string() + ": " + ec.message(), 1);
    }
  }
  fs::remove_all(tmp, ec);
  return rc;
}

}  // namespace tb::cli::remote
