#!/usr/bin/env bash
# Run HERE (a Debian 12 dev machine with network to Debian's mirror), before a GPU session. The device tool
# carries .carry (`carry: [".carry"]`); scripts/gpu-check.sh uses it there:
#  - .carry/debs: the Debian packages the GPU box lacks (it reaches no registry), unpacked there with dpkg -x
#    into .carry/root (never into /);
#  - .carry/bin: this machine's build of the headless binaries, stripped (about 10 MB), when build/ holds one.
#    Every build links PyPI's torch wheel (cmake/TuneBenchTorch.cmake), the box's own version: the binaries run
#    there against its LibTorch, and the short lease goes to measuring instead of a build of several minutes.
#    gpu-check.sh checks the torch version and every library before it trusts them, else it builds there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/debs
(
  cd .carry/debs
  # zlib1g: the dev symlink needs its target in the root (the box's zlib may be another version).
  # pkgconf: the box may have no pkg-config. libgtest-dev ships libgtest.a/libgmock.a and their CMake config.
  # libgloo-dev: Gloo's headers, which c10d's ProcessGroupGloo.hpp includes and the wheel does not ship.
  pkgs=(libturbojpeg0 libturbojpeg0-dev libjpeg62-turbo libjpeg62-turbo-dev libpng16-16 libpng-dev zlib1g zlib1g-dev
        libsimdjson14 libsimdjson-dev nlohmann-json3-dev libgtest-dev libbenchmark1debian libbenchmark-dev
        pkgconf pkgconf-bin libpkgconf3 libgloo-dev)
  apt-get download "${pkgs[@]}"
)
build="${TB_BUILD_DIR:-build}"
rm -rf .carry/bin
if [[ -x $build/app/tunebench-engine ]]; then
  # The collector bench is carried too; benches are out of the default build (TUNEBENCH_BENCH).
  if [[ ! -x $build/bench/bench_engine_collector ]]; then
    cmake -S . -B "$build" -DTUNEBENCH_BENCH=ON >/dev/null && cmake --build "$build" --target bench_engine_collector
  fi
  mkdir -p .carry/bin
  for f in app/tunebench-cli app/tunebench-engine tests/engine/tunebench_torch_tests tests/engine/tunebench_engine_tests \
           tests/profiler/tunebench_profiler_tests bench/bench_engine_collector; do
    [[ -x $build/$f ]] && strip -o ".carry/bin/${f##*/}" "$build/$f"
  done
  # What they were built against, and where: gpu-check.sh compares the version with the box's torch, and
  # mirrors the source path there (tests find their fixtures and the engine its Python package by it).
  python="$(sed -n 's/^TUNEBENCH_PYTHON:FILEPATH=//p' "$build/CMakeCache.txt")"
  "$python" -c 'import torch; print(torch.__version__)' > .carry/bin/torch-version
  echo "$PWD" > .carry/bin/source-dir
  git rev-parse HEAD > .carry/bin/commit
fi
du -sh .carry/*
