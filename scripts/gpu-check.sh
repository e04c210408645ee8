#!/usr/bin/env bash
# Run ON THE GPU BOX (the device tool), from the repository root:  bash scripts/gpu-check.sh [OUTDIR]
# Builds the headless parts (profiler, engine, CLI, tests; no Qt) against the LibTorch inside the PyTorch
# wheel (DESIGN.md "Two LibTorch builds"), runs the tests, then the GPU scenarios of issue 6, and writes logs,
# run/analysis JSON and traces to OUTDIR (default $OUT). Everything the box lacks comes from .carry/debs
# (scripts/gpu-prepare.sh), unpacked into .carry/root; nothing is downloaded there.
# TB_GPU_STAGES="build test scenarios tune" selects stages; TB_GPU_STEPS sets steps per scenario.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-$PWD/gpu-out}}"; mkdir -p "$out"/logs "$out"/runs
stages="${TB_GPU_STAGES:-build test scenarios tune}"
steps="${TB_GPU_STEPS:-60}"
log() { echo "[gpu-check $(date +%T)] $*" | tee -a "$out/logs/summary.txt"; }

# Preflight: fail fast with a clear line instead of deep in CMake.
for t in cmake g++ python3 dpkg; do command -v "$t" >/dev/null || { log "missing tool on this box: $t"; exit 1; }; done
gen=Ninja; command -v ninja >/dev/null || gen="Unix Makefiles"
# find_package(Torch) of a CUDA wheel runs enable_language(CUDA): it needs a toolkit with nvcc.
[[ -x /usr/local/cuda/bin/nvcc ]] || { log "no CUDA toolkit (nvcc) at /usr/local/cuda: find_package(Torch) needs it"; exit 1; }
export PATH="/usr/local/cuda/bin:$PATH"
python3 -c 'import torch' 2>/dev/null || { log "python3 cannot import torch (the PyTorch wheel is the LibTorch we build against)"; exit 1; }

