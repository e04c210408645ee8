#!/bin/sh
# Stands in for tunebench-cli (TUNEBENCH_CLI) where a window test starts a data-parallel auto-tune: it checks
# the command the window gave (`tune --ranks N` of the panel's model and data, its --budget, --report and
# --json) and answers with the real CLI's (TB_REAL_CLI) simulated tune of that budget: its progress lines,
# JSON document and report, as a real tune writes them, in a second instead of a minute of two real ranks.
# Every other command goes to the real CLI. The real `tune --ranks` is the e2e tests' (tests/engine).
set -eu
real="${TB_REAL_CLI:?sim_tune_cli.sh: set TB_REAL_CLI to the real tunebench-cli}"
[ "${1:-}" = tune ] || exec "$real" "$@"
shift
ranks="" budget="" report="" json="" model="" data=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --report) report="$2"; shift 2 ;;
    --json) json="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --set) shift 2 ;;
    *) echo "sim_tune_cli.sh: unexpected argument '$1' for tune" >&2; exit 2 ;;
  esac
done
for v in ranks budget report json model data; do
  eval "[ -n \"\$$v\" ]" || { echo "sim_tune_cli.sh: tune was given no --$v" >&2; exit 2; }
done
exec "$real" tune --simulate --profile toy --budget "$budget" --report "$report" --json "$json"
