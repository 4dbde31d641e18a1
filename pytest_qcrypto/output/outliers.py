"""Outlier cells: a figure far under both of its neighbours in its row, marked where shown.

Throughput rises with the buffer size, or levels off; it does not fall to a fifth between
128 and 512 bytes.  A FreeBSD ``cryptotest -z`` line such as ``3des 256 bytes 3436664
byte/sec`` between ``19926153`` at 128 bytes and more at 512 is one round disturbed by
other work, not a property of 3DES.  A cell is an outlier when its bytes per second are
under the smaller of its two measured neighbours' (the sizes left and right of it in the
same row) divided by :data:`FACTOR`.  Only a fall is marked: other work slows a round, it
never speeds one up, so a figure far above both neighbours means that they are the
disturbed ones.  A cell at either end of a row has one neighbour and is never marked, and
a row that rises or levels off never has one (each figure lies between its neighbours').
Size-less tables (ops/s of different operations) have no such order and no outliers.
Nothing here imports pytest.
"""

from __future__ import annotations

from typing import Any

#: How far under both neighbours a figure must fall to be marked: under a third of the
#: smaller (the user's 3DES round above was under a fifth of it).
FACTOR = 3.0
#: The mark after an outlier's figure in a table, and before its note under the table.
MARK = "?"


def outliers(table: Any) -> dict[tuple[str, int], str]:
    """The outlier cells of ``table`` (a :class:`pytest_qcrypto.output.tables.Table`), each
    with the words that explain it: ``17% of the mean of its neighbours at 128 and 512
    bytes``."""
    if not table.sized:
        return {}
    found: dict[tuple[str, int], str] = {}
    for plugin in table.plugins:
        row = [(s, rate) for s in table.sizes if (rate := _rate(table.cells.get((plugin, s))))]
        for (left, a), (size, b), (right, c) in zip(row, row[1:], row[2:]):
            if b * FACTOR < min(a, c):
                share = b / ((a + c) / 2)
                found[(plugin, size)] = (f"{share * 100:.0f}% of the mean of its neighbours "
                                         f"at {left} and {right} bytes")
    return found


def _rate(cell: Any) -> float | None:
    """Bytes per second of a measured cell (None: none, or a figure of a failed test)."""
    m = getattr(cell, "measurement", None)
    if m is None or getattr(cell, "status", "") or m.figure_only or m.counted is not None:
        return None
    rate = m.bytes_per_second
    return rate if rate > 0 else None


def note(plugin: str, size: int, why: str) -> str:
    """The line under a table: ``  ? openssl (size 256) an outlier: 17% of ...``."""
    return f"  {MARK} {plugin} (size {size}) an outlier: {why}; measure it again"
