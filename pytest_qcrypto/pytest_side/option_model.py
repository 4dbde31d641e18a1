"""One row of the option table (:mod:`pytest_qcrypto.pytest_side.options`): :class:`Option`,
and the readers that import their module only when first used (:func:`_reader`), so that
the table costs nothing of the package when a plain pytest run loads it.  The pytest side.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any


def _module(name: str) -> ModuleType:
    """``pytest_qcrypto.NAME``, imported when a reader or a help text first needs it."""
    return importlib.import_module(f"pytest_qcrypto.{name}")


def _reader(module: str, function: str) -> Callable[..., Any]:
    """A reader that imports ``pytest_qcrypto.MODULE`` and calls its ``FUNCTION`` when used."""
    def read(*args: Any, **kwargs: Any) -> Any:
        return getattr(_module(module), function)(*args, **kwargs)

    read.__name__ = read.__qualname__ = function
    read.__doc__ = f"``pytest_qcrypto.{module}.{function}``, imported on first use."
    return read


@dataclass(frozen=True)
class Option:
    """One option and/or ini key.

    ``flag`` is the command-line option (None: an ini key only), ``ini`` its
    ini key (None: none); ``ini_type`` is pytest's ini type (``None`` for a
    string, ``"args"``, ``"linelist"``, ``"bool"``).  ``parse`` reads a value
    (its first argument the value as given, then where it came from; a few take
    more, see their docstrings); None when the value is read with others
    (``--qcrypto-unit`` ... by :func:`render.output_of`) or is a flag or a path.
    ``help`` is text, or a function that builds it when the options are
    declared (so that choices come from the registries).
    """

    flag: str | None
    help: str | Callable[[], str]
    ini: str | None = None
    ini_help: str = ""
    ini_type: str | None = None
    metavar: str | None = None
    action: str | None = None
    default: Any = None
    parse: Callable[..., Any] | None = None
    hidden: bool = False

    @property
    def dest(self) -> str:
        """The name of the value on ``config.option`` (``qcrypto_min_time``), or the ini key."""
        return (self.flag or "").lstrip("-").replace("-", "_") or str(self.ini)

    @property
    def ini_default(self) -> Any:
        return {"args": [], "linelist": [], "bool": False}.get(str(self.ini_type))

    def help_text(self) -> str:
        return self.help() if callable(self.help) else self.help
