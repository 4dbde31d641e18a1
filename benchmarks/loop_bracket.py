"""The hand-written tight loops of time_to_result.py, and the pytest plugin that times one just
before and just after a cell's own call, so that a side's figure is compared with the loop at
the moment it was measured.

time_to_result.py loads :class:`LoopBracket` into a pytest run through a ``conftest.py`` it
writes (:func:`conftest_text`); that run's benchmark items measure in their call phase (ours:
``qcrypto_context.measure``; pytest-benchmark's: ``benchmark(op)``), which a
``pytest_runtest_call`` wrapper surrounds.  Not part of the package.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator, Mapping
from itertools import repeat
from pathlib import Path
from typing import Any

import pytest

from accuracy import loop_hashlib_sha256, loop_pyca_sha256, time_loop  # beside this module

#: Runs of the loop per bracket side; its figure is their median.
RUNS = 3


def loop_pycryptodome_sha256(size: int) -> Callable[[int], None]:
    from Crypto.Hash.SHA256 import SHA256Hash

    data = os.urandom(size)

    def loop(n: int, new: Any = SHA256Hash, data: bytes = data) -> None:
        for _ in repeat(None, n):
            new(data).digest()

    return loop


#: The tight loop of each crypto plugin's sha256: ``LOOPS[plugin](size)(n)`` hashes ``n`` times.
LOOPS: dict[str, Callable[[int], Callable[[int], None]]] = {
    "openssl": loop_pyca_sha256, "hashlib": loop_hashlib_sha256,
    "pycryptodome": loop_pycryptodome_sha256}


def split_cell(cell: str) -> tuple[str, int]:
    """``openssl:16`` -> ``("openssl", 16)``."""
    plugin, size = cell.split(":")
    return plugin, int(size)


class LoopBracket:
    """Around the call of each item in ``cells`` (node id -> ``(cell, count)``, the cell as
    ``plugin:size``), the cell's tight loop at ``count`` operations: KiB/s, the median of
    :data:`RUNS` runs, once before the call (after one untimed run: in a fresh process the
    first tenth of a second of pyca's sha256 at 16 B ran a third slower, 12,300 against
    18,000 KiB/s, in two of three tries on the project's machine) and once after.  At the
    session's end the
    brackets go to ``out`` as JSON: ``{"before": {cell: KiB/s}, "after": {cell: KiB/s}}``."""

    def __init__(self, cells: Mapping[str, tuple[str, int]], out: str) -> None:
        self.cells, self.out = dict(cells), Path(out)
        self.before: dict[str, float] = {}
        self.after: dict[str, float] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        if item.nodeid not in self.cells:
            return (yield)
        cell, count = self.cells[item.nodeid]
        plugin, size = split_cell(cell)
        loop = LOOPS[plugin](size)  # built before the clock starts
        loop(count)  # warm-up, untimed: as our calibration runs come before our rounds
        self.before[cell] = time_loop(loop, count, size, RUNS)
        result = yield  # the item's own measurement; an exception propagates: no bracket
        self.after[cell] = time_loop(loop, count, size, RUNS)
        return result

    def pytest_sessionfinish(self) -> None:
        self.out.write_text(json.dumps({"before": self.before, "after": self.after}))


def conftest_text(cells: Mapping[str, tuple[str, int]], out: Path) -> str:
    """A ``conftest.py`` that registers a :class:`LoopBracket` of ``cells`` writing to ``out``
    (this folder appended to ``sys.path`` so that it finds this module)."""
    here = str(Path(__file__).resolve().parent)
    return (f'"""Written by benchmarks/time_to_result.py: the tight loop around {len(cells)} '
            f'cells."""\nimport sys\n\nsys.path.append({here!r})\n'
            "from loop_bracket import LoopBracket  # noqa: E402\n\n\n"
            "def pytest_configure(config):\n"
            f"    config.pluginmanager.register(LoopBracket({dict(cells)!r}, {str(out)!r}), "
            "'loop-bracket')\n")


def read_brackets(out: Path) -> tuple[dict[str, float], dict[str, float]]:
    """The (before, after) KiB/s by cell that a :class:`LoopBracket` wrote to ``out``."""
    found = json.loads(out.read_text())
    return found["before"], found["after"]
