// The knob table: every knob one row, declared once in python/tunebench/knobs.json (the launcher reads the file;
// the binaries carry it compiled in). A row says what the knob is on each surface that has it (the engine's
// LibTorch session, a user's script under the launcher), why a surface lacks it, what the tuner knows of it, and
// the Python lines a script's patch and report get for it. What a knob *does* stays code: the engine's session
// (engine/src/session*.cpp) and the launcher's knob classes (python/tunebench/knobs.py), each tested against
// this table (KnobTable tests, python/tests/test_knob_table.py). docs/design.md "Where new code goes": a knob.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tb::knobs {

// A knob as one surface has it: the row's common fields with the surface's own values over them.
struct Surface {
  std::string type;  // "bool", "int", "enum"
  std::string title, description;
  // The value a newcomer's program has (PyTorch's defaults); empty with `default_at_start`: the interpreter's own
  // value, read when the script starts (torch's thread count, zero_grad's default of the torch version).
  std::string default_value;
  bool default_at_start = false;
  std::string recommended;
  std::vector<std::string> choices;  // enum: the values; bool: {"off", "on"}
  int64_t min = 0, max = 1;          // int: the range
  bool numerics = false;             // changes the loss curve: the tuner's drift guard runs
  bool process_scope = false;        // takes effect when a process starts: fresh processes in the tuner
  // Engine: the seeds' workloads that show it, where it applies (words), one line of PyTorch and of LibTorch.
  std::vector<std::string> seeds;
  std::string applies_to, pytorch, libtorch;
  std::string snippet;  // script: the line the GUI shows ({value}: the value)
};

// The shares of each kind of time a knob removes (engine/src/tuner/search/priority.h): loader, h2d, launch,
// sync, compute, comm. No prior on a device: all zero.
using Shares = std::array<double, 6>;

struct Tuner {
  Shares cuda{}, cpu{};
  std::string needs;              // the knob it means nothing without ("" none)
  std::string ladder = "none";    // "none", "workers", "doubling"
  bool model_level = false;       // a GPU model-level knob measured within the budget's first third
  bool recipe = false;            // changes the training recipe: said apart
  std::string cost = "plain";     // "plain", "compiles", "recompiles_under_compile"
};

struct Row {
  std::string id;
  std::optional<Surface> engine;  // the engine's session has it
  std::optional<Surface> script;  // the launcher (python/tunebench/knobs.py) has it
  std::string script_env;         // how tunebench-cli sets it around a script's interpreter ("" none)
  std::string not_for_scripts;    // why a script has no such knob (a code change): said when one is asked
  Tuner tuner;
  // The process-wide Python lines a script's patch and report get for a value ("*": any value; none for a
  // value: no such line). {value} is the value, {True} its Python bool, {workers} the configuration's workers.
  std::map<std::string, std::vector<std::string>> python_set;
  // Why a script's patch cannot place it, when no rule of script_patch.cpp places it and python_set has no line.
  std::string patch_left_out;
  // How a script's patch places it: "python_set", "dataloader", "zero_grad", "autocast", "channels_last",
  // "compile", or "" (not placed: patch_left_out says why).
  std::string patch;
  // The DataLoader's keyword argument the knob is ("num_workers"), with patch "dataloader": an int as it is, a
  // bool as True/False.
  std::string dataloader_arg;
};

// The rows, in the table's order. The table is checked when first read; a bad table aborts with its error
// (it is the build's own file: KnobTable.TheTableReadsAndEveryRowIsWhole keeps it whole).
const std::vector<Row>& table();
const Row* find(std::string_view id);

// Whether a script run has the knob: the launcher's, or set by tunebench-cli around the interpreter.
bool script_has(const Row& r);

// The DataLoader keyword arguments of the `changed` knobs (id -> value) that are one, in the table's order:
// {"num_workers", "2"}, {"pin_memory", "True"}.
std::vector<std::pair<std::string, std::string>> dataloader_arguments(
    const std::map<std::string, std::string>& changed);

// The python_set lines of `r` at `value` with their placeholders filled; `workers` is the configuration's.
std::vector<std::string> python_lines(const Row& r, const std::string& value, const std::string& workers = "0");

}  // namespace tb::knobs
