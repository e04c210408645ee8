"""tests/share.py: the shares of a module hold each of its tests once."""

import unittest

from tests import share


class Shares(unittest.TestCase):
    def test_every_test_is_in_exactly_one_share(self):
        modules = ["tests.test_iterations", "tests.test_protocol"]
        everything = sorted(t.id() for t in share.tests_of(unittest.TestLoader().loadTestsFromNames(modules)))
        got = [t.id() for k in (1, 2, 3) for t in share.tests_of(share.share(modules, k, 3))]
        self.assertGreater(len(everything), 3)
        self.assertEqual(sorted(got), everything)

    def test_a_bad_share_is_refused(self):
        self.assertEqual(share.main(["4/3", "tests.test_protocol"]), 2)
        self.assertEqual(share.main(["x", "tests.test_protocol"]), 2)


if __name__ == "__main__":
    unittest.main()
