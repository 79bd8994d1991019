"""Every module of the product imports: a name one module stops defining breaks the modules that
import it lazily (inside a function, as the planner service's sizes poll does) only when that
path runs, so each is imported here, whatever runs it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

PACKAGES = ("protocol", "znodes", "httpd", "controller", "sim", "client", "spark_jobs", "planner_service", "reassignd")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
            if not info.name.endswith("__main__"):  # running a command is not importing it
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_module_imports(name):
    importlib.import_module(name)
