#!/usr/bin/env bash
# Installs what TuneBench needs to build and test on Debian 12 (bookworm). Idempotent; run as root.
# Debian's packages here (bookworm's versions); PyTorch and the rest of the Python side come from PyPI into the
# project's virtual environment, pinned in python/requirements.txt (scripts/python-env.sh, called at the end).
# Usage: scripts/install-deps.sh [--bench]   (--bench adds clang for the importer fuzzer)
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libgloo-dev                           # Gloo headers: c10d's ProcessGroupGloo.hpp includes them; the wheel has none
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  libsimdjson-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev libvulkan-dev libgl-dev
  xvfb xauth
  python3                               # the fake serve child of the GUI tests
  libjemalloc2 libtcmalloc-minimal4     # the cpu_allocator knob's jemalloc / tcmalloc values (LD_PRELOAD)
  python3-venv                          # the project's Python environment (PyTorch from PyPI: scripts/python-env.sh)
  chromium                              # the tuning report looked at in a browser (tests/report)
  openssh-client openssh-server         # --remote runs over ssh; its tests start their own sshd (tests/remote)
  iproute2 util-linux nftables          # two hosts made of namespaces, and a silent partition (tests/dist)
)
if [[ "${1:-}" == "--bench" ]]; then pkgs+=(clang); fi  # libFuzzer
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all packages present"
else
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: installed ${#missing[@]} packages"
fi
# The Python side (PyTorch from PyPI) as the calling user, not root: scripts/python-env.sh.
bash "$(dirname "$0")/python-env.sh" >/dev/null
