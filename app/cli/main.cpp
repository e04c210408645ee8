#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"
#ifdef TUNEBENCH_WITH_ENGINE
#include "engine/cpu_allocator.h"
#endif

namespace {
void usage(FILE* out) {
  std::fputs(
      "usage: tunebench-cli <command> [options]\n"
      "  knobs [--json]                                  every knob, default, recommended, applicable here + why\n"
      "  run --model M --data D [--set k=v,...] [--steps N | --measured-steps N] [--trace T.json] [--json OUT.json]\n"
      "  analyze TRACE [--json OUT.json] [--min-gap-us N]  our traces, Chrome trace JSON, Kineto (.json/.json.gz)\n"
      "  tune --model M --data D [--budget S] [--report R.html] [--json OUT.json]\n"
      "  make-dataset --out DIR [--images N] [--size WxH] [--classes K]\n"
      "  serve                                           run protocol on stdin/stdout (used by the GUI)\n"
      "models: mnist_cnn resnet18 resnet50 vit_tiny torchscript:PATH   data: synthetic imagefolder:DIR mnist:DIR\n",
      out);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (cmd == "analyze") return tb::cli::cmd_analyze(sub_argc, sub_argv);
#ifdef TUNEBENCH_WITH_ENGINE
  if (cmd == "run" || cmd == "serve" || cmd == "tune") {
    // The allocator is a process setting (engine/cpu_allocator.h): set it before the engine allocates, which
    // for jemalloc / tcmalloc means starting this program again with the library preloaded.
    if (auto want = tb::engine::cpu_allocator_from_args(argc, argv)) {
      const std::string err = tb::engine::start_process_with_cpu_allocator(*want, argv);
      if (!err.empty()) {
        std::fprintf(stderr, "tunebench-cli: error: %s\n", err.c_str());
        return 2;
      }
    }
  }
  if (cmd == "knobs") return tb::cli::cmd_knobs(sub_argc, sub_argv);
  if (cmd == "run") return tb::cli::cmd_run(sub_argc, sub_argv);
  if (cmd == "serve") return tb::cli::cmd_serve(sub_argc, sub_argv);
  if (cmd == "make-dataset") return tb::cli::cmd_make_dataset(sub_argc, sub_argv);
  if (cmd == "tune") return tb::cli::cmd_tune(sub_argc, sub_argv);
#else
  if (cmd == "knobs" || cmd == "run" || cmd == "serve" || cmd == "make-dataset" || cmd == "tune") {
    std::fprintf(stderr, "tunebench-cli: error: '%s' needs the engine, which this build left out (TUNEBENCH_ENGINE=OFF)\n",
                 cmd.c_str());
    return 2;
  }
#endif
  std::fprintf(stderr, "tunebench-cli: error: unknown command '%s' (see tunebench-cli --help)\n", cmd.c_str());
  return 2;
}
