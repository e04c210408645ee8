"""The launcher's modules import one another without a circle: the knob catalog imports the hooks that apply
its knobs, and the hooks take what they share with it from knob_errors, never from the catalog."""

import ast
import os
import unittest

PKG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tunebench")


def _modules():
    """Every module of the package by dotted name below it ("launch", "hooks.forward"), a subpackage's
    __init__ by the subpackage's name."""
    out = {}
    for d, _, files in os.walk(PKG):
        rel = os.path.relpath(d, PKG)
        pkg = [] if rel == "." else rel.split(os.sep)
        for f in files:
            if f.endswith(".py"):
                name = pkg if f == "__init__.py" else pkg + [f[:-3]]
                out[".".join(name)] = (os.path.join(d, f), pkg)
    return out


def _imports():
    mods = _modules()
    graph = {}
    for m, (path, pkg) in mods.items():
        with open(path) as f:
            tree = ast.parse(f.read())
        deps = set()
        for n in ast.walk(tree):  # function-level imports count too: they are the ones that hide a circle
            if isinstance(n, ast.ImportFrom) and n.level >= 1:
                base = pkg[:len(pkg) - (n.level - 1)]
                if n.module:
                    target = ".".join(base + n.module.split("."))
                    deps.add(target)
                    deps.update(target + "." + a.name for a in n.names)  # from .hooks import forward
                else:
                    deps.update(".".join(base + [a.name]) for a in n.names)
        graph[m] = deps & set(mods)
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
        self.assertIn("hooks.dataloader", graph["knobs"])
        hooks = [m for m in graph if m.startswith("hooks.")]
        self.assertGreaterEqual(len(hooks), 7)
        for m in hooks:
            self.assertNotIn("knobs", graph[m], m)

    def test_the_parts_are_subpackages(self):
        """The hooks and the trace writer are their own subpackages; nothing of theirs is left at the top."""
        mods = _modules()
        for part in ("hooks", "trace"):
            self.assertIn(part, mods)  # its __init__, which says what the part is
        self.assertEqual([m for m in mods if m.startswith(("hooks_", "trace_", "tracing"))], [])
        self.assertIn("trace.tracer", _imports()["launch"])


if __name__ == "__main__":
    unittest.main()
