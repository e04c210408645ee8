// The two sides of a gate as files on disk: a script's repository at a revision, checked out in a temporary
// worktree (`git worktree add --detach`), so the user's own working tree is never touched; removed again with
// the Checkout, whatever happened (and pruned: a worktree whose folder a crash left behind is forgotten by git
// at the next gate).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace tb::gate {

// Runs git with `args` in `dir`, at most `timeout_s`: its stdout (trimmed), or its first error line.
Result<std::string> git(const std::string& dir, const std::vector<std::string>& args, double timeout_s = 60);

// Where a script sits in its repository.
struct ScriptInRepo {
  std::string root;        // the repository's top folder (absolute)
  std::string script_rel;  // the script, relative to root
  bool dirty = false;      // the working tree has uncommitted changes to tracked files
};
// `script` (a path from our working directory) in its git repository, or why not ("not in a git repository").
Result<ScriptInRepo> locate(const std::string& script);

// A revision's commit in the repository: "<short sha> <subject>" and the full sha, or a one-line error
// ("no revision 'v9' in /repo").
struct Commit {
  std::string sha, describe;
};
Result<Commit> resolve(const std::string& root, const std::string& revision);
// The commit as a report names it: its describe, then the revision the user gave in brackets unless that was the
// commit's hash ("c2f555c Wider hidden layers (c2)"; "c2f555c Wider hidden layers" for --candidate c2f555c). A
// hash is 4 or more hex digits that begin the sha: a tag "c2" is a name even when the sha begins with "c2".
std::string named(const Commit& commit, const std::string& revision);

class Checkout {
 public:
  // The repository at `commit` in a new temporary folder.
  static Result<std::unique_ptr<Checkout>> add(const std::string& root, const Commit& commit);
  ~Checkout();
  Checkout(const Checkout&) = delete;
  Checkout& operator=(const Checkout&) = delete;
  const std::string& dir() const { return dir_; }

 private:
  Checkout(std::string root, std::string dir) : root_(std::move(root)), dir_(std::move(dir)) {}
  std::string root_, dir_;
};

}  // namespace tb::gate
