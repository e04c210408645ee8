#include "client/script_runner.h"

#include "client/protocol.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

namespace msg = tb::client::protocol::msg;


namespace tb::client {
namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Prints torch's version from the version.py beside its __init__.py (found, not imported); prints nothing and
// fails where there is no torch or no such file.
constexpr const char* kTorchVersionWithoutImport =
    "import importlib.util, os, re, sys\n"
    "s = importlib.util.find_spec('torch')\n"
    "d = list(s.submodule_search_locations or []) if s else []\n"
    "f = os.path.join(d[0], 'version.py') if d else ''\n"
    "m = re.search(r'^__version__\\s*=\\s*[\\x27\\x22]([^\\x27\\x22]+)', open(f).read(), re.M) if f and os.path.exists(f) else None\n"
    "sys.exit(0 if m and print(m.group(1)) is None else 1)\n";

// Runs `python -c CODE` and returns its first output line ("" on failure), within `timeout_s`.
std::string probe(const std::string& python, const std::string& code, double timeout_s) {
  ChildProcess p;
  std::string first;
  std::mutex mu;
  if (!p.start({python, "-c", code}, {}, [&](const std::string& line) {
         std::lock_guard<std::mutex> lock(mu);
         if (first.empty()) first = line;
       }))
    return "";
  const int code_ = p.terminate(timeout_s, 1);
  std::lock_guard<std::mutex> lock(mu);
  return code_ == 0 ? first : "";
}
}  // namespace

PythonChoice find_python(const std::string& requested) {
  PythonChoice c;
  std::vector<std::string> candidates;
  const char* env_python = std::getenv("TUNEBENCH_PYTHON");
  if (!requested.empty()) {
    candidates.push_back(requested);
  } else if (env_python && *env_python) {
    candidates.push_back(env_python);
  } else {
    const char* path = std::getenv("PATH");
    std::stringstream ss(path ? path : "");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      if (dir.empty()) continue;
      const std::string p = dir + "/python3";
      if (access(p.c_str(), X_OK) == 0) candidates.push_back(p);
    }
#ifdef TUNEBENCH_BUILD_PYTHON
    candidates.push_back(TUNEBENCH_BUILD_PYTHON);
#endif
    candidates.push_back("/usr/bin/python3");
  }
  // An interpreter found once is the answer for the life of this process: each probe imports torch (~3 s
  // here), and a tune starts the script in a fresh process a dozen times (every window of its fresh-process
  // final, every process of the patch check), each paying it again before its first step.
  static std::mutex found_mu;
  static std::map<std::string, PythonChoice> found;
  std::string key;
  for (const auto& p : candidates) key += p + "\n";
  {
    std::lock_guard<std::mutex> lock(found_mu);
    if (auto it = found.find(key); it != found.end()) return it->second;
  }
  std::string tried;
  for (const auto& p : candidates) {
    if (tried.find(p + " ") != std::string::npos) continue;
    // Where torch is and its version.py, without importing it: an import costs ~1.4 s of CPU (~2.5 s with the
    // torch._dynamo an optimizer pulls in), paid by every `run --script` before the script's own. An install
    // without version.py (a source tree on PYTHONPATH) is imported instead. A torch that is there but does not
    // import fails at the script's `import torch`, whose line the run then shows.
    std::string v = probe(p, kTorchVersionWithoutImport, 60);
    if (v.empty()) v = probe(p, "import torch; print(torch.__version__)", 60);
    if (!v.empty()) {
      c.path = p;
      c.torch_version = v;
      std::lock_guard<std::mutex> lock(found_mu);
      found[key] = c;
      return c;
    }
    tried += p + " ";
  }
  const std::string named = !requested.empty() ? requested : (env_python && *env_python) ? env_python : "";
  c.error = named.empty()
                ? "no python3 on PATH imports torch (tried: " + tried.substr(0, tried.empty() ? 0 : tried.size() - 1) +
                      "); install PyTorch there or pass --python PATH"
                : "the interpreter " + named + (requested.empty() ? " (TUNEBENCH_PYTHON)" : "") +
                      " cannot import torch (or does not run)";
  return c;
}

std::string python_package_dir() {
  if (const char* d = std::getenv("TUNEBENCH_PYTHON_DIR"); d && *d) return d;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  // Installed (cmake --install, the .deb): <prefix>/bin/<exe> and <prefix>/share/tunebench/python. First, so an
  // installed copy uses its own package even on the machine that built it.
  if (const auto p = (exe.parent_path() / "../share/tunebench/python").lexically_normal();
      std::filesystem::exists(p / "tunebench" / "launch.py", ec))
    return p.string();
  // Build tree: <source>/build/app/<exe>; the CMake build records the source dir for this case too.
#ifdef TUNEBENCH_SOURCE_DIR
  if (std::filesystem::exists(std::string(TUNEBENCH_SOURCE_DIR) + "/python/tunebench/launch.py"))
    return std::string(TUNEBENCH_SOURCE_DIR) + "/python";
#endif
  if (const auto p = (exe.parent_path() / "../../python").lexically_normal();
      std::filesystem::exists(p / "tunebench" / "launch.py", ec))
    return p.string();
  return "";
}

