"""The package's shape: imports point one way, down the list of modules in the order data
flows through them (README, "How the code is laid out"), and the core never imports pytest.

Read with ``ast``, so nothing is imported to check it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_qcrypto"

#: Each module's layer: a module may import only modules of a lower layer.  Modules of
#: ``backends`` not named here (one per crypto plugin) are in the layer of "backends.*".
LAYERS: dict[str, int] = {
    # the core: plain Python, never pytest
    "kinds": -1, "kdf_names": -1, "catalog": 0,
    "settings": 1, "strictjson": 1, "gil": 1, "cryptotest_names": 1, "procs": 1, "files": 1,
    "backends.base": 1, "callable_names": 1, "source_tree": 1, "randomness": 1,
    "known_answers": 2, "harness": 2, "limits": 2, "pkey_checks": 3,
    "backends.cryptodev_abi": 2, "backends.afalg_kernel": 2,
    "backends.afalg_contexts": 3, "backends.devcrypto_sessions": 3,
    "backends.openssl_pkey": 3, "backends.pycryptodome_pkey": 3,
    "isolate": 3, "interrupts": 3, "jobs": 3, "machine": 3, "tables": 3, "rules": 3,
    "cost_model": 3, "pairs": 3,
    "threads": 4,
    "backends.*": 4, "markdown": 4, "ops_layouts": 4,
    "backends": 5, "layouts": 5,
    "registry": 6, "render": 6, "pkey_bench": 4,
    "bench": 7, "results_model": 7, "results_check": 7.5,
    "results": 8, "gate_stats": 8, "gate_text": 8, "remote": 8,
    "callables": 8,
    "target_link": 9,
    "gate": 9, "report": 9, "plot": 9,
    "summary_targets": 10,
    "gate_summary": 10, "compare": 10, "tries": 10,
    # the pytest side
    "hookspecs": 11, "options": 11, "matrix": 11, "ledger": 11, "saving": 11,
    "fixture": 12, "gate_plugin": 12, "targets": 12,
    "plugin": 13, "compare_cli": 13, "progress": 13,
    "cli": 14,
    "cryptotest": 15,
}
#: The first layer of the pytest side: below it nothing imports pytest.
PYTEST_SIDE = 11


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(name: str) -> int:
    if name in LAYERS:
        return LAYERS[name]
    if name.startswith("backends."):
        return LAYERS["backends.*"]
    if name.startswith("vectors"):
        return LAYERS["known_answers"]
    raise AssertionError(f"pytest_qcrypto.{name} has no place in LAYERS: add it in the order "
                         "data flows through it (and to the README's layout section)")


def imports(path: Path) -> set[str]:
    """Absolute names of what the module imports (``pytest_qcrypto.x`` as ``x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module_name(path).split(".") if path.name != "__init__.py" else \
        module_name(path).split(".") + ["__init__"]
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
            for a in node.names:  # from pytest_qcrypto import catalog: a module
                found.add(f"{mod}.{a.name}")
    return found


def package_imports(path: Path) -> set[str]:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    out = set()
    for name in imports(path):
        if name == "pytest_qcrypto" or not name.startswith("pytest_qcrypto."):
            continue
        name = name.removeprefix("pytest_qcrypto.")
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name and name != module_name(path):
            out.add(name)
    return out


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if module_name(p) != "")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: module_name(p))
def test_imports_point_down_the_list(path):
    me = module_name(path)
    up = sorted(n for n in package_imports(path) if layer(n) >= layer(me)
                and not n.startswith(f"{me}.") and not (me == "backends" and n.startswith("backends.")))
    assert not up, f"{me} (layer {layer(me)}) imports {up}, which are not below it"


@pytest.mark.parametrize("path", [p for p in SOURCES if layer(module_name(p)) < PYTEST_SIDE],
                         ids=lambda p: module_name(p))
def test_the_core_never_imports_pytest(path):
    bad = sorted(n for n in imports(path) if n.split(".")[0] in ("pytest", "_pytest", "xdist"))
    assert not bad, f"{module_name(path)} is core but imports {bad}"


def test_no_module_is_over_about_400_lines():
    long = {module_name(p): n for p in SOURCES
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 425}
    assert not long, long


def test_kind_is_asked_only_in_the_catalog():
    offenders = [f"{p.relative_to(PACKAGE)}:{i}" for p in SOURCES if module_name(p) != "catalog"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if "kind ==" in line or "kind !=" in line]
    assert not offenders, offenders
