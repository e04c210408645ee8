#!/usr/bin/env bash
# Compile-checks the engine against a LibTorch 2.x with CUDA, here, without a GPU.
#
# Why: the GPU box builds against its PyTorch 2.x wheel (scripts/gpu-check.sh), while Debian 12's LibTorch
# 1.13 (CPU only) is the only one this machine links. Every CUDA branch and every 2.x branch of c10d_compat.h
# would otherwise meet its first compiler on the GPU, where a build error costs the session's GPU time.
# Debian 13 (trixie) ships LibTorch 2.6 built with CUDA (libtorch-cuda-dev, contrib), gloo's headers and
# nccl.h: this script downloads those three .debs from Debian's mirror, unpacks them with dpkg -x into a
# cache (never into /), and runs `g++ -fsyntax-only` on every engine source and every engine test that reads
# LibTorch, with TUNEBENCH_TORCH_CUDA=1 and TUNEBENCH_NCCL=1 as the CUDA build defines them.
#
# Syntax only, not a build: trixie's libraries need a newer glibc and libstdc++ than Debian 12's, so nothing
# links or runs. Templates are instantiated, so a call that does not fit 2.x's signatures fails here.
#
#   scripts/check-libtorch2.sh             # ~8 min on 2 cores; the .debs (~120 MB) are downloaded once
#   TB_TORCH2_CUDA=0 scripts/check-libtorch2.sh    # the CPU branches against the same headers
#   TB_TORCH2_FILES="engine/src/dist/ddp.cpp" scripts/check-libtorch2.sh
#
# Prints one line per file (OK / FAIL), then the first errors of each failing file; exits 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mirror=${TB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${TB_TORCH2_CACHE:-$HOME/.cache/tunebench/libtorch2}
cuda=${TB_TORCH2_CUDA:-1}
jobs=${TB_JOBS:-2}
cuda_include=${CUDAToolkit_ROOT:-/usr/local/cuda}/include

fail() { echo "check-libtorch2: $*" >&2; exit 2; }
command -v dpkg >/dev/null || fail "needs dpkg (Debian) to unpack the packages"
command -v curl >/dev/null || fail "needs curl (apt-get install curl)"
command -v xz >/dev/null || fail "needs xz (apt-get install xz-utils)"
[ "$cuda" = 0 ] || [ -f "$cuda_include/cuda_runtime_api.h" ] ||
  fail "no CUDA toolkit headers at $cuda_include (set CUDAToolkit_ROOT, or TB_TORCH2_CUDA=0)"

# --- the packages: the Filename Debian's index gives each, downloaded once ----------------------------------
tree=$cache/root
if [ ! -f "$cache/unpacked" ]; then
  mkdir -p "$cache/debs"
  for comp in main contrib; do
    curl -fsS --max-time 300 -o "$cache/Packages-$comp.xz" "$mirror/dists/trixie/$comp/binary-amd64/Packages.xz" ||
      fail "cannot read trixie's $comp index from $mirror (no network? set TB_DEBIAN_MIRROR)"
  done
  for pkg in libtorch-cuda-dev libgloo-dev libnccl-dev; do
    file=$(for comp in main contrib; do xz -dc "$cache/Packages-$comp.xz"; done |
           awk -v p="$pkg" '$1=="Package:" {hit = ($2 == p)} hit && !done && $1=="Filename:" {print $2; done = 1}')
    [ -n "$file" ] || fail "trixie's index has no package $pkg"
    echo "downloading $file"
    curl -fsS --max-time 900 -o "$cache/debs/$(basename "$file")" "$mirror/$file" || fail "cannot download $mirror/$file"
  done
  rm -rf "$tree" && mkdir -p "$tree"
  for deb in "$cache"/debs/*.deb; do dpkg -x "$deb" "$tree"; done
  touch "$cache/unpacked"
fi
inc=$tree/usr/include
[ -f "$inc/torch/csrc/api/include/torch/torch.h" ] || fail "no LibTorch headers under $inc (remove $cache and retry)"
version=$(awk '$2=="TORCH_VERSION_MAJOR" {M=$3} $2=="TORCH_VERSION_MINOR" {m=$3} $2=="TORCH_VERSION_PATCH" {p=$3}
               END {if (M != "") print M "." m "." p}' "$inc/torch/csrc/api/include/torch/version.h")

# --- the files: every engine source, and the engine tests that read LibTorch --------------------------------
if [ -n "${TB_TORCH2_FILES:-}" ]; then
  files=$TB_TORCH2_FILES
else
  files="$(find engine/src -name '*.cpp' | sort) $(grep -lE '#include <(torch|ATen|c10)/' tests/engine/*.cpp | sort)"
fi

# The flags of the engine's CMake target (engine/CMakeLists.txt) for a CUDA LibTorch with NCCL, in a gcc
# response file (one option per line; the quotes of the test's string macros escaped).
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
{
  printf '%s\n' -std=c++20 -fsyntax-only -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_C10D_GLOO -DUSE_DISTRIBUTED -DUSE_RPC \
    -DUSE_TENSORPIPE "-DTUNEBENCH_TORCH_CUDA=$cuda" "-DTUNEBENCH_NCCL=$cuda" \
    -Iengine/include -Iengine/src -Iprofiler/include -Imeasure/include -Iclient/include \
    -isystem "$inc" -isystem "$inc/torch/csrc/api/include"
  printf '%s\n' '-DTB_CLI_PATH=\"tunebench-cli\"' '-DTB_SOURCE_DIR=\".\"' '-DTB_TESTDATA_DIR=\"tests/testdata\"'
  [ "$cuda" = 0 ] || printf '%s\n' -isystem "$cuda_include"
  printf '%s\n' -include engine/src/engine_pch.h
} >"$logs/flags.rsp"
export logs cuda
check_one() {
  local f=$1 extra=()
  # As CMake sets it per file: NCCL's c10d header is read only by nccl_backend.cpp.
  [[ $f == */nccl_backend.cpp && $cuda != 0 ]] && extra+=(-DUSE_C10D_NCCL=1)
  if g++ "@$logs/flags.rsp" "${extra[@]}" "$f" >"$logs/$(echo "$f" | tr / _).log" 2>&1; then
    echo "OK   $f"
  else
    echo "FAIL $f"
  fi
}
export -f check_one
echo "LibTorch ${version:-?} headers from Debian trixie ($inc), TUNEBENCH_TORCH_CUDA=$cuda, $jobs jobs"
printf '%s\n' $files | xargs -P "$jobs" -I{} bash -c 'check_one "$@"' _ {} | tee "$logs/result"
result=$(cat "$logs/result")
if grep -q '^FAIL' <<<"$result"; then
  for log in "$logs"/*.log; do
    [ -s "$log" ] && grep -q 'error' "$log" && { echo "--- $(basename "$log" .log)"; grep -m 8 -E 'error|required from here' "$log"; }
  done
  echo "check-libtorch2: $(grep -c '^FAIL' <<<"$result") of $(wc -l <<<"$result") files do not compile against LibTorch ${version:-2.x}"
  exit 1
fi
echo "check-libtorch2: all $(wc -l <<<"$result") files compile against LibTorch ${version:-2.x} (syntax only)"
