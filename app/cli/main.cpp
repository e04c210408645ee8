// tunebench-cli: the trace commands (analyze, diff) run here, linked against the profiler alone; the engine
// commands run in tunebench-engine next to this program, started in its place (exec: same pid, stdio,
// signals and exit code), so a trace is analysed without loading LibTorch.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "commands.h"

namespace {
void usage(FILE* out) {
  std::fputs(
      "usage: tunebench-cli <command> [options]\n"
      "  knobs [--json]                                  every knob, default, recommended, applicable here + why\n"
      "  run --model M --data D [--set k=v,...] [--steps N | --measured-steps N] [--trace T.json] [--json OUT.json]\n"
      "  run --script train.py [--set k=v,...] [--first-step-timeout S] [-- ARGS]\n"
      "                                                  the user's own PyTorch script, unmodified\n"
      "  analyze TRACE [--json OUT.json] [--min-gap-us N] [--device N]\n"
      "                                                  our traces, Chrome trace JSON, Kineto (.json/.json.gz)\n"
      "  diff A B [--json OUT.json] [--top N]            what changed between two traces, per step\n"
      "  gate --script train.py --baseline REV [--candidate REV] [--max-time S] [--json|--markdown|--junit F] [-- ARGS]\n"
      "                                                  did a change make training slower? exit 0 pass, 1 regression,\n"
      "                                                  2 undecided, 3 could not run (docs/ci.md)\n"
      "  tune --model M --data D [--budget S] [--report R.html] [--json OUT.json]\n"
      "  tune --script train.py [--budget S] [--report R.html] [--patch P.diff] [-- ARGS]\n"
      "                                                  tunes the user's script; the kept changes as a patch of it\n"
      "  make-dataset --out DIR [--images N] [--size WxH] [--classes K]\n"
      "  report --session S.json [--html R.html] [--md R.md] [--json R.json]\n"
      "                                                  the GUI's export: live changes and tunes as one report\n"
      "  serve                                           run protocol on stdin/stdout (used by the GUI)\n"
      "  run|tune|knobs|make-dataset --remote [user@]host[:port] [--remote-cli PATH] ...\n"
      "                                                  the same on another machine over ssh; --data, --script\n"
      "                                                  are its paths; --json/--trace/--report files come here\n"
      "  run|tune|serve --remote HOST1,HOST2,... [--ranks-per-host N|gpu] [--master-addr ADDR] ...\n"
      "                                                  one data-parallel group across the hosts (torchrun on each)\n"
      "  --version\n"
      "COMMAND --help: that command's options\n"
      "models: mnist_cnn resnet18 resnet50 vit_tiny torchscript:PATH   data: synthetic imagefolder:DIR mnist:DIR\n",
      out);
}

bool is_engine_command(const std::string& c) {
  return c == "knobs" || c == "run" || c == "serve" || c == "make-dataset" || c == "tune" || c == "report";
}

// Replaces this process with tunebench-engine (same directory), passing argv on. Returns only on failure.
int exec_engine(char** argv) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string engine = ec ? std::string("tunebench-engine") : (self.parent_path() / "tunebench-engine").string();
  if (::access(engine.c_str(), X_OK) != 0) {
#ifdef TUNEBENCH_WITH_ENGINE
    std::fprintf(stderr, "tunebench-cli: error: '%s' needs %s, which is missing: %s\n", argv[1], engine.c_str(),
                 std::strerror(errno));
#else
    std::fprintf(stderr, "tunebench-cli: error: '%s' needs the engine, which this build left out (TUNEBENCH_ENGINE=OFF)\n",
                 argv[1]);
#endif
    return 2;
  }
  ::execv(engine.c_str(), argv);
  std::fprintf(stderr, "tunebench-cli: error: cannot start %s: %s\n", engine.c_str(), std::strerror(errno));
  return 2;
}

// Big traces: glibc's malloc takes fresh memory 4 KiB page by page, and on a virtual machine a page fault costs
// microseconds: a million-event trace took ~30 k faults, a fifth of `analyze`. glibc.malloc.hugetlb=1 has
// malloc advise transparent huge pages (where the system allows them), but glibc reads its tunables once at
// start: so analyze and diff of a trace of 8 MiB or more start this program again with it set, and put the
// variable back as it was at once, so nothing started later inherits it. Any failure: go on as we are.
constexpr const char* kSavedTunables = "TUNEBENCH_SAVED_GLIBC_TUNABLES";

// Size of the JSON text in a file: a gzip file's trailer says it (mod 4 GiB); 0 when not a readable file.
size_t text_size(const char* path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return 0;
  const size_t size = std::filesystem::file_size(path, ec);
  if (ec) return 0;
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return 0;
  unsigned char head[2] = {0, 0}, tail[4] = {0, 0, 0, 0};
  size_t text = size;
  if (size >= 18 && std::fread(head, 1, 2, f) == 2 && head[0] == 0x1f && head[1] == 0x8b &&
      std::fseek(f, -4, SEEK_END) == 0 && std::fread(tail, 1, 4, f) == 4)
    text = std::max(size, size_t(tail[0]) | size_t(tail[1]) << 8 | size_t(tail[2]) << 16 | size_t(tail[3]) << 24);
  std::fclose(f);
  return text;
}

void restart_with_huge_pages(int argc, char** argv) {
  if (const char* saved = std::getenv(kSavedTunables)) {  // the second start
    const std::string was = saved;
    if (was.rfind("set:", 0) == 0) ::setenv("GLIBC_TUNABLES", was.c_str() + 4, 1);
    else ::unsetenv("GLIBC_TUNABLES");
    ::unsetenv(kSavedTunables);
    return;
  }
  const char* current = std::getenv("GLIBC_TUNABLES");
  if (current && std::strstr(current, "glibc.malloc.hugetlb")) return;  // the user chose
  bool big = false;
  for (int i = 2; i < argc && !big; ++i) big = text_size(argv[i]) >= (size_t(8) << 20);
  if (!big) return;
  const std::string saved = current ? "set:" + std::string(current) : "unset";
  const std::string tunables = (current && *current ? std::string(current) + ":" : "") + "glibc.malloc.hugetlb=1";
  if (::setenv(kSavedTunables, saved.c_str(), 1) != 0 || ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // exec failed: undo and go on.
  if (current) ::setenv("GLIBC_TUNABLES", current, 1);
  else ::unsetenv("GLIBC_TUNABLES");
  ::unsetenv(kSavedTunables);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version") {  // the remote side is checked with it (cmd_remote.cpp): keep "(protocol N)" last
    std::printf("tunebench-cli %s (protocol 1)\n", TUNEBENCH_VERSION);
#ifdef TUNEBENCH_WITH_ENGINE
    std::fflush(stdout);
    return exec_engine(argv);  // its lines: the LibTorch and CUDA it links, and this machine's GPU
#else
    return 0;
#endif
  }
  if (tb::cli::wants_remote(argc - 1, argv + 1)) return tb::cli::cmd_remote(argc - 1, argv + 1);
  if (cmd == "analyze" || cmd == "diff") restart_with_huge_pages(argc, argv);
  if (cmd == "analyze") return tb::cli::cmd_analyze(argc - 1, argv + 1);
  if (cmd == "diff") return tb::cli::cmd_diff(argc - 1, argv + 1);
  if (cmd == "gate") return tb::cli::cmd_gate(argc - 1, argv + 1);
  if (is_engine_command(cmd)) return exec_engine(argv);
  std::fprintf(stderr, "tunebench-cli: error: unknown command '%s' (see tunebench-cli --help)\n", cmd.c_str());
  return 2;
}
