// engine/cpu_allocator.h. No LibTorch: it runs before the engine does anything.
#include "engine/cpu_allocator.h"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace tb::engine {
namespace {

constexpr size_t kTunedThreshold = size_t(256) << 20;  // both thresholds: blocks up to 256 MiB stay in the heap
std::atomic<bool> g_tuned{false};
constexpr const char* kReexecMarker = "TUNEBENCH_CPU_ALLOCATOR_REEXEC";

bool has_symbol(const char* name) { return dlsym(RTLD_DEFAULT, name) != nullptr; }

std::string find_library(const std::vector<std::string>& names) {
  static const char* dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/x86_64-linux-gnu",
                               "/usr/lib64", "/usr/lib", "/usr/local/lib"};
  for (const auto& n : names)
    for (const char* d : dirs) {
      std::error_code ec;
      const std::string p = std::string(d) + "/" + n;
      if (std::filesystem::exists(p, ec)) return p;
    }
  return "";
}

bool tunables_pin_glibc() {
  const char* t = std::getenv("GLIBC_TUNABLES");
  return t && std::strstr(t, "glibc.malloc.mmap_threshold") && std::strstr(t, "glibc.malloc.trim_threshold");
}

}  // namespace

const std::vector<std::string>& cpu_allocator_values() {
  static const std::vector<std::string> v = {"glibc", "glibc_tuned", "jemalloc", "tcmalloc"};
  return v;
}

std::string active_cpu_allocator() {
  if (has_symbol("mallctl")) return "jemalloc";
  if (has_symbol("tc_malloc") || has_symbol("MallocExtension_GetStats")) return "tcmalloc";
  if (g_tuned.load() || tunables_pin_glibc()) return "glibc_tuned";
  return "glibc";
}

std::string cpu_allocator_library(const std::string& value) {
  if (value == "jemalloc") return find_library({"libjemalloc.so.2", "libjemalloc.so"});
  if (value == "tcmalloc") return find_library({"libtcmalloc_minimal.so.4", "libtcmalloc.so.4", "libtcmalloc_minimal.so"});
  return "";
}

std::string cpu_allocator_unavailable(const std::string& value) {
  if (value != "jemalloc" && value != "tcmalloc") return "";
  if (active_cpu_allocator() == value) return "";
  if (!cpu_allocator_library(value).empty()) return "";
  return value == "jemalloc" ? "jemalloc is not installed (Debian: libjemalloc2)"
                             : "tcmalloc is not installed (Debian: libtcmalloc-minimal4)";
}

Status switch_cpu_allocator_live(const std::string& value) {
  const std::string active = active_cpu_allocator();
  if (value == active) return {};
  if (value == "glibc_tuned" && active == "glibc") {
    if (mallopt(M_MMAP_THRESHOLD, int(kTunedThreshold)) != 1 || mallopt(M_TRIM_THRESHOLD, int(kTunedThreshold)) != 1)
      return Error{"glibc refused the thresholds (mallopt)"};
    g_tuned = true;
    return {};
  }
  const std::string env = cpu_allocator_env(value);
  return Error{"cpu_allocator=" + value + " takes effect when a process starts (this one runs " + active +
               "): restart with --set cpu_allocator=" + value + (env.empty() ? "" : ", or start it with " + env)};
}

std::string cpu_allocator_env(const std::string& value) {
  if (value == "glibc_tuned")
    return "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=" + std::to_string(kTunedThreshold) +
           ":glibc.malloc.trim_threshold=" + std::to_string(kTunedThreshold);
  if (value == "jemalloc" || value == "tcmalloc") {
    std::string lib = cpu_allocator_library(value);
    if (lib.empty()) lib = value == "jemalloc" ? "libjemalloc.so.2" : "libtcmalloc_minimal.so.4";
    return "LD_PRELOAD=" + lib;
  }
  return "";
}

Status start_process_with_cpu_allocator(const std::string& value, char** argv) {
  const std::string active = active_cpu_allocator();
  if (value == active || value == "glibc") {
    // glibc asked while another allocator is preloaded by the environment: the user's choice stands; the
    // process reports what it runs (describe/hello), so nothing is hidden.
    if (std::getenv(kReexecMarker)) {
      // Restarted by us: take our preload back out of the environment, so that processes this one starts
      // (the tuner's fresh-process trials) get only what they ask for.
      unsetenv(kReexecMarker);
      if (const char* pre = std::getenv("LD_PRELOAD")) {
        std::string rest = pre;
        const std::string lib = cpu_allocator_library(active);
        if (!lib.empty() && rest.rfind(lib, 0) == 0) rest = rest.substr(lib.size());
        if (!rest.empty() && rest[0] == ':') rest = rest.substr(1);
        if (rest.empty()) unsetenv("LD_PRELOAD");
        else setenv("LD_PRELOAD", rest.c_str(), 1);
      }
    }
    return {};
  }
  if (value == "glibc_tuned") return switch_cpu_allocator_live(value);
  if (value != "jemalloc" && value != "tcmalloc") return Error{"unknown cpu_allocator '" + value + "'"};
  if (std::getenv(kReexecMarker))
    return Error{"cpu_allocator=" + value + ": the process was restarted with " + cpu_allocator_env(value) +
                 " but " + active + " still serves malloc"};
  const std::string lib = cpu_allocator_library(value);
  if (lib.empty()) return Error{"cpu_allocator=" + value + ": " + cpu_allocator_unavailable(value)};
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv(kReexecMarker, "1", 1);
  execv("/proc/self/exe", argv);
  return Error{"cpu_allocator=" + value + ": cannot restart the process with " + lib + ": " + std::strerror(errno)};
}

std::optional<std::string> cpu_allocator_from_args(int argc, char** argv) {
  std::optional<std::string> out;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--set") != 0) continue;
    const std::string list = argv[i + 1];
    size_t pos = 0;
    while (pos <= list.size()) {
      const size_t comma = list.find(',', pos);
      std::string item = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      const size_t eq = item.find('=');
      if (eq != std::string::npos) {
        auto trim = [](std::string s) {
          const auto b = s.find_first_not_of(" \t");
          const auto e = s.find_last_not_of(" \t");
          return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
        };
        if (trim(item.substr(0, eq)) == "cpu_allocator") out = trim(item.substr(eq + 1));
      }
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  return out;
}

std::string page_fault_hint(double faults_per_step, double step_ms) {
  if (!(faults_per_step > 0 && step_ms > 0) || faults_per_step * 2e-3 < 0.05 * step_ms ||
      active_cpu_allocator() != "glibc")
    return "";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%.0f page faults per %.1f ms step (at least %.1f ms at 2 us each): the allocator maps memory afresh "
                "every step; try --set cpu_allocator=glibc_tuned (%s)",
                faults_per_step, step_ms, faults_per_step * 2e-3, cpu_allocator_env("glibc_tuned").c_str());
  return buf;
}

}  // namespace tb::engine
