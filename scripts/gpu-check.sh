#!/usr/bin/env bash
# Run ON THE GPU BOX (the device tool), from the repository root, with `carry: [".carry"]` (scripts/gpu-prepare.sh
# fills it here first). Stages, run in this order whatever order TB_GPU_STAGES names them in:
#   build      use the binaries carried in .carry/bin when the box's torch is the version they link and every
#              library resolves; else configure + build there (Release, no Qt, no benches): minutes
#   links      the collector's default against the activity kinds of before, on one job: every kernel linked to
#              its launch, none twice, graph launches, launch gaps and syncs (bench/check_cupti_links.py)
#   graphs     CUDA graphs: a tiny script capturing once and replaying, and capturing again every step, each traced
#              by torch.profiler (Kineto's graph ids); the engine's captured step (our collector's); the cuda_graphs
#              pass's output for each (bench/gpu_cuda_graph_script.py)
#   test       the GPU-capable tests (carried binaries: the GPU-named ones; a build there: ctest)
#   memory     a script's per-step device peak against its own torch.cuda.max_memory_allocated(); a script's and
#              the engine's out-of-memory, explained
#   profile    the figures the GPU simulation extrapolates: the hand sequence with channels_last, at batch 32,
#              64 and 128, with 8 and 16 loader workers, and on synthetic data
#   scenarios  ResNet-50 scenarios, in priority order: the collector's cost per CUPTI activity kind, the naive
#              baseline (trace kept), synthetic best, CUDA graphs
#   sequence   the classic hand sequence (cudnn autotune, fp16, prefetching loader, CUDA graphs), cumulative (a trace per stage)
#   script     examples/train_folder.py unmodified on the box's torch: a traced naive run, knobs, compile
#   boundary   a script's trace chunk boundary on CUDA, saved in place and in a forked child (also in `script`)
#   knobs      each knob alone from the naive baseline, one traced run each
#   collector  what recording costs, in one process: windows with the recording off and on alternating, per
#              set of CUPTI activity kinds (bench/bench_engine_collector.cpp), with the ratio's interval
#   tune       the auto-tuner on ResNet-50 from naive defaults, beside the naive run and the hand sequence
#   scripttune a public-ImageNet-shaped script (bench/gpu_imagenet_script.py) tuned, its patch checked plainly
#   ab         each knob alone against the naive baseline, alternated in one process, with its interval
#   reach      what the tuner's process-knob rule assumes: fresh processes of the hand sequence, cudnn_benchmark
#              off and on alternated (TB_GPU_REACH_PAIRS, 4): a fresh pair's spread, cuDNN's autotuner with its
#              interval, and what its search adds to a process's start
#   dist       data parallel on the GPU(s): Gloo, auto, NCCL
# TB_GPU_DEADLINE (seconds from the start, default 540) bounds the whole call: a step that would not finish
# before it is skipped and says so, so one device call of at most 10 minutes always packs what it measured.
# Results land under $OUT as each part finishes (the device tool returns at most 8 files, 16 MB each):
# summary.txt (the environment, then one line per result) and one part-<name>.tar.gz per part (logs, run/analysis JSON,
# gzipped traces). TB_GPU_STEPS sets steps per scenario (60); TB_GPU_RUN_TIMEOUT caps one run (120 s).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-$PWD/gpu-out}}"; mkdir -p "$out"
work="$PWD/gpu-work"; mkdir -p "$work"/logs "$work"/runs
stages="${TB_GPU_STAGES:-build}"
steps="${TB_GPU_STEPS:-60}"
run_timeout="${TB_GPU_RUN_TIMEOUT:-120}"
model="${TB_GPU_MODEL:-resnet50}"  # another model only for a dry run off the GPU box
t_start=$(date +%s); deadline=$((t_start + ${TB_GPU_DEADLINE:-540}))
left() { echo $((deadline - $(date +%s))); }
# cap N: N, or less when the deadline is nearer (0 when nothing useful fits)
cap() { local l; l=$(( $(left) - 5 )); (( l < ${2:-20} )) && { echo 0; return; }; (( l < $1 )) && echo "$l" || echo "$1"; }
export PYTHONUNBUFFERED=1
log() { echo "[gpu-check $(date +%T)] $*" | tee -a "$out/summary.txt"; }
# Packs what one part wrote into $OUT/part-NAME.tar.gz, so a later part that is killed loses nothing. The tool
# returns files of at most 16 MB: over 15, the largest traces go (their analyses stay).
pack() {
  local f="$out/part-$1.tar.gz"
  tar -C "$work" -czf "$f" logs runs 2>/dev/null
  while (( $(stat -c %s "$f") > 15000000 )); do
    local big; big=$(ls -S "$work"/runs/*.trace.json.gz 2>/dev/null | head -1)
    [[ -n $big ]] || break
    log "part $1 over 15 MB: dropping $(basename "$big") ($(stat -c %s "$big") bytes)"; rm -f "$big"
    tar -C "$work" -czf "$f" logs runs 2>/dev/null
  done
  rm -rf "$work"/logs/* "$work"/runs/*
}

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
  echo "host: $(hostname) $(nproc) cores"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  python3 -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())'
  /usr/local/cuda/bin/nvcc --version | tail -2; cmake --version | head -1
} >> "$out/summary.txt" 2>&1

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
has() { [[ " $stages " == *" $1 "* ]]; }
# The binaries carried from the dev machine (gpu-prepare.sh): usable when the box's torch is the version they
# link, every library resolves (the wheel's own lib folders, then the carried Debian ones) and they start.
carried_ok() {
  [[ -x .carry/bin/tunebench-engine && -x .carry/bin/tunebench-cli ]] || return 1
  local want have tdir libs missing
  want=$(cat .carry/bin/torch-version); have=$(python3 -c 'import torch; print(torch.__version__)')
  [[ $want == "$have" ]] || { log "carried binaries link torch $want, this box has $have: building here"; return 1; }
  tdir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  libs="$tdir/lib"; for d in "$(dirname "$tdir")"/nvidia/*/lib "$(dirname "$tdir")"/nvidia/*/*/lib; do [[ -d $d ]] && libs="$libs:$d"; done
  export LD_LIBRARY_PATH="$libs:$LD_LIBRARY_PATH"
  missing=$(ldd .carry/bin/tunebench-engine .carry/bin/tunebench-cli | grep 'not found' | sort -u | tr '\n' ' ')
  [[ -z $missing ]] || { log "carried binaries miss libraries here: $missing: building here"; return 1; }
  .carry/bin/tunebench-cli --version >/dev/null 2>&1 || { log "carried tunebench-cli does not start: building here"; return 1; }
  # Tests and the engine find fixtures and their Python package through the source path they were built in.
  local src; src=$(cat .carry/bin/source-dir)
  if [[ ! -e $src ]]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
  [[ $(cd "$src" && pwd -P) == "$(pwd -P)" ]] || { log "source path $src is another folder here: building here"; return 1; }
  export TUNEBENCH_PYTHON_DIR="$PWD/python" TUNEBENCH_CLI="$PWD/build/app/tunebench-cli"
  # They sit where they were built (build/ under the source path), which the tests also name.
  build=build
  if [[ ! -e build/CMakeCache.txt ]]; then  # (a dev checkout's own build stays as it is)
    mkdir -p build/app build/tests/engine build/tests/profiler
    cp .carry/bin/tunebench-cli .carry/bin/tunebench-engine build/app/
    cp .carry/bin/tunebench_torch_tests .carry/bin/tunebench_engine_tests build/tests/engine/ 2>/dev/null
    cp .carry/bin/tunebench_profiler_tests build/tests/profiler/ 2>/dev/null
    mkdir -p build/bench && cp .carry/bin/bench_engine_collector build/bench/ 2>/dev/null
  fi
  log "carried binaries of commit $(cut -c1-10 .carry/bin/commit) run here against torch $have"
}
carried=""
if has build; then
  if carried_ok; then carried=1
  else
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
  log "build ok ($(( $(date +%s) - t_start )) s)"
  pack build
  fi
fi
cli="$build/app/tunebench-cli"
[[ -x "$cli" ]] || { log "no $cli: run the build stage first (the machine went cold?)"; exit 1; }

# The datasets are made on the CPU while the tests use the GPU; nothing is measured before both are done.
data=/tmp/tb-imagenet-like sdata=/tmp/tb-script-data
if has scenarios || has sequence || has knobs || has tune || has ab || has reach || has profile || has scripttune; then
  [[ -d $data ]] || { timeout 300 $cli make-dataset --out $data --images 2048 --size 320x240 --classes 100 \
    > "$work/logs/make-dataset.txt" 2>&1 & }
fi
if has script; then
  [[ -d $sdata ]] || { timeout 300 $cli make-dataset --out $sdata --images 512 --size 640x480 --classes 10 \
    > "$work/logs/script-dataset.txt" 2>&1 & }
fi

# Whether the collector's default (kernels, copies, memsets; launches and syncs from CUPTI's callback API) links
# every kernel to its launch as the activity kinds of before did: the same job traced with each, then every
# kernel's correlation looked up among the host calls (bench/check_cupti_links.py), and the analysis's launch
# gaps and syncs side by side. CUDA graphs with the default: the graph launches and the kernels they ran.
if has links; then
  lset="workers=0,pin_memory=off,amp=bf16,cudnn_benchmark=on,batch_size=32"
  lrun() {
    local name=$1 kinds=$2 set=$3 t; t=$(cap 90 40)
    (( t > 0 )) || { log "$name skipped: $(left) s left"; return; }
    TUNEBENCH_CUPTI_KINDS=$kinds timeout "$t" $cli run --model "$model" --data synthetic --set "$set" \
      --steps "${TB_GPU_LINK_STEPS:-20}" --trace "$work/runs/$name.trace.json" --json "$work/runs/$name.run.json" \
      > "$work/logs/$name.txt" 2>&1
    local rc=$?
    timeout 60 $cli analyze "$work/runs/$name.trace.json" --json "$work/runs/$name.analysis.json" > "$work/logs/$name.analysis.txt" 2>&1
    log "$name [$kinds] rc=$rc $(timeout 120 "$python" bench/check_cupti_links.py "$work/runs/$name.trace.json" 2>&1 | cut -c1-400)"
    log "  $name analysis: $("$python" -c "
import json;a=json.load(open('$work/runs/$name.analysis.json'));j=json.load(open('$work/runs/$name.run.json'))
w=a['window']['duration_us'] or 1;i=a['idle']
print('samples/s %.1f launches %d launch_gap %.1f%% (%.0f us) sync %.1f%% syncs %d busy %.1f%% median launch %.2f us collector %s' % (
  j['throughput']['samples_per_s'], a['gpu']['launches'], 100*i['launch_gap_us']/w, i['launch_gap_us'], 100*i['sync_us']/w,
  a['sync']['count'], 100*a['gpu']['busy_share'], a['launches']['median_call_us'], a.get('trace',{}).get('collector_state','?')))" 2>&1 | tail -1 | cut -c1-300)"
    gzip -f "$work/runs/$name.trace.json" 2>/dev/null
  }
  lrun l1_default default "$lset"
  lrun l2_all all "$lset"
  lrun l3_default_graphs default "$lset,cuda_graphs=on"
  pack links
fi
# CUDA graphs: the cuda_graphs pass on real graphs. A script's own torch.profiler trace (Kineto writes "graph id" /
# "graph node id" when it records them) captured once, then captured again each step (the recapture finding and
# the two speeds); the engine's captured step through our collector (its graphId/graphNodeId). Each prints the
# pass's section of `analyze`, its finding lines and the JSON's figures.
if has graphs; then
  graphs_report() {  # NAME TRACE
    local name=$1 trace=$2
    timeout 60 $cli analyze "$trace" --json "$work/runs/$name.analysis.json" > "$work/logs/$name.analysis.txt" 2>&1
    log "  $name analyze rc=$?"
    awk '/^CUDA graphs over/{on=1} on&&/^$/{on=0} on' "$work/logs/$name.analysis.txt" | head -20 | while IFS= read -r l; do log "  | $l"; done
    grep -E 'captured again|without graph ids|launch_gap|GPU idle waiting' "$work/logs/$name.analysis.txt" | head -4 | cut -c1-400 | while IFS= read -r l; do log "  > $l"; done
    log "  $name json: $("$python" -c "
import json;a=json.load(open('$work/runs/$name.analysis.json'));c=a.get('cuda_graphs') or {}
g=c.get('graphs',[]);k=c.get('capture',{})
print('graphs', len(g), 'node_ids', c.get('node_ids'), 'replays', sum(x['replays'] for x in g),
  'kernels/replay', [x['kernels_per_replay'] for x in g][:4], 'nodes', [len(x['nodes']) for x in g][:4],
  'captures', k.get('captures'), 'instantiations', k.get('instantiations'), 'steps_with', k.get('steps_with'),
  'host_us/step', k.get('host_us_per_step'), 'launch_gap_us', a['launch_gap']['total_us'],
  'findings', [f['kind'] for f in a['findings']])" 2>&1 | tail -1 | cut -c1-500)"
  }
  for mode in once recapture; do
    t=$(cap 90 30); name="g_$mode"
    (( t > 0 )) || { log "$name skipped: $(left) s left"; continue; }
    timeout "$t" "$python" bench/gpu_cuda_graph_script.py --mode $mode --steps "${TB_GPU_GRAPH_STEPS:-30}" \
      --trace "$work/runs/$name.trace.json" > "$work/logs/$name.txt" 2>&1
    log "$name rc=$? $(grep -E 'samples/s|Error|error' "$work/logs/$name.txt" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    [[ -f $work/runs/$name.trace.json ]] && graphs_report "$name" "$work/runs/$name.trace.json"
    gzip -f "$work/runs/$name.trace.json" 2>/dev/null
  done
  t=$(cap 120 40)
  if (( t > 0 )); then
    timeout "$t" $cli run --model "$model" --data synthetic --set "cuda_graphs=on,batch_size=32,workers=0" --steps 20 \
      --trace "$work/runs/g_engine.trace.json" --json "$work/runs/g_engine.run.json" > "$work/logs/g_engine.txt" 2>&1
    log "g_engine rc=$?"
    [[ -f $work/runs/g_engine.trace.json ]] && graphs_report g_engine "$work/runs/g_engine.trace.json"
    gzip -f "$work/runs/g_engine.trace.json" 2>/dev/null
  else
    log "g_engine skipped: $(left) s left"
  fi
  pack graphs
fi
if has test; then
  if [[ -n $carried ]]; then
    gpu_tests='DistGroup.*Nccl*:DistBackend.*:C10dCompat.*:Knobs.*:DataSynthetic.*:*Cuda*:*Gpu*:*Cupti*:*CudaGraph*:*Amp*'
    t=$(cap ${TB_GPU_TEST_CAP:-150}); for b in engine/torch engine/engine profiler/profiler; do
      exe="$build/tests/${b%/*}/tunebench_${b#*/}_tests"; b="${b#*/}"
      timeout "$t" "$exe" --gtest_filter="$gpu_tests" > "$work/logs/gtest-$b.txt" 2>&1
      log "gtest $b rc=$? $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' "$work/logs/gtest-$b.txt" | tr '\n' ' ')"
      grep -E '^\[  FAILED  \] [A-Za-z]' "$work/logs/gtest-$b.txt" | head -10 | while read -r l; do log "  $l"; done
      grep -E '^\[  SKIPPED \] [A-Za-z]' "$work/logs/gtest-$b.txt" | head -10 | while read -r l; do log "  $l"; done
    done
  else
    (cd $build && timeout "$(cap 300)" ctest --output-on-failure -j 8 --timeout 200) > "$work/logs/ctest.txt" 2>&1
    log "ctest rc=$? $(grep -E 'tests passed|tests failed' "$work/logs/ctest.txt")"
    grep -E '^\s+[0-9]+ - ' "$work/logs/ctest.txt" | head -20 | while read -r l; do log "  failed: $l"; done
  fi
  pack test
fi
wait  # the datasets
for d in $data $sdata; do [[ -d $d ]] && log "dataset $d: $(find $d -name '*.jpg' | wc -l) images"; done

# run NAME MODEL DATA SETTINGS : one scenario, capped by `timeout` and the deadline, its trace analysed, one
# summary line. Traces are kept (gzipped) for the names in $keep_traces, else analysed and deleted.
keep_traces=" s1_naive s3_cudnn_benchmark s3_amp s3_workers s3_cuda_graphs s5_synthetic_best "
run() {
  local name=$1 model=$2 dat=$3 set=$4 t; t=$(cap "$run_timeout" 40)
  (( t > 0 )) || { log "$name skipped: $(left) s left"; return; }
  timeout "$t" $cli run --model "$model" --data "$dat" ${set:+--set "$set"} --steps "$steps" \
    --trace "$work/runs/$name.trace.json" --json "$work/runs/$name.run.json" > "$work/logs/$name.txt" 2>&1
  local rc=$?
  [[ $rc -eq 124 ]] && log "$name TIMED OUT after $t s"
  timeout 60 $cli analyze "$work/runs/$name.trace.json" --json "$work/runs/$name.analysis.json" > "$work/logs/$name.analysis.txt" 2>&1
  local thr; thr=$(python3 -c "import json;d=json.load(open('$work/runs/$name.run.json'));t=d['throughput'];print(round(t['samples_per_s'],1), t['noise']['verdict'])" 2>/dev/null)
  local stall; stall=$(python3 -c "
import json;a=json.load(open('$work/runs/$name.analysis.json'));w=a.get('window',{}).get('duration_us') or 1
t=a.get('trace',{})
print('stall %.1f%% gaps %.1f%% sync %d kernels %d collector %s' % (100*a['loader_stall']['total_us']/w,
  100*a['launch_gap']['total_us']/w, a['sync']['count'], a['kernels']['count'], t.get('collector_state','?')))" 2>/dev/null)
  local top; top=$(grep -m1 -E '^ +1\. ' "$work/logs/$name.analysis.txt" | sed 's/^ *//' | cut -c1-200)
  log "$name rc=$rc samples/s=$thr $stall [$set] :: $top"
  [[ $rc -ne 0 ]] && log "  $name: $(grep -m2 -iE 'error|what\(\)|terminate' "$work/logs/$name.txt" | tr '\n' ' ' | cut -c1-300)"
  # CUPTI must be on for a traced CUDA run; say so loudly instead of measuring CPU-only timelines.
  if [[ "$stall" == *"collector off"* || "$stall" == *"collector not built"* ]] && [[ "${TUNEBENCH_CUPTI_OFF:-}" != 1 ]]; then
    log "!!! $name: the GPU collector did not start: $(grep -m1 -i 'collector\|cupti' "$work/logs/$name.txt")"
  fi
  if [[ "$keep_traces" == *" $name "* && -f $work/runs/$name.trace.json ]]; then gzip -f "$work/runs/$name.trace.json"; else rm -f "$work/runs/$name.trace.json"; fi
}
# Memory: the launcher's per-step device peak against the script's own torch.cuda.max_memory_allocated() in
# the same process; a script and the engine each asked for a batch the device cannot hold.
if has memory; then
  t=$(cap 90 30)
  if (( t > 0 )); then
    timeout "$t" $cli run --script bench/gpu_memory_script.py --json "$work/runs/m1_script.run.json" -- --batch 128 --steps 40 \
      > "$work/logs/m1_script.txt" 2>&1
    log "m1 script memory rc=$? $("$python" -c "
import json,re;j=json.load(open('$work/runs/m1_script.run.json'));m=j.get('memory') or {}
s=[int(x) for x in re.findall(r'script_peak_bytes (\d+)', open('$work/logs/m1_script.txt').read())]
p=m.get('device_step_peak',-1)
print('launcher device_step_peak', p, 'at step', m.get('device_step_peak_at'), 'allocated', m.get('device_allocated_peak'),
  'reserved', m.get('device_reserved_peak'), 'total', m.get('device_total'), '| script max_memory_allocated', s,
  '| ratio %.4f' % (p / s[-1]) if s and s[-1] else '')" 2>&1 | tail -1 | cut -c1-400)"
  fi
  t=$(cap 90 30)
  if (( t > 0 )); then
    timeout "$t" $cli run --script bench/gpu_memory_script.py --json "$work/runs/m2_script_oom.run.json" -- --batch 8192 --steps 5 \
      > "$work/logs/m2_script_oom.txt" 2>&1
    log "m2 script OOM rc=$? $(grep -m2 -iE 'out of memory|error' "$work/logs/m2_script_oom.txt" | tr '\n' ' ' | cut -c1-400)"
  fi
  t=$(cap 90 30)
  if (( t > 0 )); then
    timeout "$t" $cli run --model "$model" --data synthetic --set batch_size=4096 --steps 3 \
      --json "$work/runs/m3_engine_oom.run.json" > "$work/logs/m3_engine_oom.txt" 2>&1
    log "m3 engine OOM rc=$? $(grep -m2 -iE 'out of memory|error' "$work/logs/m3_engine_oom.txt" | tr '\n' ' ' | cut -c1-400)"
  fi
  pack memory
fi
# A script's chunk boundary on CUDA, each way of saving (the fork of a CUDA process included): the pause, the
# next step's excess, and whether a forked save of a CUDA process hangs or fails (bench/bench_trace_boundary.py).
if has boundary || has script; then
  t=$(cap 200 60)
  if (( t > 0 )); then
    timeout "$t" "$python" bench/bench_trace_boundary.py --steps "${TB_GPU_BOUNDARY_STEPS:-60}" --every 20 --rounds 1 \
      > "$work/logs/trace_boundary.txt" 2>&1
    log "trace boundary: rc=$? $(grep -E 'FORK=|\.py:' "$work/logs/trace_boundary.txt" | tr '\n' ' ' | cut -c1-700)"
    grep -iE 'error|hang|timed out|Traceback' "$work/logs/trace_boundary.txt" | head -5 | while read -r l; do log "  $l"; done
  else
    log "trace boundary skipped: $(left) s left"
  fi
  has script || pack boundary
fi
# The figures the GPU simulation extrapolates (engine/src/tuner/workloads/sim_gpu.cpp): the hand sequence on the
# JPEG folder with and without channels_last, at batch 32 and 128; the loader's ceiling at 8 and 16 workers
# (batch 128, where the GPU is fastest); the same on synthetic data (the GPU's bound). Untraced single runs.
hand="workers=8,prefetch=4,pin_memory=on,non_blocking=on,cudnn_benchmark=on,amp=bf16,cuda_graphs=on"
naive="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
# prun NAME DATA SETTINGS: one untraced run, its samples/s in one line.
prun() {
  local name=$1 dat=$2 set=$3 t; t=$(cap "$run_timeout" 40)
  (( t > 0 )) || { log "$name skipped: $(left) s left"; return; }
  timeout "$t" $cli run --model "$model" --data "$dat" --set "$set" --steps "$steps" \
    --json "$work/runs/$name.run.json" > "$work/logs/$name.txt" 2>&1
  local rc=$?
  log "$name rc=$rc samples/s=$("$python" -c "import json;d=json.load(open('$work/runs/$name.run.json'));t=d['throughput'];print(round(t['samples_per_s'],1), t['noise']['verdict'])" 2>/dev/null) [$set]"
  [[ $rc -ne 0 ]] && log "  $name: $(grep -m2 -iE 'error|what\(\)' "$work/logs/$name.txt" | tr '\n' ' ' | cut -c1-300)"
}
if has profile; then
  img="imagefolder:$data"
  prun p1_hand_b32 "$img" "$hand,batch_size=32"
  prun p2_hand_cl_b32 "$img" "$hand,channels_last=on,batch_size=32"
  prun p3_hand_b128_w8 "$img" "$hand,batch_size=128"
  prun p4_hand_b128_w16 "$img" "${hand/workers=8/workers=16},batch_size=128"
  prun p5_synth_hand_b128 synthetic "$hand,batch_size=128"
  prun p6_hand_cl_b128 "$img" "$hand,channels_last=on,batch_size=128"
  prun p7_hand_b64 "$img" "$hand,batch_size=64"
  prun p8_hand_b128_w4 "$img" "${hand/workers=8/workers=4},batch_size=128"
  pack profile
fi
if has scenarios; then
  img="imagefolder:$data"; base="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
  # The collector's cost first, per CUPTI activity kind, on a launch-bound configuration: off, kernels alone,
  # the GPU records, + runtime API, + driver API, everything; twice, alternating, so a drift shows.
  for rep in 1 2; do
    TUNEBENCH_CUPTI_OFF=1 run s4_collector_off_$rep "$model" synthetic "$base,cudnn_benchmark=on,amp=bf16"
    for kinds in kernel kernel,memcpy,memset kernel,memcpy,memset,runtime kernel,memcpy,memset,runtime,driver all all,queries; do
      TUNEBENCH_CUPTI_KINDS=$kinds run "s4_kinds_${kinds//,/_}_$rep" "$model" synthetic "$base,cudnn_benchmark=on,amp=bf16"
    done
  done
  pack s4
  run s1_naive "$model" "$img" "$base"
  run s5_synthetic_best "$model" synthetic "cudnn_benchmark=on,amp=bf16,channels_last=on,batch_size=32"
  run s2_synthetic_base "$model" synthetic "$base"
  run s2_cuda_graphs "$model" synthetic "$base,cuda_graphs=on"
  pack s125
fi
# The collector's cost in one process, alternating off/on windows (single fresh runs were too noisy to rank the
# kinds): the recorder alone, then CUPTI's kinds added one group at a time.
if has collector; then
  bench="$build/bench/bench_engine_collector"
  if [[ -x $bench ]]; then
    # "default" is kernel,memcpy,memset + the launches and syncs from CUPTI's callback API; "all" the activity
    # kinds of before (a record per API call).
    for kinds in ${TB_GPU_COLLECTOR_KINDS:-none kernel default kernel,memcpy,memset,runtime all}; do
      t=$(cap 100 40); (( t > 0 )) || { log "collector $kinds skipped: $(left) s left"; continue; }
      if [[ $kinds == none ]]; then envs="TUNEBENCH_CUPTI_OFF=1"; else envs="TUNEBENCH_CUPTI_KINDS=$kinds"; fi
      env $envs timeout "$t" "$bench" --model "$model" --data synthetic --set cudnn_benchmark=on,amp=bf16 \
        --window 20 --pairs 6 > "$work/logs/collector_$kinds.txt" 2>&1
      log "collector [$kinds] rc=$? $(tail -1 "$work/logs/collector_$kinds.txt" | cut -c1-200)"
    done
    # Beside PyTorch's profiler on torchvision's model of the same name, same batch and settings, each
    # alternating in its own process.
    for batch in ${TB_GPU_RECORDING_BATCHES-32 128}; do
      t=$(cap 240 60); (( t > 0 )) || { log "recording vs torch.profiler batch $batch skipped: $(left) s left"; continue; }
      timeout "$t" "$python" bench/bench_recording_cost.py --model "$model" --batch $batch --window 20 --pairs 6 \
        --bench "$bench" > "$work/logs/recording_vs_kineto_$batch.txt" 2>&1
      log "recording vs torch.profiler, batch $batch: rc=$? $(tail -2 "$work/logs/recording_vs_kineto_$batch.txt" | tr '\n' ' ' | cut -c1-240)"
    done
  else
    log "collector stage skipped: no $bench (built with TUNEBENCH_BENCH=OFF?)"
  fi
  pack collector
fi
# Seed 003's sequence, cumulative. bf16, not fp16: fp16's host-side loss scaling keeps CUDA graphs off.
if has sequence; then
  img="imagefolder:$data"; acc="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
  for k in cudnn_benchmark=on amp=bf16 "workers=8,prefetch=4,pin_memory=on,non_blocking=on" cuda_graphs=on; do
    acc="$acc,$k"; run "s3_${k%%[=,]*}" "$model" "$img" "$acc"
  done
  pack s3
fi
# The user's-script path on the box's own torch (a pip 2.x with CUDA): the example script unmodified, traced
# once, one run per knob, compile.
if has script; then
  if python3 -c 'import PIL, numpy' 2>/dev/null; then
    srun() {
      local name=$1 set=$2 t; shift 2; t=$(cap "$run_timeout" 40)
      (( t > 0 )) || { log "$name skipped: $(left) s left"; return; }
      timeout "$t" $cli run --script examples/train_folder.py ${set:+--set "$set"} --measured-steps 60 \
        --json "$work/runs/$name.run.json" "$@" -- --data $sdata --epochs 1000 > "$work/logs/$name.txt" 2>&1
      local rc=$?
      log "$name rc=$rc $(tail -1 "$work/logs/$name.txt" | cut -c1-200) [$set]"
    }
    srun sc_naive "" --trace "$work/runs/sc_naive.trace.json"
    timeout 60 $cli analyze "$work/runs/sc_naive.trace.json" > "$work/logs/sc_naive.analysis.txt" 2>&1
    log "sc_naive analysis: $(grep -m3 -E 'GPU|waiting|kernels' "$work/logs/sc_naive.analysis.txt" | tr '\n' ' ')"
    [[ -f $work/runs/sc_naive.trace.json ]] && gzip -f "$work/runs/sc_naive.trace.json"
    for k in amp=bf16 amp=fp16 compile=on "cudnn_benchmark=on,tf32=on" channels_last=on "workers=8,persistent_workers=on"; do
      srun "sc_${k//[=,]/_}" "$k"
    done
  else
    log "script stage skipped: this python3 lacks PIL or numpy (the example script decodes with PIL)"
  fi
  pack script
fi
# Each knob alone from the naive baseline, one run each (after the script stage: those runs say more per minute).
if has knobs; then
  img="imagefolder:$data"; base="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
  for k in amp=bf16 amp=fp16 cudnn_benchmark=on channels_last=on "workers=8" "pin_memory=on,non_blocking=on" tf32=on \
           batch_size=64 fused_optimizer=on prefetch=4 zero_grad_none=on sync_free_logging=20 cpu_allocator=glibc_tuned; do
    run "s2_${k//[=,]/_}" "$model" "$img" "$base,$k"
  done
  pack knobs
fi
if has tune; then
  # The naive baseline and the hand sequence at batch 32, untraced, in the same call as the tune: the tune's
  # figure is read against the hand sequence's (TB_GPU_TUNE_HAND=0 leaves them out).
  if [[ ${TB_GPU_TUNE_HAND:-1} == 1 ]]; then
    prun t0_naive "imagefolder:$data" "$naive"
    prun t0_hand_b32 "imagefolder:$data" "$hand,batch_size=32"
    log "hand sequence / naive, batch 32, this call: $("$python" -c "import json
r=lambda n: json.load(open('$work/runs/'+n+'.run.json'))['throughput']['samples_per_s']
print('%.2fx' % (r('t0_hand_b32') / r('t0_naive')))" 2>/dev/null)"
  fi
  b=$(( $(left) - ${TB_GPU_TUNE_RESERVE:-40} ))
  if (( b >= 60 )); then
    (( b > ${TB_GPU_TUNE_BUDGET:-300} )) && b=${TB_GPU_TUNE_BUDGET:-300}
    timeout $((b + 60)) $cli tune --model "$model" --data "imagefolder:$data" --budget "$b" \
      --report "$work/runs/tune-report.html" --json "$work/runs/tune.json" > "$work/logs/tune.txt" 2>&1
    log "tune (budget $b s) rc=$? $(python3 -c "import json;j=json.load(open('$work/runs/tune.json'));print('speedup', j['speedup'], j['speedup_ci'], j['noise']['text'], j.get('best',{}).get('settings', ''))" 2>/dev/null | cut -c1-300)"
    sed -n '/^\[tune 100%\]/,/^skipped:/p' "$work/logs/tune.txt" | cut -c1-400 | while read -r l; do log "  $l"; done
  else
    log "tune skipped: $(left) s left"
  fi
  pack tune
fi
# A script shaped like the public ImageNet example (bench/gpu_imagenet_script.py: torchvision ResNet-50,
# ImageFolder, 4 workers, pinned memory, loss.item() each step, a checkpoint each epoch), tuned as a user's
# script; the kept changes become a patch only when the patched script, run plainly in fresh processes, beats
# the original (the tune's own check). The patch comes back with the tune's JSON and log.
if has scripttune; then
  # Past its budget the tune checks the patch: at least three pairs of plain fresh processes of a ResNet-50
  # script (round 5: three pairs had run at 66 s and were killed at the stage's deadline before the verdict),
  # so the stage keeps 150 s beside the budget.
  b=$(( $(left) - ${TB_GPU_SCRIPTTUNE_RESERVE:-150} ))
  (( b > ${TB_GPU_SCRIPTTUNE_BUDGET:-150} )) && b=${TB_GPU_SCRIPTTUNE_BUDGET:-150}
  if (( b >= 60 )); then
    t=$(cap $((b + 150)) 60)
    timeout "$t" $cli tune --script bench/gpu_imagenet_script.py --budget "$b" --patch "$work/runs/scripttune.diff" \
      --report "$work/runs/scripttune-report.html" --json "$work/runs/scripttune.json" \
      -- "$data" --epochs 1000 -a "${TB_GPU_SCRIPT_ARCH:-resnet50}" --checkpoint /tmp/tb-ckpt.pth ${TB_GPU_SCRIPT_ARGS:-} > "$work/logs/scripttune.txt" 2>&1
    log "scripttune (budget $b s) rc=$?"
    sed -n '/^\[tune 100%\]/,/^skipped:/p' "$work/logs/scripttune.txt" | cut -c1-400 | while read -r l; do log "  $l"; done
    [[ -f $work/runs/scripttune.diff ]] && log "  patch written: $(grep -c '^[-+][^-+]' "$work/runs/scripttune.diff") changed lines"
  else
    log "scripttune skipped: $(left) s left"
  fi
  pack scripttune
fi
# Each knob alone against the naive baseline, alternated in one process with an interval: a tune of that knob
# only, the others pinned at the baseline (the first runs' single figures cannot separate a knob from noise).
if has ab; then
  base="workers=0,pin_memory=off,amp=off,cudnn_benchmark=off,batch_size=32"
  for k in amp cuda_graphs channels_last cudnn_benchmark fused_optimizer zero_grad_none pin_memory tf32 workers; do
    b=$(( $(left) - 30 )); (( b > ${TB_GPU_AB_BUDGET:-45} )) && b=${TB_GPU_AB_BUDGET:-45}
    (( b >= 20 )) || { log "ab_$k skipped: $(left) s left"; continue; }
    set=$(echo "$base" | tr ',' '\n' | grep -v "^$k=" | paste -sd, -)
    timeout $((b + 60)) $cli tune --model "$model" --data "imagefolder:$data" --set "$set" --knobs "$k" --budget "$b" \
      --json "$work/runs/ab_$k.json" > "$work/logs/ab_$k.txt" 2>&1
    log "ab_$k rc=$? $(python3 -c "
import json;j=json.load(open('$work/runs/ab_$k.json'))
for t in j.get('trials',[]):
  if t.get('phase') in ('screen','process') and t.get('knob')=='$k':
    print('%s=%s %.3fx [%.3f, %.3f] %s;' % (t['knob'],t['value'],t.get('ratio') or 0,t.get('ci_low') or 0,t.get('ci_high') or 0,t.get('outcome')), end=' ')
" 2>/dev/null)"
  done
  pack ab
fi
# The simulation's process-knob rule (docs/tuning.md "out of reach") rests on a fresh pair's spread (the profile
# assumes the floor x1.8, ~9.5%) and on what cuDNN's autotuner gives on the hand sequence (~10% of the GPU's time,
# extrapolated). Pairs of fresh processes, off then on (the order flips each pair), each its own `run`: the log
# ratio's mean and sd over the pairs, the t-interval, and each process's wall time (cuDNN's search is in it).
if has reach; then
  hand="workers=8,prefetch=4,pin_memory=on,non_blocking=on,amp=bf16,cuda_graphs=on,batch_size=32"
  for i in $(seq 1 "${TB_GPU_REACH_PAIRS:-4}"); do
    order="off on"; (( i % 2 == 0 )) && order="on off"
    for v in $order; do
      t=$(cap 90 40)
      (( t > 0 )) || { log "reach_${i}_$v skipped: $(left) s left"; continue; }
      s0=$(date +%s.%N)
      timeout "$t" $cli run --model "$model" --data "imagefolder:$data" --set "$hand,cudnn_benchmark=$v" --steps 40 \
        --json "$work/runs/reach_${i}_$v.run.json" > "$work/logs/reach_${i}_$v.txt" 2>&1
      log "reach_${i}_$v rc=$? wall $(python3 -c "print('%.1f' % ($(date +%s.%N) - $s0))") s samples/s $(python3 -c "
import json;print(round(json.load(open('$work/runs/reach_${i}_$v.run.json'))['throughput']['samples_per_s'],1))" 2>/dev/null)"
    done
  done
  log "reach: $(python3 - "$work/runs" <<'PY' 2>&1 | tail -1
import json, math, os, statistics, sys
d = sys.argv[1]; r = []
for i in range(1, 64):
    try:
        off, on = (json.load(open(os.path.join(d, 'reach_%d_%s.run.json' % (i, v))))['throughput']['samples_per_s'] for v in ('off', 'on'))
    except (OSError, ValueError, KeyError):
        continue
    r.append(math.log(on / off))
if len(r) < 2:
    print('%d pair(s): too few for a spread' % len(r)); sys.exit()
t = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36}.get(len(r), 2.3)
m, sd = statistics.mean(r), statistics.stdev(r); h = t * sd / math.sqrt(len(r))
print('%d pairs: cudnn_benchmark=on %.3fx [%.3f, %.3f]; a pair (log ratio) varies by %.1f%% (sd)' % (
    len(r), math.exp(m), math.exp(m - h), math.exp(m + h), 100 * sd))
PY
)"
  pack reach
