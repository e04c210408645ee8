#!/usr/bin/env bash
# Run HERE (a Debian 12 dev machine with network to Debian's mirror), before a GPU session: downloads the
# Debian packages the GPU box lacks (it reaches no registry) into .carry/debs, which the device tool carries
# (`carry: [".carry"]`) and scripts/gpu-check.sh unpacks there with dpkg -x (never into /).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .carry/debs
cd .carry/debs
# zlib1g: the dev symlink needs its target in the root (the box's zlib may be another version).
# pkgconf: the box may have no pkg-config. libgtest-dev ships libgtest.a/libgmock.a and their CMake config.
# libgloo-dev: Gloo's headers, which c10d's ProcessGroupGloo.hpp includes and the wheel does not ship.
pkgs=(libturbojpeg0 libturbojpeg0-dev libjpeg62-turbo libjpeg62-turbo-dev libpng16-16 libpng-dev zlib1g zlib1g-dev
      libsimdjson14 libsimdjson-dev nlohmann-json3-dev libgtest-dev libbenchmark1debian libbenchmark-dev
      pkgconf pkgconf-bin libpkgconf3 libgloo-dev)
apt-get download "${pkgs[@]}"
ls -la
