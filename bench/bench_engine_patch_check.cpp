// Does the patch check decide (not run in CI; it was tests/engine/test_patch_check.cpp's until the test suite kept
// only what holds on any machine)? The check of engine/patch_check.h, for real: the patched script and the
// original, each run plainly in fresh processes, alternated, on the one patch a script's tune writes most
// (DataLoader num_workers=2) in two worlds. The script reads its samples the way a slow store is read (a sleep a
// sample, so the figures hold on a busy machine): from a loader worker the read takes as long as in the main
// process (workers pay: the check should say faster, about 1.3x and more), or eight times as long (a store that
// serialises its readers: workers lose, the check should say SLOWER, about 0.7x and less). A check that ran the
// original twice would decide neither.
//
// Prints the check's line for each world and round, with its seconds.
//
// usage: bench_engine_patch_check [--rounds 1] [--pairs 3] [--steps 10] [--python P]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "client/script_runner.h"
#include "engine/patch_check.h"
#include "engine/script_patch.h"
#include "engine/tuner.h"

namespace fs = std::filesystem;
using namespace tb::engine;

namespace {

std::string script_text(int worker_ms) {
  return R"(import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Store(Dataset):
    """Samples from a store that takes 5 ms a read, and )" + std::to_string(worker_ms) + R"( ms from a worker process."""

    def __len__(self):
        return 400

    def __getitem__(self, i):
        time.sleep()" + std::to_string(worker_ms) + R"( / 1000 if get_worker_info() is not None else 0.005)
        return torch.full((8,), float(i % 7)), torch.ones(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=100)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1)
    loader = DataLoader(Store(), batch_size=4, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            out = model(x)
            torch.nn.functional.mse_loss(out, y).backward()
            optimizer.step()


if __name__ == "__main__":
    main()
)";
}

int line_of(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n)
    if (l.find(needle) != std::string::npos) return n;
  return 0;
}

// A tune that kept workers=2, as the launcher would have described the script.
TuneResult kept_workers(const std::string& script, const std::string& text) {
  TuneResult r;
  r.environment = {{"model", "script:" + script},
                   {"device", "cpu: bench"},
                   {"source", {{{"kind", "dataloader"}, {"file", script}, {"line", line_of(text, "loader = DataLoader(")},
                                {"code", "loader = DataLoader(Store(), batch_size=4, shuffle=True)"}}}}};
  r.baseline = {{"workers", "0"}, {"cpu_allocator", "glibc"}};
  r.final_config = {{"workers", "2"}, {"cpu_allocator", "glibc"}};
  r.verdict = "faster";
  r.speedup = {1.8, 1.5, 2.1};
  r.speedup_fresh_processes = true;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 1, pairs = 3, steps = 10;
  std::string python;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--rounds") rounds = std::atoi(v.c_str());
    else if (a == "--pairs") pairs = std::atoi(v.c_str());
    else if (a == "--steps") steps = std::atoi(v.c_str());
    else if (a == "--python") python = v;
    else {
      std::fprintf(stderr, "usage: bench_engine_patch_check [--rounds 1] [--pairs 3] [--steps 10] [--python P]\n");
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() / ("tb_bench_patch_check_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string script = (dir / "train.py").string();
  std::ofstream(script) << script_text(5);
  tb::client::ScriptOptions o;
  o.script = script;
  o.python = python;
  int code = 0;
  try {
    // One workload (its live script released, as the CLI does) checks every world: its fresh processes read the
    // file as it is.
    auto w = make_script_workload(o);
    w->release();
    for (int r = 0; r < rounds; ++r)
      for (const int worker_ms : {5, 40}) {
        const std::string text = script_text(worker_ms);
        std::ofstream(script) << text;
        const ScriptPatch p = script_patch(kept_workers(script, text), dir.string());
        PatchCheckOptions po;
        po.steps = steps;
        po.min_pairs = po.max_pairs = pairs;
        const PatchCheck c = check_script_patch(*w, p, po);
        std::printf("round %d, a worker's read %d ms (%s): %s (%.0f s)\n", r + 1, worker_ms,
                    worker_ms == 5 ? "workers pay: faster expected" : "workers lose: SLOWER expected", c.text().c_str(),
                    c.seconds);
        std::fflush(stdout);
      }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_engine_patch_check: %s\n", e.what());
    code = 1;
  }
  fs::remove_all(dir);
  return code;
}