fi
# Data parallel on the box's GPU(s), resnet18 on synthetic data, two ranks each: Gloo with the ranks
# sharing the GPU(s); the automatic choice (NCCL with a GPU per rank, else Gloo and a warning that says why);
# NCCL asked for (with one GPU: the one-line refusal; with two or more: a traced NCCL run whose all-reduce
# kernels the analysis counts as communication). The one-rank NCCL group runs in the test stage.
if has dist; then
  drun() {
    local name=$1 backend=$2 t; t=$(cap "$run_timeout" 40)
    (( t > 0 )) || { log "$name skipped: $(left) s left"; return; }
    TUNEBENCH_DIST_BACKEND=$backend timeout "$t" $cli run --model resnet18 --data synthetic --device cuda \
      --ranks 2 --steps "$steps" --set batch_size=64 --json "$work/runs/$name.run.json" \
      --trace "$work/runs/$name.trace.json" > "$work/logs/$name.txt" 2>&1
    local rc=$?
    log "$name rc=$rc $(python3 -c "
import json;j=json.load(open('$work/runs/$name.run.json'));r=j.get('ranks',[])
print('world', j.get('world_size'), 'backends', [x.get('distributed',{}).get('backend') for x in r],
  'same weights', len({x.get('parameter_digest') for x in r})==1, 'samples/s', round(j.get('throughput',{}).get('samples_per_s',0),1),
  'warnings', j.get('warnings',[])[:2], 'error', j.get('error'))" 2>/dev/null || grep -m1 'error' "$work/logs/$name.txt")"
    if [[ $rc -eq 0 ]]; then
      timeout 60 $cli analyze "$work/runs/$name.trace.json" > "$work/logs/$name.analysis.txt" 2>&1
      log "$name analysis: $(grep -m4 -iE 'communication|comm wait|ranks|GPU' "$work/logs/$name.analysis.txt" | tr '\n' ' ')"
      gzip -f "$work/runs/$name.trace.json"
    fi
  }
  log "GPUs: $(nvidia-smi -L 2>/dev/null | wc -l)"
  drun d1_gloo gloo
  drun d2_auto auto
  drun d3_nccl nccl
  pack dist
fi
log "done: stages [$stages] in $(( $(date +%s) - t_start )) s -> $out"
