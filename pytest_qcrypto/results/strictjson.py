"""Decoding JSON that a user hands in (a results file), strictly.

Python's :func:`json.loads` takes the last of two equal keys in one object
(``"complete": false, "complete": true`` reads as complete, where another
reader may take the first), and converts a whole number of any length with
``int()``: past 4300 digits that raises ``ValueError``, and a shorter one of
400 digits overflows the first float it meets (``OverflowError``).  Here a
key given twice is :class:`DuplicateKey`, and a whole number of more than
:data:`MAX_DIGITS` digits stays a :class:`Huge` placeholder, never converted,
that no type check takes for a number; :func:`first_huge` finds one anywhere
in a document, with its place (``results[3].size``).
"""

from __future__ import annotations

import json
from typing import Any

#: The most digits of a whole number that is converted (2**64 has 20).
MAX_DIGITS = 20


class DuplicateKey(ValueError):
    """A key given twice in one JSON object; ``key`` is the key."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


class Huge:
    """A whole number of more than :data:`MAX_DIGITS` digits, kept as its text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        digits = self.text.lstrip("-")
        return f"{self.text[:20]}... ({len(digits)} digits)"


def _whole(text: str) -> int | Huge:
    return Huge(text) if len(text.lstrip("-")) > MAX_DIGITS else int(text)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def loads(text: str) -> Any:
    """``text`` decoded; raises :class:`DuplicateKey` and what :func:`json.loads` raises
    (``json.JSONDecodeError``, ``RecursionError``).  ``NaN`` and ``Infinity`` are floats,
    as in :func:`json.loads`: a type check must refuse them where it wants a finite number.
    """
    return json.loads(text, object_pairs_hook=_unique, parse_int=_whole)


def is_huge(value: object) -> bool:
    """A :class:`Huge`, or an int (not a bool) of more than :data:`MAX_DIGITS` digits."""
    if isinstance(value, Huge):
        return True
    return (isinstance(value, int) and not isinstance(value, bool)
            and not -10**MAX_DIGITS < value < 10**MAX_DIGITS)


def _any_huge(doc: object) -> bool:
    """Whether :func:`first_huge` would find one: the same walk without the places (a results
    file of 300 cells holds some 40,000 values; naming each place costs more than the walk)."""
    stack = [doc]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is float or kind is str:  # most values: nothing to look into
            continue
        if kind is dict:
            stack.extend(value.values())  # type: ignore[union-attr]
        elif kind is list:
            stack.extend(value)  # type: ignore[arg-type]
        elif is_huge(value):
            return True
    return False


def first_huge(doc: object) -> tuple[str, object] | None:
    """The place (``results[3].size``, ``""`` for the top) and value of the first number in
    ``doc`` that :func:`is_huge`, in document order; None when there is none."""
    if not _any_huge(doc):
        return None
    stack: list[tuple[str, object]] = [("", doc)]
    while stack:  # a loop, not recursion: a document may nest as deep as json allows
        where, value = stack.pop()
        if is_huge(value):
            return where, value
        if isinstance(value, dict):
            stack += [(f"{where}.{k}" if where else str(k), v)
                      for k, v in reversed(value.items())]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
    return None
