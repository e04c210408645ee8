#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the demo: install deps, build, then
#  - with a display: the GUI (tunebench), which opens the built-in demo and starts it;
#  - without one: the headless demo — a naive-defaults run on a generated JPEG folder, its trace analysed,
#    then the auto-tuner with a short budget, writing demo-out/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
bin="${TB_BUILD_DIR:-build}/app"
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && -x "$bin/tunebench" ]]; then
  exec "$bin/tunebench" "$@"
fi
echo "demo: no display — running the headless demo (output in demo-out/)"
out=demo-out; mkdir -p "$out"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/tunebench/demo-images-640x480"
# Same folder and completion marker as the GUI's demo, so a half-written folder is finished, not used.
if [[ ! -f "$cache/.tunebench-demo-complete" ]]; then
  "$bin/tunebench-cli" make-dataset --out "$cache" --images 256 --size 640x480 --classes 10
  touch "$cache/.tunebench-demo-complete"
fi
"$bin/tunebench-cli" run --model mnist_cnn --data "imagefolder:$cache" --steps 40 \
  --trace "$out/naive-trace.json" --json "$out/naive-run.json"
"$bin/tunebench-cli" analyze "$out/naive-trace.json" --json "$out/naive-analysis.json"
"$bin/tunebench-cli" tune --model mnist_cnn --data "imagefolder:$cache" --budget "${TB_DEMO_BUDGET:-120}" \
  --report "$out/report.html" --json "$out/tune.json"
echo "demo: report written to $out/report.html"