root="$PWD/.carry/root"
if [[ -d .carry/debs ]]; then
  mkdir -p "$root"; for d in .carry/debs/*.deb; do dpkg -x "$d" "$root"; done
  # Debian's dev symlinks are absolute (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13): aim them into the root.
  find "$root" -type l -lname '/*' | while read -r l; do
    t="$(readlink "$l")"; [[ -e "$root$t" ]] && ln -sfn "$root$t" "$l"
  done
fi
[[ -x "$root/usr/bin/pkgconf" ]] && export PKG_CONFIG="$root/usr/bin/pkgconf"
command -v pkg-config >/dev/null || [[ -n "${PKG_CONFIG:-}" ]] || { log "no pkg-config on this box and none carried"; exit 1; }
export PKG_CONFIG_PATH="$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig:${PKG_CONFIG_PATH:-}"
# Debian's .pc files carry absolute /usr paths (libturbojpeg.pc: libdir and includedir too).
for pc in "$root"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$root"/usr/share/pkgconfig/*.pc; do
  [[ -f "$pc" ]] && sed -i -E "s#^(prefix|exec_prefix|libdir|includedir|sharedlibdir)=/usr(/|\$)#\1=$root/usr\2#" "$pc"
done
torch_prefix="$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')"
py_site="$(python3 -c 'import torch,os;print(os.path.dirname(os.path.dirname(torch.__file__)))')"
# The wheel's cuDNN has only libcudnn.so.9; Caffe2Config's FindCUDNN needs the paths given, else configure stops.
cudnn_dir="$py_site/nvidia/cudnn"
cudnn_lib="$(ls "$cudnn_dir"/lib/libcudnn.so.[0-9]* 2>/dev/null | head -1)"
cudnn_args=()
if [[ -f "$cudnn_dir/include/cudnn.h" && -n "$cudnn_lib" ]]; then
  cudnn_args=(-DCUDNN_INCLUDE_PATH="$cudnn_dir/include" -DCUDNN_LIBRARY_PATH="$cudnn_lib")
else
  log "no cuDNN in $cudnn_dir; relying on a system cuDNN"
fi
# CUPTI headers: the toolkit's, else the wheel's.
cupti_inc=""
for d in /usr/local/cuda/extras/CUPTI/include /usr/local/cuda/include "$py_site/nvidia/cu13/include"; do
  [[ -f "$d/cupti.h" ]] && { cupti_inc="$d"; break; }
done
# The wheel's CUDA libraries first (the LibTorch was built against them), then the toolkit's.
export LD_LIBRARY_PATH="$py_site/nvidia/cu13/lib:$cudnn_dir/lib:$root/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
build=build-gpu
{
  log "host: $(hostname) $(nproc) cores"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  python3 -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  /usr/local/cuda/bin/nvcc --version | tail -2; cmake --version | head -1; echo "cupti headers: ${cupti_inc:-none}"
} > "$out/logs/env.txt" 2>&1

if [[ " $stages " == *" build "* ]]; then
  log "configure + build against $torch_prefix"
  cmake -S . -B $build -G "$gen" -DCMAKE_BUILD_TYPE=Release -DTUNEBENCH_GUI=OFF \
    -DTUNEBENCH_CUPTI="${cupti_inc:+ON}${cupti_inc:-AUTO}" ${cupti_inc:+-DTUNEBENCH_CUPTI_INCLUDE="$cupti_inc"} \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$root/usr;$root/usr/lib/x86_64-linux-gnu/cmake" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCUDAToolkit_ROOT=/usr/local/cuda -DCUDA_TOOLKIT_ROOT_DIR=/usr/local/cuda \
    "${cudnn_args[@]}" ${PKG_CONFIG:+-DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG"} \
    -DCMAKE_INCLUDE_PATH="$root/usr/include" -DCMAKE_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu" \
    > "$out/logs/configure.txt" 2>&1 || { log "configure FAILED"; tail -30 "$out/logs/configure.txt"; exit 1; }
  cmake --build $build -j "$(nproc)" > "$out/logs/build.txt" 2>&1 || { log "build FAILED"; grep -m20 -B2 -A6 'error' "$out/logs/build.txt"; exit 1; }
  log "build ok"
fi
cli="$build/app/tunebench-cli"

if [[ " $stages " == *" test "* ]]; then
  (cd $build && ctest --output-on-failure -j 8 --timeout 600) > "$out/logs/ctest.txt" 2>&1
  log "ctest rc=$? $(grep -E 'tests passed|tests failed' "$out/logs/ctest.txt")"
fi

data=/tmp/tb-imagenet-like
if [[ " $stages " == *" scenarios "* || " $stages " == *" tune "* ]]; then
  [[ -d $data ]] || $cli make-dataset --out $data --images 4096 --size 320x240 --classes 100 > "$out/logs/make-dataset.txt" 2>&1
fi
# run NAME MODEL DATA SETTINGS : one scenario with its trace analysed.
run() {
  local name=$1 model=$2 dat=$3 set=$4
  $cli run --model "$model" --data "$dat" ${set:+--set "$set"} --steps "$steps" \
    --trace "$out/runs/$name.trace.json" --json "$out/runs/$name.run.json" > "$out/logs/$name.txt" 2>&1
  local rc=$?
  $cli analyze "$out/runs/$name.trace.json" --json "$out/runs/$name.analysis.json" >> "$out/logs/$name.txt" 2>&1
  local thr; thr=$(python3 -c "import json;d=json.load(open('$out/runs/$name.run.json'));t=d['throughput'];print(round(t['samples_per_s'],1), t['noise']['verdict'])" 2>/dev/null)
  local stall; stall=$(python3 -c "
import json;a=json.load(open('$out/runs/$name.analysis.json'));w=a.get('window',{}).get('duration_us') or 1
print('stall %.1f%% gaps %.1f%% sync %d' % (100*a['loader_stall']['total_us']/w, 100*a['launch_gap']['total_us']/w, a['sync']['count']))" 2>/dev/null)
  log "$name rc=$rc samples/s=$thr $stall [$set]"
}
if [[ " $stages " == *" scenarios "* ]]; then
  img="imagefolder:$data"; base="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
  run s1_naive resnet50 "$img" "$base"
  for k in cudnn_benchmark=on amp=fp16 amp=bf16 tf32=on channels_last=on "pin_memory=on,non_blocking=on" \
           workers=8 prefetch=4 batch_size=64 zero_grad_none=on fused_optimizer=on sync_free_logging=on; do
    run "s2_${k//[=,]/_}" resnet50 "$img" "$base,$k"
  done
  run s2_cuda_graphs resnet50 synthetic "$base,cuda_graphs=on"
  run s2_synthetic_base resnet50 synthetic "$base"
  acc="$base"
  for k in cudnn_benchmark=on amp=fp16 "workers=8,prefetch=4,pin_memory=on,non_blocking=on" cuda_graphs=on; do
    acc="$acc,$k"; run "s3_${k%%[=,]*}" resnet50 "$img" "$acc"
  done
  run s4_collector_on resnet50 synthetic "$base,cudnn_benchmark=on,amp=fp16"
  TUNEBENCH_CUPTI_OFF=1 run s4_collector_off resnet50 synthetic "$base,cudnn_benchmark=on,amp=fp16"
  run s5_synthetic_best resnet50 synthetic "cudnn_benchmark=on,amp=bf16,channels_last=on,batch_size=32"
fi
if [[ " $stages " == *" tune "* ]]; then
  $cli tune --model resnet50 --data "imagefolder:$data" --budget "${TB_GPU_TUNE_BUDGET:-300}" \
    --report "$out/runs/tune-report.html" --json "$out/runs/tune.json" > "$out/logs/tune.txt" 2>&1
  log "tune rc=$? $(python3 -c "import json;print('speedup', json.load(open('$out/runs/tune.json'))['speedup'])" 2>/dev/null)"
fi
# The device tool brings back at most 8 files: pack the rest.
tar -C "$out" -czf "$out/gpu-results.tar.gz" logs runs 2>/dev/null && rm -rf "$out/runs"
log "done: $out/gpu-results.tar.gz"
