"""Does the work scale over threads?  The scaling line of a ``--qcrypto-threads`` cell.

A cell measured in N threads (:mod:`pytest_qcrypto.measure.threads`) also has the figure of the
same cell in one thread, measured in the same item with the same settings.  Their ratio
says whether the plugin lets the threads run at once:

* below :data:`HELD_BELOW` (1.3x): the threads ran one at a time: ``the GIL is held``
  (CPython's global interpreter lock, or a lock of the library: the line cannot tell
  which);
* at least 1.3x and at least :data:`RELEASED_SHARE` (0.6) x min(N, CPUs): ``the GIL is
  released``: the threads ran side by side on the CPUs there are (2 threads on 2 CPUs:
  from 1.3x; 4 threads on 2 CPUs: also from 1.3x, as no more than 2 can run at once; 4
  threads on 4 CPUs: from 2.4x);
* in between: ``the GIL is partly released`` (released for part of the work: hashlib
  releases it only for buffers of at least 2048 bytes, a mix of sizes does this).

A ratio below 1.3x says nothing when the threads could not have run side by side anyway:
when they waited :data:`BUSY_WAIT` (20%) or more of their time for a CPU held by other work
(Linux schedstat; a thread waiting for the GIL sleeps, it does not wait for a CPU), the line
says so and ``cannot tell whether the GIL is released``; with a single CPU, ``one CPU:
cannot tell whether the GIL is released``.  The CPUs are those this
process may run on (its affinity mask), so a report of another machine's results judges by
this machine's CPUs.  Nothing here imports pytest.
"""

from __future__ import annotations

import os
from typing import Any

#: N threads at less than this many times one thread's figure: they ran one at a time.
HELD_BELOW = 1.3
#: N threads at least this share of min(N, CPUs) times one thread's figure: side by side.
RELEASED_SHARE = 0.6
#: Threads that waited this share of their time for a CPU held by other work (Linux
#: schedstat) and did not scale: the machine was busy, so the ratio cannot tell.
BUSY_WAIT = 0.2


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def verdict(ratio: float, threads: int, cpus: int, wait: float | None = None) -> str:
    """The words in brackets for ``threads`` threads at ``ratio`` times one thread's figure
    on ``cpus`` CPUs, whose threads waited the share ``wait`` of their time for a CPU held
    by other work (None: not known); see the module's docstring for the thresholds."""
    if ratio < HELD_BELOW:
        if wait is not None and wait >= BUSY_WAIT:
            return (f"the threads waited {wait * 100:.0f}% of their time for a CPU held by "
                    "other work: cannot tell whether the GIL is released")
        return ("the GIL is held" if cpus > 1
                else "one CPU: cannot tell whether the GIL is released")
    if ratio >= RELEASED_SHARE * min(threads, cpus):
        return "the GIL is released"
    return "the GIL is partly released"


def scaling(m: Any, cpus: int | None = None) -> str | None:
    """``threads 4: 3.7x of one thread (the GIL is released)`` for a measurement (a
    :class:`pytest_qcrypto.measure.harness.Measurement`) of several threads with its one-thread
    figure; None for any other."""
    one = m.one_thread_bps
    if m.threads <= 1 or not one or one <= 0:
        return None
    ratio = m.rate / one  # bytes/s, or ops/s for a size-less cell
    return (f"threads {m.threads}: {ratio:.1f}x of one thread "
            f"({verdict(ratio, m.threads, cpus or usable_cpus(), m.threads_cpu_wait)})")


def table_notes(table: Any) -> list[str]:
    """Under a table (a :class:`pytest_qcrypto.output.tables.Table`): per row measured in threads,
    what its figures are, then the scaling line of each of its cells, in column order (the
    sizes, or a size-less table's operations)."""
    out: list[str] = []
    cpus = usable_cpus()
    columns = getattr(table, "columns", table.sizes)
    for p in table.plugins:
        cells = [(s, table.cells.get((p, s))) for s in columns]
        measured = [(s, c.measurement) for s, c in cells
                    if c is not None and c.measurement is not None]
        for n in sorted({m.threads for _, m in measured} - {1}):
            what = "throughput" if getattr(table, "sized", True) else "operations per second"
            out.append(f"  {p}: the summed {what} of {n} threads at once "
                       f"(--qcrypto-threads={n})")
        for s, m in measured:
            line = scaling(m, cpus)
            if line:
                out.append(f"  {p} {s}{' bytes' if isinstance(s, int) else ''}: {line}")
    return out
