// Subcommands of tunebench-cli. Each returns the process exit code: 0 ok, 1 runtime failure, 2 bad input
// (with a one-line "tunebench-cli: error: ..." on stderr).
#pragma once

namespace tb::cli {
int cmd_knobs(int argc, char** argv);         // cmd_knobs.cpp        (engine)
int cmd_run(int argc, char** argv);           // cmd_run.cpp          (engine)
int cmd_run_script(int argc, char** argv);    // cmd_run_script.cpp   (a user's script; client/)
int cmd_serve(int argc, char** argv);         // cmd_serve.cpp        (engine)
int cmd_serve_script(int argc, char** argv);  // cmd_serve_script.cpp (a user's script; client/)
int cmd_make_dataset(int argc, char** argv);  // cmd_make_dataset.cpp (engine data)
int cmd_tune(int argc, char** argv);          // cmd_tune.cpp         (engine tuner)
int cmd_report(int argc, char** argv);        // cmd_report.cpp       (engine report writer: a session report)
int cmd_version(int argc, char** argv);       // cmd_version.cpp      (engine: LibTorch, CUDA, the device)
int cmd_analyze(int argc, char** argv);       // cmd_analyze.cpp      (profiler; tunebench-cli itself)
int cmd_diff(int argc, char** argv);          // cmd_diff.cpp         (profiler; tunebench-cli itself)
int cmd_remote(int argc, char** argv);        // cmd_remote.cpp       (run|tune|knobs|make-dataset --remote; client/)
bool wants_remote(int argc, char** argv);     // --remote before any "--"
// argv[0] is the subcommand name in every cmd_*.
}  // namespace tb::cli
