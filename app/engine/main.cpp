// tunebench-engine: the LibTorch half of tunebench-cli (knobs, run, serve, tune, make-dataset). Users call
// tunebench-cli, which starts this program in its place (main.cpp); it is a separate executable so that
// `analyze` and `diff` never pay LibTorch's start-up (~0.6 s, ~290 shared libraries).
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#include "engine/cpu_allocator.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "tunebench-cli: error: no command (see tunebench-cli --help)\n");
    return 2;
  }
  const std::string cmd = argv[1];
  // The allocator is a process setting (engine/cpu_allocator.h): set it before the engine allocates, which
  // for jemalloc / tcmalloc means starting this program again with the library preloaded.
  if (cmd == "run" || cmd == "serve" || cmd == "tune") {
    if (auto want = tb::engine::cpu_allocator_from_args(argc, argv)) {
      if (const tb::Status st = tb::engine::start_process_with_cpu_allocator(*want, argv); !st) {
        std::fprintf(stderr, "tunebench-cli: error: %s\n", st.error().message.c_str());
        return 2;
      }
    }
  }
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (tb::cli::wants_help(sub_argc, sub_argv))
    if (const int rc = tb::cli::cmd_help(cmd); rc >= 0) return rc;
  if (cmd == "--version") return tb::cli::cmd_version(sub_argc, sub_argv);
  if (cmd == "knobs") return tb::cli::cmd_knobs(sub_argc, sub_argv);
  if (cmd == "run") return tb::cli::cmd_run(sub_argc, sub_argv);
  if (cmd == "serve") return tb::cli::cmd_serve(sub_argc, sub_argv);
  if (cmd == "make-dataset") return tb::cli::cmd_make_dataset(sub_argc, sub_argv);
  if (cmd == "tune") return tb::cli::cmd_tune(sub_argc, sub_argv);
  if (cmd == "report") return tb::cli::cmd_report(sub_argc, sub_argv);
  std::fprintf(stderr, "tunebench-cli: error: unknown command '%s' (see tunebench-cli --help)\n", cmd.c_str());
  return 2;
}
