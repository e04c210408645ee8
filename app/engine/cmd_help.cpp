// `tunebench-cli COMMAND --help` for the engine's commands whose parsers have no help of their own (run, run
// --script, knobs, report, serve): what each takes, on stdout, exit 0. tune and make-dataset print their own.
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.h"

namespace tb::cli {

namespace {

constexpr const char* kRun =
    "usage: tunebench-cli run --model M --data D [--set k=v,...] [--steps N | --measured-steps N] [--warmup N]\n"
    "       [--seed N] [--device auto|cpu|cuda] [--input C,H,W] [--classes K] [--threads N] [--drift-steps N]\n"
    "       [--trace T.json] [--json OUT.json] [--ranks N [--dist-timeout S]]\n"
    "  Trains the engine's model for real with the knobs given and reports samples over the wall time of the\n"
    "  measured steps (after a warm-up until stable), with a noise verdict. --trace writes a timeline for\n"
    "  `analyze`; --ranks N runs data parallel (docs/distributed.md).\n"
    "models: mnist_cnn resnet18 resnet50 vit_tiny torchscript:PATH   data: synthetic imagefolder:DIR mnist:DIR\n"
    "\n"
    "usage: tunebench-cli run --script train.py [--python PY] [--set k=v,...] [--steps N | --measured-steps N]\n"
    "       [--warmup N] [--json OUT.json] [--trace T.json [--trace-every N] [--trace-share S] [--trace-steps K]\n"
    "       [--trace-detail shapes,stack]] [--first-step-timeout S] [--quiet] [-- SCRIPT ARGS]\n"
    "  Runs the user's own PyTorch script, unmodified, and measures its training steps (a batch, its backward\n"
    "  and update): their phases, memory, and the time between them (validation, checkpoints). The first step\n"
    "  must end within --first-step-timeout seconds (120; an LBFGS step(closure) may need more). --trace\n"
    "  records after the first 10 measured steps of a run of --steps 60 or more (a shorter run, or one of\n"
    "  unknown length: from its start); those, or the untraced steps between chunks, are the reference for\n"
    "  tracing's own cost, stated when above 5%. Every step is drawn on the trace's step lane from the step\n"
    "  stream, with findings from step timings. The trace is sampled: chunks of 3 to\n"
    "  --trace-every steps (20), each as long as keeps its stop within a step, with untraced steps between\n"
    "  them, as many as keep watching under --trace-share of the run (0.01; 0 traces every step in chunks\n"
    "  of --trace-every); the analysis leaves the untraced steps out of its window. The trace holds at least\n"
    "  --trace-steps traced steps (min(N, 20) for --steps N, else 20; 0: the share alone), where the run makes\n"
    "  them after its reference: spread over the rest of a run of --steps N (the share's gaps where shorter),\n"
    "  every other step until held in a run of unknown length.\n";

constexpr const char* kKnobs =
    "usage: tunebench-cli knobs [--json]\n"
    "  Every knob: its default, recommended value, whether it applies on this machine and why not.\n";

constexpr const char* kReport =
    "usage: tunebench-cli report --session S.json [--html R.html] [--md R.md] [--json R.json]\n"
    "  Renders the GUI's exported session (its live changes and tunes) as one report; without an output option\n"
    "  it writes all three next to S.json.\n";

constexpr const char* kServe =
    "usage: tunebench-cli serve [--model M] [--data D] [--set k=v,...] [--steps N] [--trace-dir DIR]\n"
    "       [--trace-every N] [--inline-files] [--ranks N [--dist-timeout S]]\n"
    "       serve --script train.py [--python PY] [--set k=v,...] [--steps N] [--trace-dir DIR] [--trace-every N]\n"
    "       [--trace-share S] [--trace-steps K (20)] [--trace-detail shapes,stack] [--report-dir DIR]\n"
    "       [--inline-files] [-- SCRIPT ARGS]\n"
    "  The run protocol (docs/protocol.md) on stdin/stdout: what the GUI starts. Not for typing.\n";

}  // namespace

bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--")) return false;  // the script's own arguments
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return true;
  }
  return false;
}

int cmd_help(const std::string& cmd) {
  const char* text = cmd == "run" ? kRun : cmd == "knobs" ? kKnobs : cmd == "report" ? kReport : cmd == "serve" ? kServe : nullptr;
  if (!text) return -1;
  std::fputs(text, stdout);
  return 0;
}

}  // namespace tb::cli
