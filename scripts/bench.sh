#!/usr/bin/env bash
# The measurements (docs/design.md, "Tests"): what the tests leave out because it depends on the machine's speed
# (speed-ups, predictions held to a margin, what tracing costs, the gate's power, a tune that ends decided),
# each a bench in bench/ that prints its figures with their intervals. Not part of the README's test command.
# Builds the benches (TUNEBENCH_BENCH=ON) into the build directory, then runs the named ones (all without a
# name), one after another, each with its output under build/bench-logs/NAME.txt. The figures go in
# docs/cpu-results.md with the command that gave them.
#
# usage: scripts/bench.sh [--list] [--no-build] [NAME...]
# Run it on a quiet machine: a bench beside other work measures that work too (each says the load it saw).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${TB_BUILD_DIR:-build}"
py="$(bash scripts/python-env.sh --existing 2>/dev/null)"
cli="$build/app/tunebench-cli"

# name | what it measures | the command (run from the repository's root)
benches=(
  "demo_tune|the README's demo tune: decided, workers measured first, within its budget (3 tunes of 120 s)|$py bench/bench_demo_tune.py --cli $cli --budget 120 --runs 3"
  "watched_toggle|a toggle's Compare ratio watched against unwatched, on a real script in the window|env QT_QPA_PLATFORM=offscreen $build/bench/bench_ui_watched_toggle"
  "gate_cli|the real gate's verdicts on a widened MLP, a comment, a launcher knob, the engine's knob (power, false alarms)|$py bench/bench_gate_cli.py --cli $cli --rounds 2"
  "gate_power|the gate's rule: false alarms and power over simulated noise, alternated and against a stored baseline|$build/bench/bench_gate_power && $build/bench/bench_gate_power --stored 10"
  "loader_verdict|the loader verdict's grade, slow part and predicted workers, checked by a run with that count|$py bench/bench_loader_verdict.py --cli $cli --rounds 1"
  "epoch_rhythm|a short-epoch ImageFolder trainer's A/A spread in windows as asked and of whole passes; a tune's noise floor|$py bench/bench_epoch_rhythm.py --cli $cli --steps 400 --tunes 1 --budget 90"
  "advice|the loader-stall advice on four trainer-shaped scripts against plain runs of its switch (predicted vs measured)|$py bench/bench_advice.py --cli $cli --rounds 3"
  "patch_check|a script's patch checked in fresh processes where workers pay and where they lose|$build/bench/bench_engine_patch_check"
  "tracing_cost|what tracing costs a fast script, and whether the run states it|$py bench/bench_script.py --cli $cli --tracing-cost --rounds 5"
  "tune_shapes|which knobs a script's tune tries in its budget: no loader, an LSTM over a loader, a slow start|$py bench/bench_script.py --cli $cli --shapes"
  "ranks_tune|what tunes of two ranks decide in their budgets: live group, fresh groups, the ranks knob|$py bench/bench_ranks.py --cli $cli --tune --rounds 1"
  "ranks_failures|how soon a group ends when a rank dies|$py bench/bench_ranks.py --cli $cli --failures --rounds 3"
  "compile|TorchInductor: the corpus's compiled script, compile=on of a script, a checkpoint under compile|$py bench/bench_compile.py --rounds 1"
  "watch_tax|what watching a script costs it, and the sampled chunks' lengths and first start|$py bench/bench_watch_tax.py --shapes slow_reads,regression,vae --seconds 15 --rounds 2"
  "trace_writer|a trace chunk's hand-over and the training thread's stall, saved in place and forked|$py bench/bench_trace_boundary.py --writer --rounds 2"
  "loader_receive|what taking a batch from a worker costs the training process, small and 64 MB batches|$py bench/bench_loader_parts.py --receive"
  "step_accounting|a hand-written update's share of its bracket; a step's memory read|$py bench/bench_step_accounting.py"
  "compile_events|what listening to torch.compile's structured trace costs a compile (aot_eager, Inductor; fresh processes alternated)|$py bench/bench_compile_events.py --rounds 5"
  "kernel_profile|what a traced run's Inductor kernel profiling and provenance cost a compile and a step (fresh processes alternated)|$py bench/bench_kernel_profile.py --rounds 5"
  "analyze|tunebench-cli analyze's wall time on 0.1 M and 1 M events and a real Kineto trace (goal: 1 M in 1 s)|$py bench/bench_analyze_cli.py"
)

list=0 build_first=1 names=()
for a in "$@"; do
  case "$a" in
    --list) list=1 ;;
    --no-build) build_first=0 ;;
    -*) echo "bench.sh: unknown option '$a' (see the usage at the top of this script)" >&2; exit 2 ;;
    *) names+=("$a") ;;
  esac
done
if ((list)); then
  for b in "${benches[@]}"; do IFS='|' read -r n what _ <<<"$b"; printf '%-16s %s\n' "$n" "$what"; done
  exit 0
fi
for n in "${names[@]}"; do
  printf '%s\n' "${benches[@]}" | grep -q "^$n|" || { echo "bench.sh: no bench '$n' (--list names them)" >&2; exit 2; }
done
if ((build_first)); then TB_BENCH=ON bash scripts/build.sh; fi
mkdir -p "$build/bench-logs"
failed=0
for b in "${benches[@]}"; do
  IFS='|' read -r n what cmd <<<"$b"
  if ((${#names[@]})) && ! printf '%s\n' "${names[@]}" | grep -qx "$n"; then continue; fi
  echo "== $n: $what"
  echo "   \$ $cmd   (load average $(cut -d' ' -f1 /proc/loadavg))"
  if ! (eval "$cmd") 2>&1 | tee "$build/bench-logs/$n.txt"; then
    echo "bench.sh: $n failed (its log: $build/bench-logs/$n.txt)" >&2
    failed=1
  fi
done
exit "$failed"
