"""Crypto plugins: the backends that do the work being measured.

qcrypto calls a crypto backend a *plugin* (``--qcrypto-plugin openssl``); in
this code base the class is :class:`CryptoPlugin`.  It is unrelated to a
*pytest* plugin, except that pytest plugins (a ``conftest.py``, an installed
package) add crypto plugins through the ``pytest_qcrypto_plugins`` hook.

A crypto plugin answers three questions cheaply and lazily, importing its
library only when asked: is it usable (:meth:`CryptoPlugin.probe`), which
library and version does it wrap (:meth:`CryptoPlugin.version`), which catalog
algorithms does it support (:meth:`CryptoPlugin.supported`, asked of the
library itself).  :meth:`CryptoPlugin.open` gives a keyed :class:`Context`: a
software context, a /dev/crypto session or an AF_ALG socket.

The shared types live in :mod:`pytest_qcrypto.backends.base` and are
re-exported here.  A built-in plugin is one module of this package that names
its classes in a module-level ``PLUGINS = [MyPlugin]`` list and gives each a
``default_rank`` (the default order, smaller first): :func:`builtin_plugins`
finds it, nothing else needs to know.  Modules without ``PLUGINS`` (helpers
such as ``cryptodev_abi``) are not plugins.  A plugin of your own goes in your
``conftest.py`` or package: return an instance from ``pytest_qcrypto_plugins``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.resources
import pkgutil
from functools import cache

from pytest_qcrypto.backends.base import (
    AuthenticationError,
    Context,
    CryptoPlugin,
    NullRequest,
    Runner,
    Unavailable,
    Unsupported,
    Workload,
    describe_implementations,
    implementation_text,
)

__all__ = [
    "AuthenticationError", "Context", "CryptoPlugin", "NullRequest", "Runner", "Unavailable", "Unsupported",
    "Workload", "builtin_plugins", "default_order", "describe_implementations",
    "implementation_text",
]

#: The module-level name that makes a module of this package a plugin module.
MARKER = "PLUGINS"


@cache
def _declared() -> tuple[tuple[str, tuple[tuple[int, str], ...]], ...]:
    """``(module, ((default_rank, name), ...))`` of each module of this package that
    assigns :data:`MARKER` at module level, read from its source without importing it
    (so that ``--help`` and a run that measures nothing import no plugin module)."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        source = None if info.ispkg else _source(info.name)
        if not source or MARKER not in source:
            continue
        tree = ast.parse(source)
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        listed = [e.id for n in tree.body if isinstance(n, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == MARKER for t in n.targets)
                  and isinstance(n.value, (ast.List, ast.Tuple))
                  for e in n.value.elts if isinstance(e, ast.Name)]
        if listed:
            found.append((info.name, tuple(_rank_and_name(classes.get(c)) for c in listed)))
    return tuple(found)


def _source(module: str) -> str | None:
    """The text of this package's module ``module`` (None if it has no ``.py`` file).

    Read as a package resource, not through the module's loader: when pytest
    rewrites the asserts of an installed plugin, its loader (pytest's
    ``AssertionRewritingHook``) has no ``get_source``.
    """
    try:
        return (importlib.resources.files(__name__) / f"{module}.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _rank_and_name(node: ast.ClassDef | None) -> tuple[int, str]:
    """The literal ``default_rank`` and ``name`` of a plugin class (1000 and "" if absent)."""
    values: dict[str, object] = {}
    for stmt in node.body if node is not None else ():
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(t, ast.Name) and isinstance(stmt.value, ast.Constant):
                    values[t.id] = stmt.value.value
    rank, name = values.get("default_rank", 1000), values.get("name", "")
    return (rank if isinstance(rank, int) else 1000), str(name)


def default_order() -> list[str]:
    """Names of the built-in plugins in default order (``openssl``, ``hashlib``, ...),
    for help text; imports no plugin module."""
    return [name for _, name in sorted(p for _, plugins in _declared() for p in plugins)]


def builtin_plugins() -> list[CryptoPlugin]:
    """The plugins that ship with pytest-qcrypto, in default order.

    Every module of this package with a module-level ``PLUGINS`` list is imported and
    each class it lists instantiated; they are sorted by ``default_rank`` (then name).
    The default plugin (no ``--qcrypto-plugin`` given) is the first of these that is
    available: ``openssl``, ``hashlib``, ``pycryptodome``, ...
    """
    classes: list[type[CryptoPlugin]] = []
    for module_name, _ in _declared():
        module = importlib.import_module(f"{__name__}.{module_name}")
        classes.extend(getattr(module, MARKER, ()))
    return [cls() for cls in sorted(classes, key=lambda c: (c.default_rank, c.name))]
