#!/usr/bin/env bash
# The whole test suite on a busy machine: ctest -j2, as scripts/test.sh runs it, while CPU-bound processes run
# beside it (two of them: a load of about 4 on 2 cores, what a laptop building something else gives), several
# rounds, each held to the suite's times stretched by the load (TB_TIME_SCALE=2). Not part of .ci/run (each round
# takes about twice the suite's quiet time); developers run it before a stop, after scripts/test.sh has built
# everything.
#
# usage: scripts/test-under-load.sh [--rounds N] [--burners N] [-- CTEST_ARGS...]
#   --rounds   how many times the suite runs (3)
#   --burners  CPU-bound processes beside it (2)
# Prints, per round, the tests' result, its wall time and the load average seen; exits 1 when any round failed.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 burners=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --burners) burners="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "test-under-load.sh: unknown option '$1' (see the usage at the top of this script)" >&2; exit 2 ;;
  esac
done
build="${TB_BUILD_DIR:-build}"
[[ -f "$build/CTestTestfile.cmake" ]] || { echo "test-under-load.sh: no tests in $build: run scripts/test.sh first" >&2; exit 2; }
export QT_QPA_PLATFORM=offscreen OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"  # as scripts/test.sh
python="$(bash scripts/python-env.sh --existing 2>/dev/null)"

pids=()
stop_burners() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pids=(); }
trap stop_burners EXIT INT TERM

failed=0
for ((r = 1; r <= rounds; r++)); do
  for ((b = 0; b < burners; b++)); do
    yes >/dev/null &
    pids+=("$!")
  done
  # The load average, sampled every 30 s while the round runs: the figure the round is reported under.
  loads="$(mktemp)"
  (while sleep 30; do cut -d' ' -f1 /proc/loadavg; done) >"$loads" &
  sampler=$!
  start=$(date +%s)
  log="$build/Testing/under-load-round-$r.log"
  mkdir -p "$build/Testing"
  junit="$PWD/$build/Testing/under-load-round-$r.xml"
  if (cd "$build" && ctest --output-on-failure -j "${TB_TEST_JOBS:-2}" --timeout 300 --output-junit "$junit" "$@") >"$log" 2>&1; then
    verdict="passed"
  else
    verdict="FAILED"
    failed=1
  fi
  # The suite's times (scripts/check-test-times.py), stretched by the load: two burners on two cores halve
  # what each test gets (TB_TIME_SCALE, 2 by default).
  phase=$(( $(date +%s) - start ))
  if ! "$python" scripts/check-test-times.py "$build" "$junit" --phase-seconds "$phase" --scale "${TB_TIME_SCALE:-2}" >>"$log" 2>&1; then
    verdict="$verdict, OVER TIME"
    failed=1
  fi
  kill "$sampler" 2>/dev/null || true
  stop_burners
  summary="$(grep -E '^[0-9]+% tests passed' "$log" || echo 'no summary')"
  avg="$(awk '{s += $1; n++} END {if (n) printf "%.1f", s / n; else print "?"}' "$loads")"
  rm -f "$loads"
  echo "round $r of $rounds: $verdict ($summary) in $(( $(date +%s) - start )) s, load average $avg with $burners burners; log $log"
  grep -E '^\s+[0-9]+ - ' "$log" | grep -v '(Skipped)' | sed 's/^/  failed: /' || true
  grep -E '^check-test-times: over time' "$log" | sed 's/^/  /' || true
done
exit "$failed"
