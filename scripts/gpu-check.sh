#!/usr/bin/env bash
# Run ON THE GPU BOX (the device tool), from the repository root, ONE STAGE PER CALL (each call <= 10 min):
#   TB_GPU_STAGES=build     bash scripts/gpu-check.sh     # configure + build (Release, no Qt, no benches): ~4-6 min
#   TB_GPU_STAGES=test      bash scripts/gpu-check.sh     # ctest (600 s overall cap)
#   TB_GPU_STAGES=scenarios bash scripts/gpu-check.sh     # the GPU scenarios, each run under `timeout`
#   TB_GPU_STAGES=tune      bash scripts/gpu-check.sh     # the auto-tuner on ResNet-50 (TB_GPU_TUNE_BUDGET, 300 s)
#   TB_GPU_STAGES=script    bash scripts/gpu-check.sh     # examples/train_folder.py unmodified on the box's torch:
#                                                         # one run per knob, a trace, a script tune (~8 min)
#   TB_GPU_STAGES=dist      bash scripts/gpu-check.sh     # data parallel on the GPU(s): Gloo, auto, NCCL (~4 min)
# Builds the headless parts against the LibTorch inside the box's PyTorch wheel: the recipe of every build
# (cmake/TuneBenchTorch.cmake), given the interpreter.
# A later call on a warm machine finds build-gpu/ still there; on a cold one, run `build` again first.
# Results land under $OUT as each stage finishes (the device tool returns at most 8 files): summary.txt
# (appended by every stage), env.txt, and one stage-<name>.tar.gz per stage (logs, run/analysis JSON, and the
# gzipped traces of three scenarios). Everything the box lacks comes from .carry/debs (scripts/gpu-prepare.sh),
# unpacked into .carry/root; nothing is downloaded there. TB_GPU_STEPS sets steps per scenario (60);
# TB_GPU_RUN_TIMEOUT caps one scenario run (240 s).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-$PWD/gpu-out}}"; mkdir -p "$out"
work="$PWD/gpu-work"; mkdir -p "$work"/logs "$work"/runs
stages="${TB_GPU_STAGES:-build}"
steps="${TB_GPU_STEPS:-60}"
run_timeout="${TB_GPU_RUN_TIMEOUT:-240}"
log() { echo "[gpu-check $(date +%T)] $*" | tee -a "$out/summary.txt"; }
# Packs what one stage wrote into $OUT/stage-NAME.tar.gz, so a later stage that is killed loses nothing.
pack() { tar -C "$work" -czf "$out/stage-$1.tar.gz" logs runs 2>/dev/null && rm -rf "$work"/logs/* "$work"/runs/*; }

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
# The box's own torch, through the same recipe as every other build (cmake/TuneBenchTorch.cmake): its CMake
# config, the wheel's cuDNN, CUPTI and NCCL headers, the toolkit's nvcc.
python="$(command -v python3)"
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
build="${TB_GPU_BUILD_DIR:-build-gpu}"  # another build dir only for a dry run off the GPU box
{
  log "host: $(hostname) $(nproc) cores"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  python3 -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  /usr/local/cuda/bin/nvcc --version | tail -2; cmake --version | head -1
} > "$out/env.txt" 2>&1

configure() {
  cmake -S . -B $build -G "$gen" -DCMAKE_BUILD_TYPE=Release -DTUNEBENCH_GUI=OFF -DTUNEBENCH_BENCH=OFF \
    -DTUNEBENCH_PYTHON="$python" -DTUNEBENCH_CUPTI=ON \
    -DCMAKE_PREFIX_PATH="$root/usr;$root/usr/lib/x86_64-linux-gnu/cmake" ${PKG_CONFIG:+-DPKG_CONFIG_EXECUTABLE="$PKG_CONFIG"} \
    -DCMAKE_INCLUDE_PATH="$root/usr/include" -DCMAKE_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu" \
    "$@" >> "$work/logs/configure.txt" 2>&1 \
    || { log "configure FAILED"; tail -30 "$work/logs/configure.txt"; pack build; exit 1; }
  log "$(grep -m1 'TuneBench: GUI' "$work/logs/configure.txt")"
}
compile() { timeout "${TB_GPU_BUILD_TIMEOUT:-540}" cmake --build $build -j "$(nproc)" > "$work/logs/build.txt" 2>&1; }
if [[ " $stages " == *" build "* ]]; then
  log "configure + build against the torch of $python"
  configure
  if ! compile; then
    # NCCL's file is the one written without a 2.x LibTorch to compile it against: a failure there must not
    # cost the GPU session its measurements. Build without NCCL and say so.
    if grep -q 'nccl_backend.cpp.*error' "$work/logs/build.txt"; then
      cp "$work/logs/build.txt" "$work/logs/build-nccl-failed.txt"
      log "!!! dist/nccl_backend.cpp did not compile against this LibTorch (logs/build-nccl-failed.txt): building without NCCL"
      grep -m10 -A4 'nccl_backend.cpp.*error' "$work/logs/build-nccl-failed.txt"
      configure -DTUNEBENCH_NCCL=OFF
      compile || { log "build FAILED without NCCL too"; grep -m20 -B2 -A6 'error' "$work/logs/build.txt"; pack build; exit 1; }
    else
      log "build FAILED (or over ${TB_GPU_BUILD_TIMEOUT:-540} s)"; grep -m20 -B2 -A6 'error' "$work/logs/build.txt"; pack build; exit 1
    fi
  fi
  log "build ok"
  pack build
fi
cli="$build/app/tunebench-cli"

[[ " $stages " == *" build "* || -x "$cli" ]] || { log "no $cli: run the build stage first (the machine went cold?)"; exit 1; }

if [[ " $stages " == *" test "* ]]; then
  (cd $build && timeout 540 ctest --output-on-failure -j 8 --timeout 300) > "$work/logs/ctest.txt" 2>&1
  log "ctest rc=$? $(grep -E 'tests passed|tests failed' "$work/logs/ctest.txt")"
  grep -E '^\s+[0-9]+ - ' "$work/logs/ctest.txt" | head -20 | while read -r l; do log "  failed: $l"; done
  pack test
fi

data=/tmp/tb-imagenet-like
if [[ " $stages " == *" scenarios "* || " $stages " == *" tune "* ]]; then
  [[ -d $data ]] || timeout 300 $cli make-dataset --out $data --images 4096 --size 320x240 --classes 100 \
    > "$work/logs/make-dataset.txt" 2>&1
fi
# Traces kept (gzipped) for these scenarios; the others are analysed and deleted (tens of MB each).
keep_traces=" s1_naive s3_cuda_graphs s5_synthetic_best "
# run NAME MODEL DATA SETTINGS : one scenario, capped by `timeout`, its trace analysed, one summary line.
run() {
  local name=$1 model=$2 dat=$3 set=$4
  timeout "$run_timeout" $cli run --model "$model" --data "$dat" ${set:+--set "$set"} --steps "$steps" \
    --trace "$work/runs/$name.trace.json" --json "$work/runs/$name.run.json" > "$work/logs/$name.txt" 2>&1
  local rc=$?
  [[ $rc -eq 124 ]] && log "$name TIMED OUT after $run_timeout s"
  timeout 120 $cli analyze "$work/runs/$name.trace.json" --json "$work/runs/$name.analysis.json" >> "$work/logs/$name.txt" 2>&1
  local thr; thr=$(python3 -c "import json;d=json.load(open('$work/runs/$name.run.json'));t=d['throughput'];print(round(t['samples_per_s'],1), t['noise']['verdict'])" 2>/dev/null)
  local stall; stall=$(python3 -c "
import json;a=json.load(open('$work/runs/$name.analysis.json'));w=a.get('window',{}).get('duration_us') or 1
t=a.get('trace',{})
print('stall %.1f%% gaps %.1f%% sync %d kernels %d collector %s' % (100*a['loader_stall']['total_us']/w,
  100*a['launch_gap']['total_us']/w, a['sync']['count'], a['kernels']['count'], t.get('collector_state','?')))" 2>/dev/null)
  log "$name rc=$rc samples/s=$thr $stall [$set]"
  # CUPTI must be on for a traced CUDA run; say so loudly instead of measuring CPU-only timelines.
  if [[ "$stall" == *"collector off"* || "$stall" == *"collector not built"* ]] && [[ "${TUNEBENCH_CUPTI_OFF:-}" != 1 ]]; then
    log "!!! $name: the GPU collector did not start: $(grep -m1 -i 'collector\|cupti' "$work/logs/$name.txt")"
  fi
  if [[ "$keep_traces" == *" $name "* ]]; then gzip -f "$work/runs/$name.trace.json"; else rm -f "$work/runs/$name.trace.json"; fi
}
if [[ " $stages " == *" scenarios "* ]]; then
  img="imagefolder:$data"; base="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
  run s1_naive resnet50 "$img" "$base"
  for k in cudnn_benchmark=on amp=fp16 amp=bf16 tf32=on channels_last=on "pin_memory=on,non_blocking=on" \
           workers=8 prefetch=4 batch_size=64 zero_grad_none=on fused_optimizer=on sync_free_logging=20 \
           cpu_allocator=glibc_tuned; do
    run "s2_${k//[=,]/_}" resnet50 "$img" "$base,$k"
  done
  run s2_cuda_graphs resnet50 synthetic "$base,cuda_graphs=on"
  run s2_synthetic_base resnet50 synthetic "$base"
  # Seed 003's sequence, cumulative. bf16, not fp16: fp16's host-side loss scaling keeps CUDA graphs off.
  acc="$base"
  for k in cudnn_benchmark=on amp=bf16 "workers=8,prefetch=4,pin_memory=on,non_blocking=on" cuda_graphs=on; do
    acc="$acc,$k"; run "s3_${k%%[=,]*}" resnet50 "$img" "$acc"
  done
  run s4_collector_on resnet50 synthetic "$base,cudnn_benchmark=on,amp=fp16"
  TUNEBENCH_CUPTI_OFF=1 run s4_collector_off resnet50 synthetic "$base,cudnn_benchmark=on,amp=fp16"
  run s5_synthetic_best resnet50 synthetic "cudnn_benchmark=on,amp=bf16,channels_last=on,batch_size=32"
  pack scenarios
fi
if [[ " $stages " == *" tune "* ]]; then
  timeout 560 $cli tune --model resnet50 --data "imagefolder:$data" --budget "${TB_GPU_TUNE_BUDGET:-300}" \
    --report "$work/runs/tune-report.html" --json "$work/runs/tune.json" > "$work/logs/tune.txt" 2>&1
  log "tune rc=$? $(python3 -c "import json;j=json.load(open('$work/runs/tune.json'));print('speedup', j['speedup'], j['speedup_ci'], j['noise']['text'])" 2>/dev/null)"
  pack tune
fi
# The user's-script path on the box's own torch (a pip/conda 2.x with CUDA): the example script
# unmodified, one run per knob, traced once; then a short script tune.
if [[ " $stages " == *" script "* ]]; then
  if python3 -c 'import PIL, numpy' 2>/dev/null; then
    sdata=/tmp/tb-script-data
    [[ -d $sdata ]] || timeout 300 $cli make-dataset --out $sdata --images 1024 --size 640x480 --classes 10 \
      > "$work/logs/script-dataset.txt" 2>&1
    srun() {
      local name=$1 set=$2; shift 2
      timeout "$run_timeout" $cli run --script examples/train_folder.py ${set:+--set "$set"} --measured-steps 60 \
        --json "$work/runs/$name.run.json" "$@" -- --data $sdata --epochs 1000 > "$work/logs/$name.txt" 2>&1
      local rc=$?
      log "$name rc=$rc $(tail -1 "$work/logs/$name.txt") [$set]"
    }
    srun sc_naive "" --trace "$work/runs/sc_naive.trace.json"
    timeout 120 $cli analyze "$work/runs/sc_naive.trace.json" > "$work/logs/sc_naive.analysis.txt" 2>&1
    log "sc_naive analysis: $(grep -m3 -E 'GPU|waiting|kernels' "$work/logs/sc_naive.analysis.txt" | tr '\n' ' ')"
    gzip -f "$work/runs/sc_naive.trace.json"
    for k in amp=bf16 amp=fp16 "cudnn_benchmark=on,tf32=on" channels_last=on pin_memory=on \
             "workers=8,persistent_workers=on" "workers=8,persistent_workers=on,cpu_allocator=glibc_tuned" compile=on; do
      srun "sc_${k//[=,]/_}" "$k"
    done
    timeout 400 $cli tune --script examples/train_folder.py --budget "${TB_GPU_SCRIPT_TUNE_BUDGET:-240}" \
      --report "$work/runs/script-tune.html" --json "$work/runs/script-tune.json" -- --data $sdata --epochs 1000 \
      > "$work/logs/script-tune.txt" 2>&1
    log "script tune rc=$? $(grep -m1 -E '^speedup|^no change' "$work/logs/script-tune.txt")"
  else
    log "script stage skipped: this python3 lacks PIL or numpy (the example script decodes with PIL)"
  fi
  pack script
fi
# Data parallel on the box's GPU(s), resnet18 on synthetic data, two ranks each: Gloo with the ranks
# sharing the GPU(s); the automatic choice (NCCL with a GPU per rank, else Gloo and a warning that says why);
# NCCL asked for (with one GPU: the one-line refusal; with two or more: a traced NCCL run whose all-reduce
# kernels the analysis counts as communication). The one-rank NCCL group runs in the test stage.
if [[ " $stages " == *" dist "* ]]; then
  drun() {
    local name=$1 backend=$2
    TUNEBENCH_DIST_BACKEND=$backend timeout "$run_timeout" $cli run --model resnet18 --data synthetic --device cuda \
      --ranks 2 --steps "$steps" --set batch_size=64 --json "$work/runs/$name.run.json" \
      --trace "$work/runs/$name.trace.json" > "$work/logs/$name.txt" 2>&1
    local rc=$?
    log "$name rc=$rc $(python3 -c "
import json;j=json.load(open('$work/runs/$name.run.json'));r=j.get('ranks',[])
print('world', j.get('world_size'), 'backends', [x.get('distributed',{}).get('backend') for x in r],
  'same weights', len({x.get('parameter_digest') for x in r})==1, 'samples/s', round(j.get('throughput',{}).get('samples_per_s',0),1),
  'warnings', j.get('warnings',[])[:2], 'error', j.get('error'))" 2>/dev/null || grep -m1 'error' "$work/logs/$name.txt")"
    if [[ $rc -eq 0 ]]; then
      timeout 120 $cli analyze "$work/runs/$name.trace.json" > "$work/logs/$name.analysis.txt" 2>&1
      log "$name analysis: $(grep -m4 -iE 'communication|comm wait|ranks|GPU' "$work/logs/$name.analysis.txt" | tr '\n' ' ')"
      gzip -f "$work/runs/$name.trace.json"
    fi
  }
  log "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l); NCCL in this build: $(grep -q 'TUNEBENCH_NCCL=1' $build/build.ninja $build/engine/CMakeFiles/*/flags.make 2>/dev/null && echo yes || echo no)"
  drun d1_gloo gloo
  drun d2_auto auto
  drun d3_nccl nccl
  pack dist
fi
log "done: stages [$stages] -> $out"
