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
  "gate_power|the CI gate's false-alarm rate and power, simulated from measured noise|$build/bench/bench_gate_power"
  "watch_tax|what watching a script costs it, five script shapes, traced against untraced|$py bench/bench_watch_tax.py --seconds 15 --rounds 2"
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
