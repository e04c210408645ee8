#!/usr/bin/env bash
# Makes (or reuses) the project's Python environment: a virtual environment of Debian's python3 with exactly
# the pins of python/requirements.txt (PyTorch 2.x from PyPI, CUDA build). Prints the interpreter's path last.
#
# The environment lives outside the checkout, keyed by the requirements' hash, so a second run (or a fresh
# clone on the same machine) downloads nothing: ${TB_VENV_ROOT:-~/.cache/tunebench}/venv-<hash>.
# TB_VENV names one directly. Needs python3-venv (scripts/install-deps.sh).
# --existing: install nothing; print the interpreter if the environment is complete, else fail (build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
req="python/requirements.txt"
base="${TB_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/tunebench}"
hash="$(sha256sum "$req" | cut -c1-12)"
venv="${TB_VENV:-$base/venv-$hash}"
py="$venv/bin/python"
say() { echo "python-env: $*" >&2; }

if [[ -f "$venv/.tunebench-complete" ]] && "$py" -c 'import torch' 2>/dev/null; then
  say "reusing $venv ($("$py" -c 'import torch; print("torch", torch.__version__)'))"
  echo "$py"
  exit 0
fi
if [[ "${1:-}" == "--existing" ]]; then
  say "no complete environment at $venv: run scripts/install-deps.sh (or scripts/python-env.sh) first"
  exit 1
fi

say "making $venv from $req: PyTorch $(grep -m1 '^torch==' "$req" | cut -d= -f3) with its CUDA libraries, torchvision, HTA"
say "(a first install downloads about 2.8 GB and takes about 4.9 GB on disk; later runs reuse it)"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
log="$(mktemp)"
start=$SECONDS
# --no-deps: the list is complete and pinned; HTA's metadata would otherwise pull in jupyterlab.
if ! "$py" -m pip install --no-deps --progress-bar off -r "$req" >"$log" 2>&1; then
  tail -20 "$log" >&2
  say "pip install failed (above); nothing is reused from this attempt"
  rm -rf "$venv" "$log"
  exit 1
fi
# What came over the network: pip prints "Downloading NAME (12.3 MB)" per file it fetched.
got="$(grep -oE 'Downloading [^ ]+ \([0-9.]+ [kMG]B\)' "$log" | awk '
  { n++; v=$3; gsub(/\(/,"",v); u=$4; f=(u ~ /^kB/)?1e-6:(u ~ /^MB/)?1e-3:1; s+=v*f }
  END { printf "%d files, %.2f GB", n, s }')"
rm -f "$log"
"$py" -c 'import torch, torchvision, hta, PIL, numpy, tqdm' || { say "the new environment cannot import its packages"; exit 1; }
touch "$venv/.tunebench-complete"
say "installed in $((SECONDS - start)) s (downloaded ${got}); $(du -sh "$venv" | cut -f1) on disk"
echo "$py"
