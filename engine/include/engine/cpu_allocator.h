// The process's CPU memory allocator: the `cpu_allocator` knob (docs/protocol.md "Allocator").
//
// Measured on a 2-core machine (mnist_cnn, synthetic data, 40 steps): glibc's defaults ~250 samples/s and
// ~8000 minor page faults per step; the same with glibc's mmap and trim thresholds pinned at 256 MiB ~970
// and almost none; tcmalloc (LD_PRELOAD) ~940; jemalloc ~385. glibc maps every block above its mmap threshold
// (128 KiB at start) afresh and returns it on free; its "dynamic" threshold rises only when such a block is
// freed, so a long process changes speed at unpredictable moments (here: 126 -> 175 ms/step over 1500
// steps; inside one tune 370 -> 673 -> 978 samples/s). That is why the engine never measures knobs under
// glibc's defaults, and why this knob is a process setting: it takes effect when a process starts
// (LD_PRELOAD for jemalloc / tcmalloc; mallopt for glibc_tuned, which also works one-way in a running
// process: glibc -> glibc_tuned). Torch-free.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace tb::engine {

// Values of the knob, as the catalog spells them: "glibc", "glibc_tuned", "jemalloc", "tcmalloc".
const std::vector<std::string>& cpu_allocator_values();

// The allocator serving malloc in this process: jemalloc / tcmalloc by their exported symbols, else glibc,
// "glibc_tuned" once its thresholds were pinned (by this process, or by GLIBC_TUNABLES at start).
std::string active_cpu_allocator();

// The shared library that provides jemalloc / tcmalloc here; "" when not installed (or for glibc*).
std::string cpu_allocator_library(const std::string& value);

// Why a value cannot be used on this machine ("" when it can): a missing library.
std::string cpu_allocator_unavailable(const std::string& value);

// Makes this running process use `value` if that is possible without a restart: the active one (nothing to
// do), or glibc -> glibc_tuned (mallopt). Else why not (it needs a process start).
Status switch_cpu_allocator_live(const std::string& value);

// The environment that gives a new process `value` ("LD_PRELOAD=/usr/lib/.../libtcmalloc_minimal.so.4",
// "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=268435456"); "" for glibc.
std::string cpu_allocator_env(const std::string& value);

// What `run` says when page faults are a visible share of the step under glibc's defaults: at ~2 us per
// fault (a lower bound), faults costing 5% of the step or more. "" when they are not, or another allocator runs.
std::string page_fault_hint(double faults_per_step, double step_ms);

// For an executable's main(), before anything else: makes this process run under `value`. glibc_tuned is set
// in place; jemalloc / tcmalloc re-execute the program (/proc/self/exe, same argv) with the library preloaded
// and do not return on success. Else a one-line error (missing library, preload did not take).
Status start_process_with_cpu_allocator(const std::string& value, char** argv);

// The cpu_allocator value requested by `--set` arguments of a command line (the last one wins); nullopt when
// none asks for one. Values are not validated here (the command's own parser reports bad ones).
std::optional<std::string> cpu_allocator_from_args(int argc, char** argv);

}  // namespace tb::engine
