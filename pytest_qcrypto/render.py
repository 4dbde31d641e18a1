"""Rendering results as text: qcrypto's verbose block and its KiB/s tables.

The layout follows QNX's ``qcrypto speed``::

    Benchmarking 'sha256' digest on the following plugin(s): openssl, pycryptodome
    plugin: openssl
    executed 2097152 digests of size 16 bytes in 0.64 secs

    Benchmark results for 'sha256' digest (KiB/s):
    plugin           16         64      32768
    openssl    55381.58  154240.87  579293.17

Cells are the median round's ``count * size / seconds / 1024`` with two
decimals.  The label column is one wider than the longest plugin name; every
number column is two wider than the widest cell of the table.  A cell that was
not measured shows a marker from :data:`MARKERS`, explained under the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_qcrypto.harness import Measurement

SKIPPED, FAILED = "skipped", "failed"
#: Short markers for cells without a figure.
MARKERS = {SKIPPED: "-", FAILED: "x"}


@dataclass(frozen=True)
class Cell:
    """One table cell: a measurement, or a skipped / failed marker with its reason."""

    measurement: Measurement | None = None
    status: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Table:
    """The results of one algorithm in one direction: rows = plugins (as typed), columns = sizes."""

    algorithm: str
    kind: str  # "digest" or "cipher", the word of the header
    direction: str  # "digest", "encrypt" or "decrypt"
    plugins: tuple[str, ...]
    sizes: tuple[int, ...]
    cells: dict[tuple[str, int], Cell]


def _verb(table: Table) -> str:
    return {"digest": "digests", "encrypt": "encryptions", "decrypt": "decryptions"}[table.direction]


def header(table: Table) -> str:
    """``Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):``."""
    how = ", decrypt" if table.direction == "decrypt" else ""
    return f"Benchmark results for '{table.algorithm}' {table.kind}{how} (KiB/s):"


def verbose_block(table: Table) -> list[str]:
    """qcrypto's ``-v`` lines: the plugin list, then per plugin one line per measured size."""
    lines = [f"Benchmarking '{table.algorithm}' {table.kind} on the following plugin(s): "
             f"{', '.join(table.plugins)}"]
    for plugin in table.plugins:
        lines.append(f"plugin: {plugin}")
        for size in table.sizes:
            cell = table.cells.get((plugin, size))
            if cell is not None and cell.measurement is not None:
                m = cell.measurement
                lines.append(f"executed {m.count} {_verb(table)} of size {size} bytes "
                             f"in {m.median_s:.2f} secs")
    return lines


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return MARKERS[SKIPPED]
    if cell.measurement is not None:
        return f"{cell.measurement.kib_per_s:.2f}"
    return MARKERS.get(cell.status, "?")


def table_lines(table: Table) -> list[str]:
    """The header, the column line and one row per plugin, then the marker notes."""
    texts = {(p, s): _cell_text(table.cells.get((p, s))) for p in table.plugins
             for s in table.sizes}
    label_w = max(len(p) for p in ("plugin", *table.plugins)) + 1
    cell_w = max(len(t) for t in (*texts.values(), *(str(s) for s in table.sizes))) + 2
    lines = [header(table),
             "plugin".ljust(label_w) + "".join(str(s).rjust(cell_w) for s in table.sizes)]
    for p in table.plugins:
        lines.append(p.ljust(label_w) + "".join(texts[(p, s)].rjust(cell_w) for s in table.sizes))
    lines.extend(notes(table))
    return lines


def notes(table: Table) -> list[str]:
    """One line per distinct reason a cell has no figure, and the drivers of kernel rows."""
    out: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for p in table.plugins:
        for s in table.sizes:
            cell = table.cells.get((p, s))
            status = cell.status if cell is not None and cell.measurement is None else ""
            if cell is None:
                status, reason = SKIPPED, "not measured in this run"
            elif status:
                reason = cell.reason
            else:
                continue
            if (p, status, reason) in seen:
                continue
            seen.add((p, status, reason))
            sizes = [str(x) for x in table.sizes
                     if _status_reason(table.cells.get((p, x))) == (status, reason)]
            where = "all sizes" if len(sizes) == len(table.sizes) else f"size {', '.join(sizes)}"
            out.append(f"  {MARKERS[status]} {p} ({where}) {status}: {reason}")
    for p in table.plugins:
        drivers = {(c.measurement.driver, c.measurement.hardware)
                   for (q, _), c in table.cells.items()
                   if q == p and c.measurement is not None and c.measurement.driver}
        for driver, hw in sorted(drivers, key=str):
            kind = {True: "hardware", False: "software"}.get(hw, "hardware: unknown")  # type: ignore[arg-type]
            out.append(f"  {p}: driver {driver} ({kind})")
    return out


def _status_reason(cell: Cell | None) -> tuple[str, str]:
    if cell is None:
        return SKIPPED, "not measured in this run"
    if cell.measurement is not None:
        return "", ""
    return cell.status, cell.reason


def report(tables: Sequence[Table], verbose: bool) -> list[str]:
    """Every table (each preceded by its verbose block when ``verbose``), blank-line separated."""
    lines: list[str] = []
    for table in tables:
        if verbose:
            lines.extend(verbose_block(table))
            lines.append("")
        lines.extend(table_lines(table))
        lines.append("")
    return lines[:-1] if lines else lines
