#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to green tests: install deps (root/sudo), build, run every test,
# then hold the run to the suite's times (docs/design.md, "Tests": a logic test under 30 s, at most 8 end-to-end
# tests under 90 s each, the test phase under 12 minutes; scripts/check-test-times.py).
# TB_CHECK_TIMES=0 skips that check (a debugger, a sanitizer build); TB_TIME_SCALE stretches its limits, 1.25
# unless set: the limits are a usual day's on the 2-core VM (tests 498-519 s, the slowest logic test 21 s), and
# the same VM has slow days (2026-12-07: the tree built in 1265 s where it took 613 s the day before, the tests
# 806-949 s with every test passing); a single-thread probe did not see them (it read its fastest during a slow
# run). The suite itself does: tests/times-reference.json holds a green run of a slow day, and a time over its
# limit fails only when it is also over that reference at the speed the run's tests show (check-test-times.py).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/install-deps.sh
t1=$(date +%s)
bash scripts/build.sh
t2=$(date +%s)
export QT_QPA_PLATFORM=offscreen
# Tests run two at a time on two cores. The wheel's OpenMP threads spin while they wait for work, so the intra-op
# threads of one test starve the other's: mnist_cnn eager fell from ~650 to 137-177 samples/s beside another
# job (bench/mnist_eager.py, 2 threads). Waiting threads sleep instead; a run measured alone keeps PyTorch's
# default.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
build="${TB_BUILD_DIR:-build}"
junit="$PWD/$build/Testing/junit.xml"
mkdir -p "$build/Testing"
set +e
(cd "$build" && ctest --output-on-failure -j "${TB_TEST_JOBS:-2}" --timeout 300 --output-junit "$junit")
rc=$?
set -e
t3=$(date +%s)
echo "test.sh: install $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s, in all $((t3 - t0)) s"
python="$(bash scripts/python-env.sh --existing 2>/dev/null)"
if [[ "${TB_CHECK_TIMES:-1}" != 0 ]]; then
  "$python" scripts/check-test-times.py "$build" "$junit" --phase-seconds $((t3 - t2)) \
    --scale "${TB_TIME_SCALE:-1.25}" --reference tests/times-reference.json || rc=$((rc == 0 ? 1 : rc))
fi
exit "$rc"
