// Subcommands tunebench-cli runs itself (profiler and client only; no LibTorch). Each returns the process exit
// code: 0 ok, 1 runtime failure, 2 bad input (with a one-line "tunebench-cli: error: ..." on stderr). The
// engine commands are tunebench-engine's (app/engine/commands.h); main.cpp hands them over.
#pragma once

namespace tb::cli {
int cmd_analyze(int argc, char** argv);       // cmd_analyze.cpp
int cmd_diff(int argc, char** argv);          // cmd_diff.cpp
int cmd_gate(int argc, char** argv);          // cmd_gate.cpp       (the CI gate: 0 pass, 1 regression, 2 undecided, 3 could not run)
int cmd_remote(int argc, char** argv);        // cmd_remote.cpp       (run|tune|knobs|make-dataset --remote; client/)
bool wants_remote(int argc, char** argv);     // --remote before any "--"
// argv[0] is the subcommand name in every cmd_*.
}  // namespace tb::cli
