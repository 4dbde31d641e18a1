"""The ``cryptotest`` layout: FreeBSD cryptotest's line per algorithm and size.

Registered with :func:`pytest_qcrypto.output.layouts.layout` as ``--qcrypto-format=cryptotest``
(the layout of the ``cryptotest`` command).  A line whose figure is an outlier among its
row's neighbours (:mod:`pytest_qcrypto.output.outliers`) ends with a mark that says so.
Nothing here imports pytest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pytest_qcrypto.algorithms import cryptotest_names
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output import outliers
from pytest_qcrypto.output.layouts import Figures, layout, plain_notes
from pytest_qcrypto.output.tables import FAILED, SKIPPED, Cell, Table, status_reason


#: FreeBSD cryptotest's result line (tools/tools/crypto/cryptotest.c): seconds, operations,
#: name, size in bytes, bytes per second, and that in Mb/sec (x 8 / 1024 / 1024).
CRYPTOTEST_LINE = "%8.3f sec, %7d %6s crypts, %7d bytes, %8.0f byte/sec, %7.1f Mb/sec"


def crypt_line(seconds: float, operations: int, name: str, size: int) -> str:
    """cryptotest's line for ``operations`` operations of ``size`` bytes in ``seconds``
    (wall): byte/sec = operations x size / seconds, Mb/sec = byte/sec x 8 / 1024 / 1024
    (2^20 bits).  ``0.128886, 2048, "des", 8`` gives
    ``   0.129 sec,    2048    des crypts,       8 bytes,   127120 byte/sec,     1.0 Mb/sec``.
    A time of 0 (a clock that did not advance) gives ``inf``, never an exception."""
    rate = operations * size / seconds if seconds > 0 else math.inf
    return CRYPTOTEST_LINE % (seconds, operations, name, size, rate, rate * 8 / 1024 / 1024)


#: Why a measurement saved without counts and seconds (schema 1 results) has no line.
FIGURE_ONLY = "saved as a figure only (schema 1 results): no count or seconds to print"


def _median_round(rounds: Sequence[float]) -> int:
    """The index of the median round (the lower of the two middle ones when even)."""
    order = sorted(range(len(rounds)), key=rounds.__getitem__)
    return order[(len(order) - 1) // 2]


def freebsd_jobs_line(m: Measurement, name: str) -> str | None:
    """For a measurement of several processes (``-t N``, ``--qcrypto-jobs N``): the line
    FreeBSD's cryptotest would print, whose seconds are the processes' own times summed
    and whose operations are all of theirs (so its byte/sec is a per-process average);
    None for one process or without per-process records."""
    if m.jobs <= 1 or not m.workers:
        return None
    i = _median_round(m.rounds_s)
    per_iteration = m.operations / m.count if m.count else 1
    seconds = sum(w.rounds_s[i] for w in m.workers)
    ops = round(sum(w.count for w in m.workers) * per_iteration)
    return (crypt_line(seconds, ops, name, m.size)
            + f"  (FreeBSD's -t {m.jobs} arithmetic: the processes' times summed)")


def hexdump(data: bytes) -> list[str]:
    """cryptotest's hexdump: 16 bytes a line, ``0000: 01 02 ...``."""
    return [f"{off:04x}:" + "".join(f" {b:02x}" for b in data[off:off + 16])
            for off in range(0, len(data), 16)]


def cryptotest_verbose(m: Measurement) -> list[str]:
    """cryptotest's ``-v`` facts before a result: the device (the driver, else the plugin),
    the count (per process) and size, and the IV (ciphers); never the key."""
    lines = [f"device = {m.driver or m.plugin}",
             f"count = {m.count // max(m.jobs, 1)}, size = {m.size}"]
    if m.iv:
        lines += ["iv:", *hexdump(bytes.fromhex(m.iv))]
    return lines


