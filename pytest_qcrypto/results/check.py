"""The type checks of a results file's fields, each failure naming the field
(``results[3].size``): what :mod:`pytest_qcrypto.results.store` reads with.  Nothing here
imports pytest."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.results import strictjson
from pytest_qcrypto.results.model import MAX_ROUND_S, ResultsError


def _is_number(v: object) -> bool:
    """A finite int or float (not a bool); an int beyond the float range is not one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _whole(low: int, high: int) -> Callable[[object], bool]:
    return lambda v: _is_int(v) and low <= v <= high  # type: ignore[operator]


def _seconds(low: float) -> Callable[[object], bool]:
    """A list of seconds, each finite, at least ``low`` and at most ``MAX_ROUND_S``."""
    return lambda v: isinstance(v, list) and all(_is_number(x) and low <= x <= MAX_ROUND_S
                                                 for x in v)


def _show(value: object) -> str:
    """A value of the file for a message: JSON, cut to 60 characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        return settings.shown_value(value)
    if isinstance(value, strictjson.Huge):
        return repr(value)
    try:
        return json.dumps(value)[:60]
    except (TypeError, ValueError):
        return f"{value!r:.60}"


class _Checker:
    """Type checks of one parsed file, each failure naming the field: ``results[3].size``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, problem: str) -> ResultsError:
        return ResultsError(f"{self.path}: {problem}")

    def get(self, obj: Mapping[str, Any], key: str, where: str, kind: str,
            test: Callable[[Any], bool], default: Any = ...) -> Any:
        if key not in obj:
            if default is ...:
                raise self.fail(f"{where}{key} is missing")
            return default
        value = obj[key]
        if not test(value):
            raise self.fail(f"{where}{key} must be {kind}, not {_show(value)}")
        return value
