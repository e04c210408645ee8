// `tunebench-cli --version`, the engine's half: which LibTorch this build links, what GPU support is compiled
// in, and whether this machine has a GPU for it (and if not, why). tunebench-cli prints its own line first.
#include <cstdio>
#include <string>

#include "commands.h"
#include "engine/distributed.h"
#include "engine/session.h"
#include "profiler/cupti_collector.h"
#include "profiler/recorder.h"

namespace tb::cli {

int cmd_version(int, char**) {
  const nlohmann::json env = engine::environment_info();
  const auto& v = env["versions"];
  const auto& d = env["device"];
  const std::string cuda = v.value("cuda", std::string());
  std::string line = "engine: LibTorch " + v.value("libtorch", std::string("?"));
  if (cuda.empty()) {
    line += ", a CPU-only build";
  } else {
    line += ", a CUDA " + cuda + " build (compiled in: CUDA";
    if (prof::CuptiCollector::built()) line += ", CUPTI";
    if (prof::Recorder::nvtx_built()) line += ", NVTX";
    if (engine::nccl_built()) line += ", NCCL";
    line += ")";
  }
  std::printf("%s\n", line.c_str());
  if (d.value("kind", std::string()) == "cuda") {
    std::printf("device: %s (sm %d), cuDNN %s\n", d.value("name", std::string("?")).c_str(), d.value("sm", 0),
                v.value("cudnn", std::string("none")).c_str());
  } else {
    std::printf("device: CPU, %s (%d cores); no GPU: %s\n", d.value("name", std::string("?")).c_str(),
                d.value("cores", 0), d.value("no_cuda", std::string("?")).c_str());
  }
  return 0;
}

}  // namespace tb::cli
