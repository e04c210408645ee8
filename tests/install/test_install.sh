#!/usr/bin/env bash
# The headless part installed under a prefix works on its own (what a GPU server gets), and the
# Debian packages hold what they should. Usage: test_install.sh BUILD_DIR PYTHON [deb]
set -euo pipefail
build=$1 python=$2 mode=${3:-install}
tmp=$(mktemp -d /tmp/tb_install_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ $mode == deb ]]; then
  command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 0; }
  (cd "$build" && cpack -G DEB -B "$tmp" >/dev/null) || fail "cpack -G DEB failed"
  cli_deb=$(ls "$tmp"/tunebench-cli_*.deb) gui_deb=$(ls "$tmp"/tunebench_*.deb 2>/dev/null || true)
  grep -qx tunebench-cli <<<"$(dpkg-deb -f "$cli_deb" Package)" || fail "the CLI package is not named tunebench-cli"
  depends=$(dpkg-deb -f "$cli_deb" Depends)
  if grep -qi qt <<<"$depends"; then fail "the headless package depends on Qt: $depends"; fi
  contents=$(dpkg-deb -c "$cli_deb")
  for f in ./usr/bin/tunebench-cli ./usr/bin/tunebench-engine ./usr/share/tunebench/python/tunebench/launch.py; do
    grep -q " $f\$" <<<"$contents" || fail "$f is not in $cli_deb"
  done
  if [[ -n $gui_deb ]]; then
    grep -q "tunebench-cli (= " <<<"$(dpkg-deb -f "$gui_deb" Depends)" || fail "the GUI package does not depend on tunebench-cli"
    grep -q " ./usr/bin/tunebench\$" <<<"$(dpkg-deb -c "$gui_deb")" || fail "no tunebench in $gui_deb"
  fi
  echo "ok: $(basename "$cli_deb") $(basename "${gui_deb:-none}")"
  exit 0
fi

cmake --install "$build" --component cli --prefix "$tmp/prefix" >/dev/null
cli=$tmp/prefix/bin/tunebench-cli
version=$("$cli" --version)
grep -q "(protocol 1)" <<<"$version" || fail "--version: $version"
for exe in "$cli" "$tmp/prefix/bin/tunebench-engine"; do
  [[ -x $exe ]] || fail "$exe not installed"
  # Its own NEEDED entries (Debian's LibTorch itself pulls Qt 5 in through its dependencies; that is not ours).
  needed=$(readelf -d "$exe" | grep NEEDED || true)
  if grep -i "libQt" <<<"$needed"; then fail "$exe links Qt"; fi
done
"$cli" run --model mnist_cnn --data synthetic --steps 3 --json "$tmp/run.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "run"; }
grep -q '"model"' "$tmp/run.json" || fail "run wrote no JSON"
# A script: the installed launcher package is the one that runs it.
if "$python" -c "import torch" 2>/dev/null; then
  cat >"$tmp/train.py" <<'PY'
import sys, torch, tunebench
print("package:", tunebench.__file__, file=sys.stderr)
model = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
for x, y in torch.utils.data.DataLoader(data, batch_size=8):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
PY
  "$cli" run --script "$tmp/train.py" --python "$python" --steps 4 2>"$tmp/err" || { cat "$tmp/err"; fail "run --script"; }
  grep -q "package: $tmp/prefix/share/tunebench/python/tunebench/__init__.py" "$tmp/err" ||
    fail "the script did not run under the installed package: $(grep package: "$tmp/err")"
fi
echo "ok: installed under $tmp/prefix"
