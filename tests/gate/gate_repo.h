// A git repository made at test time for the gate's CLI tests (tests/gate): train.py committed once a revision,
// each revision tagged, and `tunebench-cli gate` run from inside it as a CI job runs it. Test-only.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "../engine/cli_runner.h"
#include "gate/git.h"

namespace tb::test_util {

struct GateRepo {
  std::filesystem::path dir;

  // An empty repository (branch main) in `at`, made afresh.
  explicit GateRepo(std::filesystem::path at) : dir(std::move(at)) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    sh("git init -q -b main .");
  }
  // A copy of `other` (its history, tags and working tree) in `at`: one repository per gate that runs beside
  // another, as each CI job has its own checkout.
  GateRepo(const GateRepo& other, std::filesystem::path at) : dir(std::move(at)) {
    std::filesystem::remove_all(dir);
    std::filesystem::copy(other.dir, dir, std::filesystem::copy_options::recursive);
  }

  // `cmd` run in the repository; false (and the command on stderr) when it fails.
  bool sh(const std::string& cmd) const {
    const bool ok = std::system(("cd '" + dir.string() + "' && " + cmd + " >/dev/null 2>&1").c_str()) == 0;
    if (!ok) std::cerr << "failed in " << dir << ": " << cmd << "\n";
    return ok;
  }
  // train.py as `text`, committed with `message` and tagged `tag`.
  bool commit(const std::string& text, const std::string& message, const std::string& tag) const {
    std::ofstream(dir / "train.py") << text;
    return sh("git add train.py && git -c user.email=t@example.com -c user.name=t commit -q -m '" + message +
              "' && git tag " + tag);
  }
  // `tunebench-cli gate --script train.py ARGS` from inside the repository. `env`: assignments in front of it.
  // `timeout_s` guards against a gate that never ends: SIGTERM then, SIGKILL 10 s later (a gate that ignored the
  // SIGTERM would otherwise run on). `wrap`: a command inside the guard, around the gate: the CI's own SIGTERM
  // (`timeout --preserve-status -s TERM 4`), whose gate then has until the guard to end.
  CliOut gate(const std::string& args, int timeout_s, const std::string& env = "", const std::string& wrap = "") const {
    return run_cli_shell("cd '" + dir.string() + "' && " + env + " timeout -k 10 " + std::to_string(timeout_s) + " " +
                             wrap,
                         "gate --script train.py " + args);
  }
  int worktrees() const {
    auto list = tb::gate::git(dir.string(), {"worktree", "list", "--porcelain"});
    int count = 0;
    for (size_t at = 0; list && (at = list->find("worktree ", at)) != std::string::npos; at += 9) ++count;
    return count;
  }
  std::string read(const std::string& name) const {
    std::ifstream f(dir / name);
    return {std::istreambuf_iterator<char>(f), {}};
  }
};

}  // namespace tb::test_util
