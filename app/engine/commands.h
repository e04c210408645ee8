// Subcommands of tunebench-engine, the LibTorch half of tunebench-cli. Each returns the process exit code: 0
// ok, 1 runtime failure, 2 bad input (with a one-line "tunebench-cli: error: ..." on stderr).
#pragma once

#include <string>

namespace tb::cli {
int cmd_knobs(int argc, char** argv);         // cmd_knobs.cpp
bool wants_help(int argc, char** argv);       // cmd_help.cpp: --help / -h before any "--"
int cmd_help(const std::string& cmd);         // its usage on stdout, 0; -1 for a command that prints its own
int cmd_run(int argc, char** argv);           // cmd_run.cpp
int cmd_run_script(int argc, char** argv);    // cmd_run_script.cpp   (a user's script; client/)
int cmd_serve(int argc, char** argv);         // cmd_serve.cpp        (the loop: engine/serve.h)
int cmd_serve_script(int argc, char** argv);  // cmd_serve_script.cpp (a user's script; client/)
int cmd_make_dataset(int argc, char** argv);  // cmd_make_dataset.cpp
int cmd_tune(int argc, char** argv);          // cmd_tune.cpp
int cmd_report(int argc, char** argv);        // cmd_report.cpp       (a session report)
int cmd_version(int argc, char** argv);       // cmd_version.cpp      (LibTorch, CUDA, the device)
// argv[0] is the subcommand name in every cmd_*.
}  // namespace tb::cli
