"""The README's map of ideas ("Where each idea lives") names code that exists."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import nmt_cli

ROOT = Path(__file__).resolve().parents[1]


def idea_rows() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## Where each idea lives", 1)[1].split("\n\n", 2)[1]
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    return [(idea.lstrip("| "), where.rstrip(" |")) for idea, where in rows]


def package_namespace() -> dict[str, object]:
    """The functions, classes and constants that nmt_cli's modules define (not import)."""
    names: dict[str, object] = {}
    for module in pkgutil.walk_packages(nmt_cli.__path__, "nmt_cli."):
        if module.name.startswith(("nmt_cli.__main__", "nmt_cli.cli", "nmt_cli.serve",
                                   "nmt_cli.ct2_export")):
            continue  # the command line and the modules of extras: no idea lives there
        names.update((name, value) for name, value
                     in vars(importlib.import_module(module.name)).items()
                     if not inspect.ismodule(value)
                     and getattr(value, "__module__", "nmt_cli").startswith("nmt_cli"))
    return names


def has_member(cls: type, name: str) -> bool:
    """A method or class attribute, a field, or an attribute the class sets on its instances."""
    return (hasattr(cls, name) or name in inspect.get_annotations(cls)
            or re.search(rf"self\.{name}\b\s*[:=]", inspect.getsource(cls)) is not None)


def arguments(cls: type) -> set[str]:
    return {name for _, method in inspect.getmembers(cls, inspect.isfunction)
            for name in inspect.signature(method).parameters}


def test_every_name_in_the_map_of_ideas_is_in_the_code():
    names, rows = package_namespace(), idea_rows()
    classes = [value for value in names.values() if inspect.isclass(value)]
    assert len(rows) >= 20
    for idea, where in rows:
        assert re.search(r"`\w", where), f"{idea}: names no code"
        owner = None  # `Class.a`, `.b`: b belongs to the class named last in the cell
        for name in re.findall(r"`([\w./]+)`", where):
            if name.endswith(".py"):
                assert any((base / name).is_file() for base in (ROOT, ROOT / "nmt_cli")), \
                    f"{idea}: {name}"
                continue
            if name.startswith("."):
                assert owner is not None and has_member(owner, name[1:]), f"{idea}: {name}"
                continue
            head, _, member = name.partition(".")
            if member:
                owner = names.get(head)
                assert inspect.isclass(owner) and has_member(owner, member), f"{idea}: {name}"
            else:  # a function, class or constant, a member of a class, or an argument
                assert (head in names or any(has_member(c, head) for c in classes)
                        or owner is not None and head in arguments(owner)), f"{idea}: {name}"
