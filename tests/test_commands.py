"""One home for the commands (issue 21 item 4): `reassignd` imports each subcommand module it
runs (no dispatch by module-name strings), the command-line code lives under reassignd/, and no
module of the product is in an import circle, at module or package level."""

from __future__ import annotations

import ast
from pathlib import Path

from reassignd import cli
from tests.controller.test_structure import ROOT, find_cycle, imported, module_name

PACKAGES = ("protocol", "znodes", "httpd", "controller", "sim", "client", "spark_jobs", "planner_service", "reassignd")
# Command lines that stay outside reassignd/: kafka-reassign is its own command; the controller's
# flags are also its SIGHUP reload's sources, and `reassignd users` checks the SCRAM rules beside
# the credentials it writes (reassignd/controller.py and users.py run them).
OWN_COMMAND_LINES = {"client.cli", "controller.shell.options", "controller.shell.security.users"}


def _without_main_block(source: str) -> ast.Module:
    """The module as importing it runs it: an ``if __name__ == "__main__":`` block only runs when
    the file is the program (``python -m spark_jobs.plan``), as module ``__main__``, so what it
    imports is no dependency of the module itself."""
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if not _is_main_block(node)]
    return tree


def _is_main_block(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
            and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
            and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators))


def product_modules(root: Path = ROOT, packages=PACKAGES) -> dict[str, Path]:
    return {module_name(p) if root == ROOT else ".".join(p.relative_to(root).with_suffix("").parts): p
            for package in packages for p in sorted((root / package).rglob("*.py"))}


def import_graph(known: dict[str, Path], tmp: Path) -> dict[str, set[str]]:
    """Each module's imports (anywhere in it, as test_structure counts them), its main block left
    out: ``imported`` reads a copy without it, under the module's own file name (an
    ``__init__.py`` resolves relative imports from itself)."""
    graph = {}
    for name, path in known.items():
        copy = tmp / name / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(ast.unparse(_without_main_block(path.read_text())))
        graph[name] = imported(name, copy, known)
    return graph


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, deps in graph.items():
        top = name.split(".")[0]
        out.setdefault(top, set()).update(d.split(".")[0] for d in deps if d.split(".")[0] != top)
    return out


def test_no_import_circle_in_the_product(tmp_path):
    graph = import_graph(product_modules(), tmp_path)
    assert graph["reassignd.cli"] >= {"reassignd.zk", "reassignd.sim", "reassignd.planner"}, "the walk found nothing"
    assert find_cycle(graph) is None, f"import circle: {' -> '.join(find_cycle(graph))}"
    packages = package_graph(graph)
    assert find_cycle(packages) is None, f"package circle: {' -> '.join(find_cycle(packages))}"


def test_the_circle_check_sees_lazy_imports_and_skips_only_the_main_block(tmp_path):
    pkg = tmp_path / "src" / "p"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from p import b\n")
    (pkg / "b.py").write_text("import p.a\n")
    (pkg / "c.py").write_text("import sys\nif __name__ == '__main__':\n    from p import d\n")
    (pkg / "d.py").write_text("from p import c\n")
    known = product_modules(tmp_path / "src", ("p",))
    graph = import_graph(known, tmp_path)
    assert find_cycle(graph) == ["p.a", "p.b", "p.a"]
    assert graph["p.c"] == set() and graph["p.d"] == {"p.c"}


def test_reassignd_imports_each_command_it_runs():
    source = (ROOT / "reassignd" / "cli.py").read_text()
    assert "importlib" not in source and "__import__" not in source
    for name, (main, _) in cli.SUBCOMMANDS.items():
        assert main.__module__ == f"reassignd.{name}" and main.__name__ == "main", name
        assert (ROOT / "reassignd" / f"{name}.py").is_file()


def test_command_lines_live_under_reassignd():
    """No library module builds an argparse parser: only reassignd/ and the command lines named
    in OWN_COMMAND_LINES."""
    users = set()
    for name, path in product_modules().items():
        for node in ast.walk(_without_main_block(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) else [])
            if "argparse" in names:
                users.add(name)
    outside = {m for m in users if not m.startswith("reassignd.")}
    assert outside == OWN_COMMAND_LINES, outside
