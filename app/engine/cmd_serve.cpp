// tunebench-cli serve [--model M] [--data D] [--set k=v,...] [--steps N] [--trace-dir DIR] [--trace-every N]
//                     [--inline-files]   (trace chunks and reports travel in the stream: a remote GUI)
//                     [--ranks N [--dist-timeout S]]   (a live data-parallel group: engine/live_group.h)
// The run protocol of docs/protocol.md on stdin/stdout: this file reads the command line and starts or joins a
// group; the loop itself is the engine's (engine/serve.h).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "client/inputs.h"
#include "commands.h"
#include "engine/live_group.h"
#include "engine/serve.h"
#include "engine_cli_common.h"
#include "run_ranks.h"

namespace tb::cli {

int cmd_serve(int argc, char** argv) {
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i)
    if (std::string(argv[i]) == "--script") return cmd_serve_script(argc, argv);
  engine::SessionOptions opts;
  opts.model.clear();
  opts.data = "synthetic";
  int64_t steps = 0, trace_every = 50, ranks = 0, dist_timeout = 0;
  std::string trace_dir, report_dir;
  bool inline_files = false;
  for (int i = 1; i < argc; ++i) {
    bool matched = false;
    if (const Status s = parse_session_option(argc, argv, i, opts, matched); !s) {
      std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", s.error().message.c_str());
      return 2;
    }
    if (matched) continue;
    const std::string a = argv[i];
    if (a == "--steps") {
      // 0 runs until stopped; none names the range alone.
      const auto n = client::inputs::parse_steps(i + 1 < argc ? argv[++i] : "", client::inputs::kServeStepsMin);
      if (!n) {
        std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", n.error().message.c_str());
        return 2;
      }
      steps = *n;
    } else if (a == "--trace-dir" && i + 1 < argc) {
      trace_dir = argv[++i];
    } else if (a == "--report-dir" && i + 1 < argc) {
      report_dir = argv[++i];
    } else if (a == "--inline-files") {
      inline_files = true;
    } else if (a == "--ranks") {
      if (i + 1 >= argc || !parse_int(argv[++i], ranks, 1) || ranks > 64) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --ranks needs an integer from 1 to 64\n");
        return 2;
      }
    } else if (a == "--dist-timeout") {
      if (i + 1 >= argc || !parse_int(argv[++i], dist_timeout, 1)) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --dist-timeout needs a positive number of seconds\n");
        return 2;
      }
    } else if (a == "--trace-every") {
      if (i + 1 >= argc || !parse_int(argv[++i], trace_every, 1)) {
        std::fprintf(stderr, "tunebench-cli: error: serve: --trace-every needs a positive integer\n");
        return 2;
      }
    } else {
      std::fprintf(stderr, "tunebench-cli: error: serve: unknown option '%s'\n", a.c_str());
      return 2;
    }
  }
  // A live group: `--ranks N` or `--set ranks=N` (what the GUI's panel sends) starts N ranks of this command;
  // each of them is one rank (torchrun's variables); rank 0 goes on below, the others follow it.
  {
    const auto group = resolve_group(opts, ranks);
    std::string err = group ? "" : group.error().message;
    const std::optional<engine::DistOptions> env = group ? group->env : std::nullopt;
    if (group) ranks = group->ranks;
    if (err.empty() && (ranks > 1 || (env && env->enabled())) && opts.model.empty())
      err = "a data-parallel group needs --model (and --data) on the command line: every rank starts with them";
    if (!err.empty()) {
      std::fprintf(stderr, "tunebench-cli: error: serve: %s\n", err.c_str());
      return 2;
    }
    if (!env && ranks > 1) return launch_led_group(argc, argv, "serve", int(ranks), int(dist_timeout > 0 ? dist_timeout : 60));
    if (env && env->enabled()) {
      join_group(opts, *env, dist_timeout);
      if (env->rank != 0) return engine::serve_follower(opts);
    }
  }
  if (!trace_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(trace_dir, ec);
    if (ec) {
      std::fprintf(stderr, "tunebench-cli: error: serve: cannot create --trace-dir '%s': %s\n", trace_dir.c_str(),
                   ec.message().c_str());
      return 2;
    }
  }
  engine::ServeOptions so;
  so.session = opts;
  so.steps = steps;
  so.trace_every = trace_every;
  so.trace_dir = trace_dir;
  so.report_dir = report_dir;
  so.inline_files = inline_files;
  so.dist_timeout_s = int(dist_timeout);
  so.port_in_use = [](const char* what) { return port_in_use_error(what); };
  so.port_in_use_exit = kExitPortInUse;
  return engine::serve(std::move(so));
}

}  // namespace tb::cli
