"""The launcher's modules import one another without a circle: the knob catalog imports the hooks that apply
its knobs, and the hooks take what they share with it from knob_errors, never from the catalog."""

import ast
import os
import unittest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tunebench")


def _imports():
    mods = {f[:-3] for f in os.listdir(PKG) if f.endswith(".py")}
    graph = {}
    for m in mods:
        with open(os.path.join(PKG, m + ".py")) as f:
            tree = ast.parse(f.read())
        deps = set()
        for n in ast.walk(tree):  # function-level imports count too: they are the ones that hide a circle
            if isinstance(n, ast.ImportFrom) and n.level == 1:
                deps.update([n.module.split(".")[0]] if n.module else [a.name for a in n.names])
        graph[m] = deps & mods
    return graph


class Modules(unittest.TestCase):
    def test_no_import_circle(self):
        graph = _imports()
        done, circles = set(), []

        def visit(m, path):
            for d in sorted(graph[m]):
                if d in path:
                    circles.append(path[path.index(d):] + [d])
                elif d not in done:
                    visit(d, path + [d])
            done.add(m)

        for m in sorted(graph):
            if m not in done:
                visit(m, [m])
        self.assertEqual(circles, [])

    def test_the_hooks_do_not_import_the_catalog(self):
        graph = _imports()
        self.assertIn("hooks_dataloader", graph["knobs"])
        for m, deps in graph.items():
            if m.startswith("hooks_"):
                self.assertNotIn("knobs", deps, m)


if __name__ == "__main__":
    unittest.main()
