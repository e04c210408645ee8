#include "gate/git.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "client/launch.h"

namespace tb::gate {
namespace fs = std::filesystem;

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return trim(nl == std::string::npos ? s : s.substr(0, nl));
}

}  // namespace

Result<std::string> git(const std::string& dir, const std::vector<std::string>& args, double timeout_s) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Error{"pipe failed"};
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]), ::close(out[1]);
    return Error{"pipe failed"};
  }
  std::vector<std::string> argv = {"git", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  // A prompt for credentials or an editor would wait for a terminal that is not there.
  auto env = client::inherited_environment({});
  env.push_back("GIT_TERMINAL_PROMPT=0");
  env.push_back("GIT_EDITOR=true");
  auto p = client::Process::launch({.argv = argv, .env = env, .in = client::kDevNull, .out = out[1], .err = err[1]});
  ::close(out[1]);
  ::close(err[1]);
  if (!p) {
    ::close(out[0]), ::close(err[0]);
    return Error{p.error().message + " (is git installed?)"};
  }
  std::string so, se;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open = 2;
  bool late = false;
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      late = true;
      break;
    }
    if (::poll(fds, 2, int(left.count())) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      } else {
        (i == 0 ? so : se).append(buf, size_t(n));
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  if (late) {
    p->stop();
    return Error{"git " + args.front() + " did not finish in " + std::to_string(int(timeout_s)) + " s"};
  }
  p->wait(timeout_s);
  if (p->exit_code() != 0) {
    const std::string why = first_line(se.empty() ? so : se);
    return Error{"git " + args.front() + ": " + (why.empty() ? "failed" : why)};
  }
  return trim(so);
}

Result<ScriptInRepo> locate(const std::string& script) {
  std::error_code ec;
  const fs::path abs = fs::absolute(script, ec);
  if (ec || !fs::is_regular_file(abs, ec)) return Error{"script not found: " + script};
  auto root = git(abs.parent_path().string(), {"rev-parse", "--show-toplevel"});
  if (!root) return Error{script + " is not in a git repository (" + root.error().message + ")"};
  ScriptInRepo s;
  s.root = fs::weakly_canonical(*root, ec).string();
  s.script_rel = fs::weakly_canonical(abs, ec).lexically_relative(s.root).string();
  auto status = git(s.root, {"status", "--porcelain", "--untracked-files=no"});
  s.dirty = status && !status->empty();
  return s;
}

Result<Commit> resolve(const std::string& root, const std::string& revision) {
  if (revision.empty() || revision.front() == '-') return Error{"no revision '" + revision + "'"};
  auto sha = git(root, {"rev-parse", "--verify", "--quiet", revision + "^{commit}"});
  if (!sha || sha->empty()) return Error{"no revision '" + revision + "' in " + root};
  auto subject = git(root, {"log", "-1", "--format=%h %s", *sha});
  return Commit{*sha, subject ? *subject : sha->substr(0, 12)};
}

std::string named(const Commit& commit, const std::string& revision) {
  // git reads a revision of 4 or more hex digits as an abbreviated hash; shorter, it can only be a name.
  const bool hash = revision.size() >= 4 && revision.size() <= commit.sha.size() &&
                    revision.find_first_not_of("0123456789abcdef") == std::string::npos &&
                    commit.sha.compare(0, revision.size(), revision) == 0;
  return hash || revision.empty() ? commit.describe : commit.describe + " (" + revision + ")";
}

Result<std::unique_ptr<Checkout>> Checkout::add(const std::string& root, const Commit& commit) {
  std::string tmpl = (fs::temp_directory_path() / "tunebench-gate-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return Error{"cannot make a temporary folder for a worktree"};
  const std::string dir = tmpl + "/tree";
  (void)git(root, {"worktree", "prune"});  // a folder an earlier crash left behind is forgotten first
  auto added = git(root, {"worktree", "add", "--detach", "--quiet", dir, commit.sha}, 300);
  if (!added) {
    std::error_code ec;
    fs::remove_all(tmpl, ec);
    return Error{"cannot check out " + commit.describe + ": " + added.error().message};
  }
  return std::unique_ptr<Checkout>(new Checkout(root, dir));
}

Checkout::~Checkout() {
  (void)git(root_, {"worktree", "remove", "--force", dir_});
  std::error_code ec;
  fs::remove_all(fs::path(dir_).parent_path(), ec);
  (void)git(root_, {"worktree", "prune"});
}

}  // namespace tb::gate
