"""The package's shape: the folders are the layers, in the order data flows through them
(docs/reference/layout.md); a wing imports only the wings below it, modules import in no
circle, and only the pytest side and the commands import pytest.

Read with ``ast``, so nothing is imported to check it.
"""

from __future__ import annotations

import ast
import functools
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_qcrypto"

#: The wings, lowest first: each may import only the wings before it (and itself).
WINGS = ("algorithms", "backends", "checks", "measure", "results", "output", "gate", "targets",
         "pytest_side", "commands")
#: The wings that may import pytest: the pytest side and the commands (and the entry point,
#: whose hooks and fixtures pytest reads).
PYTEST_WINGS = ("pytest_side", "commands", "plugin")
#: The modules at the top of the package: its public face and the pytest11 entry point.
TOP = {"": "the package's public face", "plugin": "the pytest11 entry point"}


def module_name(package: Path, path: Path) -> str:
    parts = path.relative_to(package).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wing(name: str) -> str:
    """The wing of a module (``measure.harness``: ``measure``); a top module is its own."""
    return name.split(".")[0] if "." in name or name in WINGS else name


def rank(name: str) -> int:
    """The layer of a module's wing; the top modules stand above every wing."""
    w = wing(name)
    return WINGS.index(w) if w in WINGS else len(WINGS)


def imports(package: Path, path: Path) -> set[str]:
    """Absolute names of what the module imports (``pytest_qcrypto.x`` as ``pytest_qcrypto.x``)."""
    here = module_name(package, path).split(".") if path.name != "__init__.py" else \
        [*module_name(package, path).split("."), "__init__"]
    return set(_imports(path.read_text(encoding="utf-8"), tuple(here)))


@functools.lru_cache(maxsize=None)
def _imports(text: str, here: tuple[str, ...]) -> frozenset[str]:
    """:func:`imports` of a module's text (parsed once per text and place: every check of
    this file reads the same modules, of the package and of its copies)."""
    tree = ast.parse(text)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["pytest_qcrypto", *here[:len(here) - node.level]]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            for a in node.names:  # from pytest_qcrypto.measure import harness: a module
                found.add(f"{mod}.{a.name}")
    return frozenset(found)


@functools.lru_cache(maxsize=None)
def _modules(package: Path) -> frozenset[str]:
    """The names of the package's modules (no check adds or removes a file)."""
    return frozenset(module_name(package, p) for p in package.rglob("*.py"))


def package_imports(package: Path, path: Path) -> set[str]:
    """The package's modules that ``path`` imports, by their names inside the package."""
    modules = _modules(package)
    me = module_name(package, path)
    out = set()
    for name in imports(package, path):
        if name == "pytest_qcrypto" or not name.startswith("pytest_qcrypto."):
            continue
        name = name.removeprefix("pytest_qcrypto.")
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != me and name not in WINGS:  # a wing's __init__ says only what it is
            out.add(name)
    return out


def sources(package: Path) -> list[Path]:
    return sorted(package.rglob("*.py"))


def upward_imports(package: Path) -> list[str]:
    """Every import that points to a wing above the importer's, as ``importer -> imported``."""
    bad = []
    for path in sources(package):
        me = module_name(package, path)
        for name in sorted(package_imports(package, path)):
            if rank(name) > rank(me):
                bad.append(f"{me} ({wing(me)}) -> {name} ({wing(name)})")
    return bad


def pytest_imports(package: Path) -> list[str]:
    """Every module outside the pytest side and the commands that imports pytest."""
    bad = []
    for path in sources(package):
        me = module_name(package, path)
        if wing(me) in PYTEST_WINGS:
            continue
        found = sorted(n for n in imports(package, path)
                       if n.split(".")[0] in ("pytest", "_pytest", "xdist"))
        if found:
            bad.append(f"{me} imports {found}")
    return bad


def circles(package: Path) -> list[list[str]]:
    """Import circles between modules (any import, at the top or inside a function)."""
    graph = {module_name(package, p): package_imports(package, p) for p in sources(package)}
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(trail[trail.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


def test_every_module_is_in_a_wing():
    loose = sorted(m for p in sources(PACKAGE) if (m := module_name(PACKAGE, p)) not in TOP
                   and wing(m) not in WINGS)
    assert not loose, f"modules outside the wings {WINGS}: {loose}"


def test_each_wing_says_what_it_is():
    for w in WINGS:
        doc = ast.get_docstring(ast.parse((PACKAGE / w / "__init__.py").read_text()))
        assert doc and "import" in doc.lower(), f"{w}/__init__.py must say what it is and may import"


def test_imports_point_down_the_wings():
    assert not upward_imports(PACKAGE)


def test_only_the_pytest_side_and_the_commands_import_pytest():
    assert not pytest_imports(PACKAGE)


def test_no_import_circle():
    assert not circles(PACKAGE)


@pytest.mark.parametrize("importer, added, check", [
    ("algorithms/catalog.py", "from pytest_qcrypto.output import tables", upward_imports),
    ("measure/harness.py", "from pytest_qcrypto.gate import verdicts", upward_imports),
    ("results/store.py", "import pytest", pytest_imports),
    ("gate/stats.py", "from _pytest.config import Config", pytest_imports),
    ("measure/limits.py", "from pytest_qcrypto.measure import bench", circles),
])
def test_the_checks_catch_a_bad_import(tmp_path, importer, added, check):
    copy = tmp_path / "pytest_qcrypto"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert not check(copy)
    target = copy / importer
    target.write_text(target.read_text(encoding="utf-8") + f"\n{added}\n", encoding="utf-8")
    assert check(copy), f"{check.__name__} missed {added!r} in {importer}"


def test_no_module_is_over_about_400_lines():
    long = {module_name(PACKAGE, p): n for p in sources(PACKAGE)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 425}
    assert not long, long


def test_kind_is_asked_only_in_the_catalog():
    offenders = [f"{p.relative_to(PACKAGE)}:{i}" for p in sources(PACKAGE)
                 if module_name(PACKAGE, p) != "algorithms.catalog"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if "kind ==" in line or "kind !=" in line]
    assert not offenders, offenders
