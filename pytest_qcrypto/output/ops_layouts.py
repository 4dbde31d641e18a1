"""``openssl speed``'s layout for the tables without a buffer size (signatures, key
agreement, KEMs, RSA encryption, KDFs): seconds per operation, then operations per second.

``openssl speed`` 3.5 (apps/speed.c) prints its KEMs and its newer signatures as::

                                   keygen    encaps    decaps keygens/s  encaps/s  decaps/s
                         ML-KEM-768 0.000027s 0.000017s 0.000026s   37542.4   59259.0   38383.0

(``%31s`` then the columns; each row ``%27s`` then `` %8.6fs`` per operation and `` %9.1f``
per rate).  :func:`openssl_ops_lines` draws every size-less table that way, a header line
per run of tables with the same operations (``sign verify sign/s verify/s`` for
signatures, ``keygen derive keygens/s derive/s`` for key agreement, whose ``openssl speed``
row ``op op/s`` is derive alone); the row label is the algorithm, ``[plugin]`` appended
when the tables hold more than one plugin.  Nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import groupby

from pytest_qcrypto.output.tables import MARKERS, SKIPPED, Cell, Table, notes

#: The width ``openssl speed`` gives a KEM's or signature's row label (``%27s``).
LABEL_WIDTH = 27
#: The rate columns' names where openssl's differ from ``OPERATION/s``.
RATE_NAMES = {"keygen": "keygens/s"}


def rate_name(operation: str) -> str:
    """``sign/s``, ``keygens/s``: openssl speed's name of an operation's rate column."""
    return RATE_NAMES.get(operation, f"{operation}/s")


def _label(table: Table, plugin: str, with_plugin: bool) -> str:
    return f"{table.algorithm}[{plugin}]" if with_plugin else table.algorithm


def _cells(cell: Cell | None) -> tuple[str, str]:
    """The seconds per operation (`` %8.6fs``) and the rate (`` %9.1f``) of a cell, or its
    marker in both."""
    if cell is None or cell.measurement is None:
        marker = MARKERS[SKIPPED] if cell is None else MARKERS.get(cell.status, "?")
        return f"{marker:>10}", f"{marker:>10}"
    rate = cell.measurement.ops_per_s
    return f" {1 / rate:8.6f}s", f" {rate:9.1f}"


def openssl_ops_lines(tables: Sequence[Table]) -> list[str]:
    """The size-less ``tables`` in ``openssl speed``'s layout (see the module's text), with
    the marker notes of each run of tables, naming rows by their labels."""
    with_plugin = len({p for t in tables for p in t.plugins}) > 1
    lines: list[str] = []
    for operations, group in groupby(tables, key=lambda t: t.operations):
        block = list(group)
        rows = [(_label(t, p, with_plugin), t, p) for t in block for p in t.plugins]
        width = max([LABEL_WIDTH, *(len(label) for label, _, _ in rows)])
        lines.append(" " * width + "".join(f"{o:>10}" for o in operations)
                     + "".join(f"{rate_name(o):>10}" for o in operations))
        for label, t, p in rows:
            pairs = [_cells(t.cells.get((p, o))) for o in operations]
            lines.append(f"{label:>{width}}" + "".join(s for s, _ in pairs)
                         + "".join(r for _, r in pairs))
        for t in block:
            labels = {p: _label(t, p, with_plugin) for p in t.plugins}
            lines.extend(notes(replace(t, plugins=tuple(labels.values()), cells={
                (labels[p], o): c for (p, o), c in t.cells.items() if p in labels})))
    return lines
