"""The type checks of a results file's fields, each failure naming the field
(``results[3].size``): what :mod:`pytest_qcrypto.results.store` reads with.  Nothing here
imports pytest."""

from __future__ import annotations

import json
from datetime import datetime
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


def settings_of(doc: Mapping[str, Any], checker: _Checker) -> dict[str, Any]:
    """The file's ``settings`` (an object; absent: none), its run settings checked as the
    options check them: ``min_time_s`` (seconds, more than 0, at most
    :data:`~pytest_qcrypto.algorithms.settings.MAX_MIN_TIME`), ``rounds`` (1 to
    :data:`~pytest_qcrypto.algorithms.settings.MAX_ROUNDS`), ``count`` (1 to
    :data:`~pytest_qcrypto.algorithms.settings.MAX_COUNT`) and ``cycle_rate.hz`` (cycles a
    second, more than 0 and under 10^12), when present.  Raises ``ResultsError``."""
    got: dict[str, Any] = checker.get(doc, "settings", "", "an object",
                                      lambda v: isinstance(v, dict), {})
    checker.get(got, "min_time_s", "settings.", f"a number of seconds above 0, at most "
                f"{settings.MAX_MIN_TIME:g}",
                lambda v: _is_number(v) and 0 < v <= settings.MAX_MIN_TIME, None)
    checker.get(got, "rounds", "settings.", f"a whole number from 1 to {settings.MAX_ROUNDS}",
                _whole(1, settings.MAX_ROUNDS), None)
    checker.get(got, "count", "settings.", f"a whole number from 1 to {settings.MAX_COUNT}",
                _whole(1, settings.MAX_COUNT), None)
    rate = checker.get(got, "cycle_rate", "settings.", "an object",
                       lambda v: isinstance(v, dict), None)
    if rate is not None:
        checker.get(rate, "hz", "settings.cycle_rate.", "a number of cycles a second above "
                    "0 and under 10^12", lambda v: _is_number(v) and 0 < v < 1e12)
    return got


def created_of(doc: Mapping[str, Any], checker: _Checker) -> str:
    """The file's ``created``: a date and time in ISO 8601 (``2026-11-29T21:30:00Z``), or
    empty when absent.  Raises ``ResultsError``."""
    def iso(v: object) -> bool:
        if not isinstance(v, str):
            return False
        try:
            datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            return v == ""
        return True
    return checker.get(doc, "created", "", 'a date and time in ISO 8601 '
                       '("2026-11-29T21:30:00Z")', iso, "")
