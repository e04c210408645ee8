"""Runs the K-th of N shares of some test modules: `python -m tests.share K/N MODULE...`.

CTest runs each share as a test of its own (tests/CMakeLists.txt, tb_python_tests), so that no one test takes
what a whole module of real script runs takes: a logic test stays well under its 30 s on a 2-core machine
beside another under ctest -j2. The tests of the modules, sorted by id, are dealt out in turn (the i-th to
share i mod N), so a test added to a module lands in some share without a list to update; a run that several
tests of a class share (launch_util.SharedRuns) is made once in each share that reads it."""

import sys
import unittest


def tests_of(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from tests_of(t)
        else:
            yield t


def share(modules, k, n):
    """The tests of `modules` in share k of n (1 <= k <= n), as one suite; a module that cannot be imported is
    a failing test of its own (unittest's _FailedTest), so a broken module fails every share's run of it."""
    loader = unittest.TestLoader()
    everything = sorted(tests_of(loader.loadTestsFromNames(modules)), key=lambda t: t.id())
    return unittest.TestSuite(t for i, t in enumerate(everything) if i % n == k - 1)


def main(argv):
    if len(argv) < 2 or "/" not in argv[0]:
        print("usage: python -m tests.share K/N MODULE...", file=sys.stderr)
        return 2
    try:
        k, n = (int(x) for x in argv[0].split("/"))
    except ValueError:
        k = n = 0
    if not 1 <= k <= n:
        print("tests.share: '%s' is not K/N with 1 <= K <= N" % argv[0], file=sys.stderr)
        return 2
    suite = share(argv[1:], k, n)
    if suite.countTestCases() == 0:
        print("tests.share: share %d/%d of %s holds no test" % (k, n, " ".join(argv[1:])), file=sys.stderr)
        return 1
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
