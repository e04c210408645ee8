#!/usr/bin/env bash
# Builds the headless parts against Debian 13's LibTorch 2.6 (CPU) and runs their tests, in a chroot, here.
#
# Why: Debian 12's LibTorch 1.13 is what CI links. The GPU box links a PyTorch 2.x wheel, and c10d, autocast
# and the TCP store behave differently there; scripts/check-libtorch2.sh only compiles against 2.x. Debian 13
# (trixie) has LibTorch 2.6, its torchrun and python3-torch 2.6 (Python 3.13), g++ 14 and CMake 3.31: a real
# build that links and runs, with real Gloo groups, on the CPU. debootstrap makes the root (about 2 GB with
# the packages); the work tree is cloned into it (committed state only), so the host's build/ is untouched.
#
#   sudo scripts/test-on-debian13.sh [ROOT]          # ROOT defaults to /var/tmp/tunebench-debian13
#   TB_D13_TESTS='CliDistributed|ServeRanks' sudo scripts/test-on-debian13.sh   # a ctest -R selection
#
# Cold: ~5 min for the root, ~14 min to build on 2 cores, ~5 min of tests. Tests that need what the chroot
# lacks (ssh, network namespaces, Chromium, the .deb install) are left out. Needs root (debootstrap, mounts).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/var/tmp/tunebench-debian13}
mirror=${TB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
fail() { echo "test-on-debian13: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap and the chroot's mounts)"
command -v debootstrap >/dev/null || fail "needs debootstrap (apt-get install debootstrap)"

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "test-on-debian13: making a Debian 13 root in $root"
  mkdir -p "$root"
  timeout 1800 debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$mirror" >"$root.debootstrap.log" 2>&1 ||
    fail "debootstrap failed (see $root.debootstrap.log)"
fi

mounted=()
cleanup() { for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT
for m in proc sys dev dev/pts; do
  mountpoint -q "$root/$m" && continue
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    *) mount --bind "/$m" "$root/$m" ;;
  esac
  mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"

# What scripts/install-deps.sh installs for the headless build and its tests, by Debian 13's names.
pkgs="build-essential cmake ninja-build pkg-config git procps libtorch-dev libgloo-dev libturbojpeg0-dev
      libjpeg62-turbo-dev libpng-dev zlib1g-dev libsimdjson-dev nlohmann-json3-dev libgtest-dev libgmock-dev
      python3 python3-torch python3-pil python3-numpy"
chroot "$root" env DEBIAN_FRONTEND=noninteractive bash -c \
  "apt-get update -qq && apt-get install -y -qq --no-install-recommends $(echo $pkgs) >/dev/null" ||
  fail "apt-get in the chroot failed"

rm -rf "$root/src"
git clone -q "$src" "$root/src"
echo "test-on-debian13: LibTorch $(chroot "$root" python3 -c 'import torch; print(torch.__version__)'), $(chroot "$root" g++ --version | head -1)"
chroot "$root" bash -c 'cd /src && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUNEBENCH_GUI=OFF \
  -DTUNEBENCH_BENCH=OFF -DBUILD_TESTING=ON >build.log 2>&1 && cmake --build build -j"$(nproc)" >>build.log 2>&1' ||
  { tail -30 "$root/src/build.log"; fail "the build against LibTorch 2.6 failed (log: $root/src/build.log)"; }
select=""
[ -z "${TB_D13_TESTS:-}" ] || select="-R '$TB_D13_TESTS'"
# Left out: what the chroot lacks (ssh, network namespaces, Chromium, the .deb install), and two tests that
# Debian 13's packages break, not TuneBench (both reproduced with plain Python torch 2.6):
# - its oneDNN 3.6 divides by zero (SIGFPE) in convolution_backward_data for ResNet-50's 1x1 stride-2
#   1024->2048 conv on a 2x2 input, batch 2;
# - its torchrun cannot open its own rendezvous store ("use_libuv was requested but PyTorch was build without
#   libuv support"), so no torchrun test can start.
chroot "$root" bash -c "cd /src/build && ctest -j$(nproc) --timeout 900 --output-on-failure $select \
  -E '^(remote\\.|report\\.chromium|dist\\.two_hosts|install\\.|Models\\.ResNet18And50TrainAStepOnSmallInputs|CliDistributed\\.TorchrunEnvironment)'"