ScriptRunner::~ScriptRunner() {
  if (child_.pid() > 0 && !child_.exit_code()) stop(2);
}

Status ScriptRunner::start(const ScriptOptions& o, double hello_timeout_s) {
  opts_ = o;
  started_s_ = last_step_s_ = now_s();
  if (!std::filesystem::exists(o.script)) return Error{"script not found: " + o.script};
  python_ = find_python(o.python);
  if (python_.path.empty()) return Error{python_.error};
  const std::string pkg = python_package_dir();
  if (pkg.empty()) return Error{"cannot find the tunebench Python package (set TUNEBENCH_PYTHON_DIR)"};
  std::vector<std::string> argv = {python_.path, "-m", "tunebench.launch", "--out-fd", "3", "--in-fd", "4"};
  if (!o.set.empty()) argv.insert(argv.end(), {"--set", join_config(o.set)});
  if (o.steps > 0) argv.insert(argv.end(), {"--steps", std::to_string(o.steps)});
  if (!o.trace_dir.empty())
    argv.insert(argv.end(), {"--trace-dir", o.trace_dir, "--trace-every", std::to_string(o.trace_every)});
  if (!o.trace_dir.empty() && o.trace_share >= 0) {
    char share[32];
    std::snprintf(share, sizeof share, "%g", o.trace_share);
    argv.insert(argv.end(), {"--trace-share", share});
  }
  if (!o.trace_dir.empty() && o.trace_steps > 0)
    argv.insert(argv.end(), {"--trace-steps", std::to_string(o.trace_steps)});
  if (!o.trace_dir.empty() && !o.trace_detail.empty()) argv.insert(argv.end(), {"--trace-detail", o.trace_detail});
  if (!o.trace_dir.empty() && o.trace_wait) argv.push_back("--trace-wait");
  for (const auto& [file, copy] : o.sources) argv.insert(argv.end(), {"--source", file, copy});
  argv.push_back(o.script);
  argv.insert(argv.end(), o.args.begin(), o.args.end());
  std::vector<std::string> env;
  std::string pythonpath = pkg;
  auto overridden = [&](const std::string& kv) {
    const auto eq = kv.find('=');
    for (const auto& e : o.env)
      if (e.compare(0, e.find('=') + 1, kv, 0, eq + 1) == 0) return true;
    return false;
  };
  // The interpreter runs the allocator its options ask for (o.env), not the one this process runs.
  for (std::string& kv : inherited_environment({.allocator = true})) {
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      pythonpath += ":" + kv.substr(11);
      continue;
    }
    if (kv.rfind("PYTHONUNBUFFERED=", 0) == 0 || overridden(kv)) continue;
    env.push_back(std::move(kv));
  }
  env.insert(env.end(), o.env.begin(), o.env.end());
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("PYTHONUNBUFFERED=1");
  if (Status st = child_.start(argv, env, o.output); !st) return st;
  const double deadline = now_s() + hello_timeout_s;
  while (elsewhere_ || now_s() < deadline) {
    // With a cancel to poll, waits are cut to half a second.
    const double wait = elsewhere_ ? 1.0 : deadline - now_s();
    auto line = child_.read_line(o.cancelled ? std::min(wait, 0.5) : wait);
    if (o.cancelled && o.cancelled()) {
      child_.terminate(2, 1);
      return Error{"cancelled (a signal asked to stop) before the script's first step"};
    }
    if (!line) {
      if (elsewhere_ && !child_.eof()) continue;  // the children train: their parent waits, without a step
      if (o.cancelled && !child_.eof() && now_s() < deadline) continue;  // only the half second ran out
      break;
    }
    auto m = nlohmann::json::parse(*line, nullptr, false);
    if (m.is_discarded() || !m.is_object()) continue;
    if (m.value("type", std::string()) == msg::hello) {
      hello_ = m;
      return {};
    }
    note(m);
    early_.push_back(m);
    if (elsewhere_ && !o.children_to_end) {
      child_.terminate(2, 1);
      const int n = m.value("processes", 0);
      const std::string where = n == 1 ? "a child process" : (n > 1 ? std::to_string(n) + " " : "") + "child processes";
      return Error{"the training runs in " + where + " (torch.multiprocessing), which TuneBench does not follow: no "
                   "training step in this process to measure"};
    }
  }
  // No hello. The training ran in children and the script ended: nothing to measure here, said by the
  // launcher's own messages (its warning and done.summary.no_steps), which next() hands out.
  for (const auto& m : early_)
    if (elsewhere_ && m.value("type", std::string()) == msg::done) return {};
  // The launcher refused (a bad --set, a missing package) or the interpreter failed; its own last line says
  // why. Still running: hello goes out with the first training step, and none came.
  const bool alive = !child_.eof();  // the channel is still open: the script runs, without a step
  child_.terminate(2, 1);
  for (const auto& m : early_)
    if (m.value("type", std::string()) == msg::error) return Error{m.value("message", std::string("the launcher failed"))};
  if (alive) return Error{first_step_timeout_text(hello_timeout_s, training_at_s_, opts_.timeout_option)};
  // The launcher sends the script's own error line; without one (the interpreter died) the last line printed
  // is the best word left, except a library's C++ log line ("ERROR: ... DeviceProperties.cpp:48] ...", which
  // torch prints on a machine without a GPU, even at exit): the last line that is not one comes first.
  const auto tail = child_.output_tail();
  static const std::regex library_log(R"(\.(cpp|cc|cu|h|hpp):\d+\])");
  for (auto it = tail.rbegin(); it != tail.rend(); ++it)
    if (!it->empty() && !std::regex_search(*it, library_log)) return Error{*it};
  for (auto it = tail.rbegin(); it != tail.rend(); ++it)
    if (!it->empty()) return Error{*it};
  return Error{"the script's launcher sent nothing within " + std::to_string(int(hello_timeout_s)) + " s"};
}

