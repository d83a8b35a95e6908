"""The report package's modules import each other without a cycle, at module level or inside a
function (issue 38: page -> gate -> fleet -> page was one, gate borrowing fleet's private reader):
a module's dependencies can be read from its imports, and a change in one cannot reach back into
itself. The check itself is shown to find a cycle in a made-up graph."""
import ast
import os
import unittest

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots", "pairbench_report")


def relative_imports(path):
    """The package modules a file imports (`from .x import`, `from . import x`), anywhere in it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
    return out


def find_cycle(graph):
    """One cycle of module names (first repeated at the end), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt, path + [nxt])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


class Imports(unittest.TestCase):
    def test_the_report_package_has_no_import_cycle(self):
        graph = {
            name[:-3]: relative_imports(os.path.join(PACKAGE, name))
            for name in os.listdir(PACKAGE)
            if name.endswith(".py")
        }
        self.assertIn("gate", graph["page"])  # the graph is read: page draws the gate's section
        self.assertIsNone(find_cycle(graph), find_cycle(graph))

    def test_the_check_finds_a_cycle(self):
        self.assertEqual(
            find_cycle({"page": {"gate"}, "gate": {"fleet"}, "fleet": {"page"}}), ["fleet", "page", "gate", "fleet"]
        )
        self.assertIsNone(find_cycle({"page": {"gate"}, "gate": {"runfile"}, "runfile": set()}))


if __name__ == "__main__":
    unittest.main()
