#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to green tests: install deps (root/sudo), build, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
cd "${TB_BUILD_DIR:-build}"
ctest --output-on-failure -j "${TB_TEST_JOBS:-2}" --timeout 900