std::optional<nlohmann::json> ScriptRunner::next(double timeout_s) {
  if (!early_.empty()) {
    auto m = early_.front();
    early_.erase(early_.begin());
    return m;
  }
  auto line = child_.read_line(timeout_s);
  if (!line) return std::nullopt;
  auto m = nlohmann::json::parse(*line, nullptr, false);
  if (m.is_discarded() || !m.is_object())
    return nlohmann::json{{"type", msg::warning}, {"message", "malformed line from the script's launcher: " + line->substr(0, 200)}};
  note(m);
  if (m.value("type", std::string()) == msg::step) {
    const int64_t rev = m.value("config_rev", int64_t(0));
    if (rev != rev_) {
      rev_ = rev;
      warmup_ = measure::WarmupDetector(opts_.warmup_steps, 2, 0.10, std::max(opts_.max_warmup_steps, opts_.warmup_steps));
    }
    const bool warm = !warmup_.done();
    if (warm) warmup_.add(protocol::evaluated_samples(m), m.value("wall_ns", int64_t(0)));
    m["warmup"] = warm;
    ++steps_;
    last_step_s_ = now_s();
  }
  return m;
}

bool ScriptRunner::send(const nlohmann::json& message) {
  nlohmann::json m = message;
  m["v"] = protocol::kVersion;
  return child_.write_line(m.dump());
}

bool ScriptRunner::pause() {
  if (paused_ || child_.pid() <= 0 || child_.exited()) return false;
  // The whole group: the loader workers it forked would go on filling their queues.
  if (::killpg(child_.pid(), SIGSTOP) != 0) return false;
  paused_ = true;
  return true;
}

void ScriptRunner::resume() {
  if (!paused_) return;
  paused_ = false;
  if (child_.pid() > 0) ::killpg(child_.pid(), SIGCONT);
  resumed_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch()).count();
}

int ScriptRunner::stop(double timeout_s) {
  if (child_.pid() <= 0) return -1;
  resume();  // a stopped process would not act on `stop` nor on SIGTERM
  if (!child_.exited()) {
    send({{"type", msg::stop}});
    child_.close_input();
  }
  return child_.terminate(timeout_s, 2);
}

void ScriptRunner::note(const nlohmann::json& m) {
  const std::string type = m.value("type", std::string());
  if (type == msg::training && training_at_s_ < 0) training_at_s_ = now_s() - started_s_;
  if (type == msg::warning && m.value("kind", std::string()) == "children") elsewhere_ = true;
}

std::string first_step_timeout_text(double limit_s, double training_at_s, const std::string& option) {
  const std::string limit = std::to_string(int(limit_s));
  if (training_at_s >= 0) {
    char at[32];
    std::snprintf(at, sizeof at, "%.1f", training_at_s);
    return "the first training step did not end in " + limit + " s (it began " + at + " s after the start and is "
           "still running: one step takes longer, e.g. an LBFGS step(closure) runs up to 20 forward/backward passes)"
           " - give it more time with " + option + " S";
  }
  return "no training step (a batch, its backward() and update) in " + limit + " s - is this a training script? (" +
         option + " S waits longer)";
}

double ScriptRunner::seconds_running() const { return now_s() - started_s_; }
double ScriptRunner::seconds_since_step() const { return now_s() - last_step_s_; }

}  // namespace tb::client
