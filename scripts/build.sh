#!/usr/bin/env bash
# Configures and builds TuneBench into build/ (or $TB_BUILD_DIR). Installs nothing: see install-deps.sh.
# Builds the GUI when Qt 6 is installed (it is, after install-deps.sh); TB_GUI=OFF forces headless. The benches
# (bench/) only with TB_BENCH=ON: scripts/bench.sh builds them.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${TB_BUILD_DIR:-build}"
gui="${TB_GUI:-ON}"
jobs="${TB_JOBS:-$(nproc)}"
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}" CCACHE_BASEDIR="$PWD" CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Precompiled headers and ccache: let ccache reuse PCH-based objects.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
# A debug-info build hashes its working directory by default, so a clean clone elsewhere (CI's) missed every
# object a checkout had cached (254 of 255): the paths are relative under CCACHE_BASEDIR, the objects the same.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
# The engine links the PyTorch wheel of the project's environment (scripts/python-env.sh); TB_PYTHON names
# another interpreter whose torch to use.
python="${TB_PYTHON:-$(bash scripts/python-env.sh --existing)}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${TB_BUILD_TYPE:-RelWithDebInfo}" \
  -DTUNEBENCH_GUI="$gui" -DBUILD_TESTING=ON -DTUNEBENCH_PYTHON="$python" -DTUNEBENCH_BENCH="${TB_BENCH:-OFF}" \
  ${TB_CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$jobs"
