"""What one timed cell is: :class:`Measurement` (a cell's count and rounds, its figure in
KiB/s or ops/s) and :class:`WorkerRecord` (one process's or thread's part of it).

:mod:`pytest_qcrypto.measure.harness` makes them (and names them too, as it always has);
the results file keeps them (:mod:`pytest_qcrypto.results.model`).  Plain Python, no pytest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_qcrypto.algorithms import catalog

#: 1 KiB, the unit of qcrypto's table (KiB/s); kB/s would be 1000.
KIB = 1024


@dataclass(frozen=True)
class WorkerRecord:
    """One ``--qcrypto-jobs`` process's part of a multi-job :class:`Measurement`.

    ``count`` operations in every round; per round, its own wall seconds (its
    start to its end), CPU seconds and KiB/s (1 KiB = 1024 bytes).
    """

    count: int
    rounds_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    kib_per_s: tuple[float, ...]


@dataclass(frozen=True)
class Measurement:
    """The result of timing one (algorithm, plugin, size, direction).

    ``count`` iterations over buffers of ``size`` bytes ran in every round
    (each is :attr:`operations` / ``count`` operations: 2 for a ``roundtrip``,
    an encryption and a decryption, else 1); ``rounds_s`` and ``cpu_s`` are the
    wall and CPU seconds of each round.
    ``plugin`` is the name as the user typed it, ``canonical_plugin`` the
    plugin it resolved to; ``driver`` names the implementation when the plugin
    can tell (kernel plugins).

    ``jobs`` is the number of processes that ran each round at once
    (``--qcrypto-jobs``; ``count`` is then the operations of all of them and
    each round the common window), ``workers`` what each of them did (empty
    for one job).  ``calibration_note`` says why rounds too short to trust
    were kept (:attr:`Timing.note`; empty: they were not).  ``figure_only``
    marks a measurement rebuilt from a saved figure without counts (schema 1
    results): its count and rounds are not real.  ``iv`` is the hex text of the
    cipher's IV, or of the first AEAD nonce (empty for digests and MACs; never
    the key).  These five, and ``threads`` and ``one_thread_bps``
    (:mod:`pytest_qcrypto.measure.threads`), take no part in comparing measurements.
    """

    algorithm: str
    plugin: str
    size: int
    direction: str
    count: int
    rounds_s: tuple[float, ...]
    cpu_s: tuple[float, ...] = ()
    canonical_plugin: str = ""
    operation: str = ""
    driver: str | None = None
    hardware: bool | None = None
    jobs: int = field(default=1, compare=False)
    workers: tuple[WorkerRecord, ...] = field(default=(), compare=False)
    calibration_note: str = field(default="", compare=False)
    figure_only: bool = field(default=False, compare=False)
    iv: str = field(default="", compare=False)
    #: threads that ran each round at once (``--qcrypto-threads``; then ``workers`` holds
    #: each thread's part) and the bytes per second of the same cell in one thread
    threads: int = field(default=1, compare=False)
    one_thread_bps: float | None = field(default=None, compare=False)
    #: of the threads' time, the share they waited for a CPU held by other work (None: unknown)
    threads_cpu_wait: float | None = field(default=None, compare=False)
    #: ``--qcrypto-measure=instructions``: the instructions one operation took and how they
    #: were counted (:class:`pytest_qcrypto.measure.counting.Counted`); None: timed.  A
    #: counted measurement has one nominal round, its instructions at one per nanosecond
    #: (:func:`pytest_qcrypto.measure.counting.nominal_rounds`), so that its rate is work per
    #: 10**9 instructions: higher is still better.
    counted: Any = field(default=None, compare=False)
    #: CPU seconds of the reference workload timed right after each round (empty: not
    #: timed; :mod:`pytest_qcrypto.measure.reference`)
    reference_s: tuple[float, ...] = field(default=(), compare=False)
    #: seconds its rounds spanned when they were taken in turn with the other cells of the
    #: run (:mod:`pytest_qcrypto.measure.spread`); 0.0: taken back to back
    spread_s: float = field(default=0.0, compare=False)
    #: ``--qcrypto-unit=cpb``: the cycles per second its figures convert with (a saved
    #: file's :class:`pytest_qcrypto.measure.cycles.CycleRate`); None: this machine's
    cycle_rate: Any = field(default=None, compare=False)

    @property
    def operations(self) -> int:
        """Operations in each round: ``count`` iterations x the operations of one iteration
        of :attr:`direction` (:data:`pytest_qcrypto.algorithms.catalog.OPERATIONS_PER_ITERATION`: 2 for
        a round trip, as FreeBSD cryptotest counts its crypts; else 1)."""
        return self.count * catalog.OPERATIONS_PER_ITERATION.get(self.direction, 1)

    @property
    def median_s(self) -> float:
        """Wall seconds of the median round."""
        import statistics  # here: a counting child (measure/counting_child.py) needs no median

        return statistics.median(self.rounds_s)

    @property
    def median_cpu_s(self) -> float:
        """CPU seconds of the median round (by wall time); 0.0 when not recorded."""
        if not self.cpu_s:
            return 0.0
        order = sorted(range(len(self.rounds_s)), key=self.rounds_s.__getitem__)
        return self.cpu_s[order[(len(order) - 1) // 2]]

    @property
    def bytes_per_second(self) -> float:
        """Throughput of the median round, bytes per second: :attr:`operations` x ``size``
        over the median round (both directions of a round trip count)."""
        return self.operations * self.size / self.median_s

    @property
    def kib_per_s(self) -> float:
        """Throughput of the median round in KiB/s (1 KiB = 1024 bytes): the table's cell."""
        return self.bytes_per_second / KIB

    @property
    def ops_per_s(self) -> float:
        """Operations per second of the median round (:attr:`operations` over it): the figure
        of the kinds without a buffer size (signatures, KEMs, KDFs...)."""
        return self.operations / self.median_s

    @property
    def rate(self) -> float:
        """The median round's work per second in the cell's own unit of work: bytes (a sized
        cell, :attr:`bytes_per_second`) or operations (size 0, :attr:`ops_per_s`).  What the
        regression gate compares (a ratio of two rates is the same in KiB/s)."""
        return self.operations * (self.size or 1) / self.median_s

    @property
    def sized(self) -> bool:
        """Whether this is a cell with a buffer size: ``size`` 0 marks the cells of the kinds
        without one (``KindRules.sized`` False), whose figure is in ops/s."""
        return self.size > 0

    @property
    def unit(self) -> str:
        """The unit of :attr:`figure`: ``KiB/s`` for a sized cell, ``ops/s`` for a size-less one
        (the catalog's ``KindRules.unit``)."""
        return "KiB/s" if self.sized else "ops/s"

    @property
    def figure(self) -> float:
        """The cell's figure in :attr:`unit`: :attr:`kib_per_s` or :attr:`ops_per_s`.  What the
        gate, floors, tables and plots compare."""
        return self.kib_per_s if self.sized else self.ops_per_s

    @property
    def spread(self) -> float:
        """Slowest round / fastest round (1.0 = no spread)."""
        return max(self.rounds_s) / min(self.rounds_s)