def cryptotest_lines(tables: Sequence[Table], verbose: bool = False,
                     done: Callable[[Table, str, object], bool] | None = None) -> list[str]:
    """One cryptotest line per measured (algorithm, plugin, size): algorithms in
    cryptotest's order (others after, as they come), then plugins, then sizes.

    Names are cryptotest's (``3des``, ``md5`` for HMAC-MD5) where it has one.  A table of
    several plugins (rows) puts ``plugin: NAME`` before each one's lines, since cryptotest's
    line has no place for it.  Skipped cells are left out (with ``verbose``, a line says why); a failed cell is a line with
    its reason.  ``verbose`` puts :func:`cryptotest_verbose` before each result and a
    calibration note after it.  Several processes: :func:`freebsd_jobs_line` under it.  An
    outlier's line (:mod:`.outliers`) ends ``  ? outlier: 17% of the mean of its neighbours
    at 128 and 512 bytes``.
    ``done`` (a run still going, :attr:`Figures.done`): the lines up to the first cell not
    finished, as FreeBSD's cryptotest prints each line once it is measured (a line waits
    for the next figure of its row, which may mark it an outlier; a ``verbose`` skip line,
    which names every size of its row, waits for its row).
    """
    lines: list[str] = []
    ordered = sorted(enumerate(tables), key=lambda it: (cryptotest_names.order(
        it[1].algorithm), it[0]))
    for _, t in ordered:
        def finished(p: str, s: object) -> bool:
            return done is None or done(t, p, s)  # noqa: B023 (called in this iteration)

        if not t.sized:  # cryptotest's line is bytes per second: no place for ops/s
            if not all(finished(p, c) for p in t.plugins for c in t.columns):
                return lines
            lines.append(f"{t.algorithm}: no cryptotest line (no buffer size: its ops/s are "
                         "in --qcrypto-format=qcrypto or openssl)")
            continue
        name = cryptotest_names.display_name(t.algorithm)
        odd = outliers.outliers(t)
        for p in t.plugins:
            said: set[str] = set()
            if len(t.plugins) > 1:
                lines.append(f"plugin: {p}")
            for i, s in enumerate(t.sizes):
                if not finished(p, s) or not _settled(t, p, t.sizes[i + 1:], finished):
                    return lines
                cell = t.cells.get((p, s))
                m = cell.measurement if cell is not None else None
                if m is None or m.figure_only:
                    status, reason = _why(cell, t)
                    if status == FAILED:
                        lines.append(f"{name} {s} bytes in {p} failed: {reason}")
                    elif verbose and reason not in said:  # once, with the sizes it skips
                        if not all(finished(p, x) for x in t.sizes):
                            return lines
                        said.add(reason)
                        lines.append(f"skipping {name} in {p} ({_sizes_of(t, p, reason)}): "
                                     f"{reason}")
                    continue
                if verbose:
                    lines += cryptotest_verbose(m)
                lines.append(crypt_line(m.median_s, m.operations, name, s)
                             + (f"  {outliers.MARK} outlier: {odd[(p, s)]}" if (p, s) in odd
                                else ""))
                jobs = freebsd_jobs_line(m, name)
                lines += [jobs] if jobs else []
                if verbose and m.calibration_note:
                    lines.append(f"note: {m.calibration_note}")
    return lines


def _settled(t: Table, plugin: str, later: Sequence[int],
             finished: Callable[[str, object], bool]) -> bool:
    """Whether the sizes ``later`` in ``plugin``'s row are finished up to the next one with
    a figure (the neighbour that may make a figure an outlier), or to the row's end."""
    for size in later:
        if not finished(plugin, size):
            return False
        cell = t.cells.get((plugin, size))
        if cell is not None and cell.measurement is not None:
            return True
    return True


def _why(cell: Cell | None, t: Table) -> tuple[str, str]:
    """Why a cell has no cryptotest line: its status and reason (a figure-only one: skipped)."""
    if cell is not None and cell.measurement is not None and cell.measurement.figure_only:
        return SKIPPED, FIGURE_ONLY
    return status_reason(cell, t)


def _sizes_of(t: Table, plugin: str, reason: str) -> str:
    """``all sizes`` or ``size 8, 16``: where ``plugin``'s cells were skipped for ``reason``."""
    sizes = [str(s) for s in t.sizes if _why(t.cells.get((plugin, s)), t) == (SKIPPED, reason)]
    return "all sizes" if len(sizes) == len(t.sizes) else f"size {', '.join(sizes)}"


@layout("cryptotest", "(FreeBSD cryptotest's line per algorithm and size, Mb/sec = 2^20 "
        "bits; no --qcrypto-unit with it)", unit="MiB/s",
        unit_why="cryptotest's lines give byte/sec and Mb/sec (2^20 bits per second)",
        streams="lines")
def cryptotest_layout(figures: Figures) -> list[str]:
    if figures.done is not None:  # a run still going: no notes yet
        return cryptotest_lines(figures.tables, figures.verbose, figures.done)
    return cryptotest_lines(figures.tables, figures.verbose) + plain_notes(figures)
