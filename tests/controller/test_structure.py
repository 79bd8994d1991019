"""The controller's shape (issue 20 item 4): its modules import each other without a circle, the
pure core builds no class from mixins (the engine's step is one declared working set,
controller.core.working_set, and plain functions per concern), and engine.py keeps to its
pipeline and worked tables (under ENGINE_MAX_LINES lines)."""

from __future__ import annotations

import ast
import builtins
import enum
import importlib
import inspect
import typing
from pathlib import Path

import pydantic

ROOT = Path(__file__).resolve().parents[2]
CONTROLLER = ROOT / "controller"
CORE = CONTROLLER / "core"
# The engine module holds the pipeline (the numbered steps, in order), its worked tables and the
# step's output; the algorithms live in one module per concern. Past this it is growing back into
# the class it was (1,252 lines before issue 20).
ENGINE_MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def controller_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(CONTROLLER.rglob("*.py"))}


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The controller modules ``name`` imports, anywhere in it (at the top, in a function, under
    TYPE_CHECKING: a circle through any of them is still a circle of dependencies)."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                # ``from controller.core import engine`` imports the module engine.
                sub = f"{module}.{alias.name}"
                out.add(sub if sub in known else module)
    return {m for m in out if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    known = controller_modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules in order, the first repeated last), or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = GREY
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour[nxt] == GREY:
                return stack[stack.index(nxt):] + [nxt]
            if colour[nxt] == WHITE:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        colour[node] = BLACK
        return None

    for node in sorted(graph):
        if colour[node] == WHITE:
            found = visit(node)
            if found:
                return found
    return None


# Bases that declare what a class is rather than lend it behaviour to mix in. Exceptions,
# enums, NamedTuple and Protocol are plain Python; Generic[...] only parametrizes a type; a
# pydantic model (config.py's settings) declares fields, as a dataclass does - and a model
# extending another model adds fields to it.
TYPING_BASES = {typing.Generic, typing.Protocol}


def allowed_base(cls: type, base: type) -> bool:
    if base is object or base in TYPING_BASES:
        return True
    if issubclass(base, BaseException) or issubclass(base, enum.Enum):
        return True
    if base is tuple and hasattr(cls, "_fields"):  # a NamedTuple
        return True
    return issubclass(base, pydantic.BaseModel) and issubclass(cls, pydantic.BaseModel) and len(cls.__bases__) == 1


def mixed_classes() -> list[str]:
    """Every class defined in controller/core with a base that is not a declaration (above)."""
    out = []
    for path in sorted(CORE.glob("*.py")):
        module = importlib.import_module(module_name(path))
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            bad = [b.__qualname__ for b in cls.__bases__ if not allowed_base(cls, b)]
            if bad:
                out.append(f"{module.__name__}.{cls.__qualname__}({', '.join(bad)})")
    return out


def test_no_import_cycle_among_controller_modules():
    graph = import_graph()
    assert "controller.core.engine" in graph and graph["controller.core.engine"], "the walk found no engine imports"
    assert find_cycle(graph) is None, f"import circle: {' -> '.join(find_cycle(graph))}"


def test_cycle_finder_finds_a_circle():
    # The walk above must be able to fail: a circle of three and a self-contained tree.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_relative_and_package_imports_resolve(tmp_path):
    known = {"controller.core.engine": CORE / "engine.py", "controller.core.cancel": CORE / "cancel.py",
             "controller.core": CORE / "__init__.py", "controller.core.x": tmp_path / "x.py"}
    src = tmp_path / "x.py"
    src.write_text("from . import cancel\nfrom controller.core import engine\nimport controller.core\n")
    assert imported("controller.core.x", src, known) == {
        "controller.core.cancel", "controller.core.engine", "controller.core"}


def test_no_mixins_in_the_core():
    assert mixed_classes() == []


def test_mixin_check_refuses_a_mixin():
    class Helpers:
        pass

    class Step(Helpers):
        pass

    class Settings(pydantic.BaseModel):
        x: int = 0

    class More(Settings):
        y: int = 0

    class Wrong(Settings, Helpers):
        pass

    class Failure(ValueError):
        pass

    class Ops(list):
        pass

    assert not allowed_base(Step, Helpers)
    assert not allowed_base(Ops, list)
    assert not allowed_base(Wrong, Helpers) and not allowed_base(Wrong, Settings)
    assert allowed_base(More, Settings) and allowed_base(Failure, ValueError)
    assert allowed_base(Settings, pydantic.BaseModel)


def test_the_working_set_declares_every_field():
    from controller.core.config import ControllerConfig
    from controller.core.state import ClusterState
    from controller.core.working_set import WorkingSet

    ws = WorkingSet.open(ClusterState(controller_id=101, epoch=1), ControllerConfig())
    assert not hasattr(ws, "__dict__")  # slots: only the declared fields exist
    try:
        ws.undeclared = 1
    except AttributeError:
        pass
    else:
        raise AssertionError("a working set took a field it does not declare")


def test_engine_keeps_to_its_pipeline():
    lines = len((CORE / "engine.py").read_text().splitlines())
    assert lines < ENGINE_MAX_LINES, f"controller/core/engine.py has {lines} lines"


def test_builtins_other_than_exceptions_are_not_declarations():
    # list, dict and the like lend behaviour: subclassing them is the mixin the check refuses.
    for name in ("list", "dict", "set", "str", "int"):
        base = getattr(builtins, name)
        assert not allowed_base(type("X", (base,), {}), base)
