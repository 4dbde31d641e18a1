"""Spread rounds in a pytest run that saves or compares: the matrix cells measured in turn.

A run with ``--qcrypto-save`` or ``--qcrypto-compare`` (timed, one process, one job and
thread, no fixed count, no isolation, no targets) measures the sized cells of its speed
matrix (``qcrypto::sha256[openssl-16]`` and the like) and of tests parametrized by the
``qcrypto`` marker together, when the first of them asks for its measurement: each cell's context is opened and checked (known answers, round
trip), then :func:`pytest_qcrypto.measure.spread.spread_rounds` takes their rounds in turn,
so that every cell's rounds sample the machine's drift over the run
(:mod:`pytest_qcrypto.measure.spread` says why and what was measured).  Each item then
takes its cell's measurement and is judged and reported as before; the gate judges two
spread sides by :mod:`pytest_qcrypto.gate.spread`.

A cell that cannot be opened, checked or measured here (an unavailable plugin, a wrong
known answer, a size the algorithm refuses) is left to its own item, which measures it
alone and says what went wrong.  A test's measurement of anything but its own case, tests
of your own that open contexts with the ``qcrypto`` fixture, and the kinds without a buffer
size are measured alone as before.  The settings (:class:`Spread`): at
least :data:`~pytest_qcrypto.measure.spread.SPREAD_ROUNDS` rounds (``--qcrypto-rounds``
asks for more), rounds of ``--qcrypto-min-time`` up to
:data:`~pytest_qcrypto.measure.spread.ROUND_S` s, spanning at least
:data:`~pytest_qcrypto.measure.spread.MIN_SPAN_S` s scaled by ``--qcrypto-min-time`` / 0.1 s.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import replace
from typing import Any

import pytest

from pytest_qcrypto.algorithms.cases import Case
from pytest_qcrypto.algorithms.settings import DEFAULT_MIN_TIME
from pytest_qcrypto.gate import spread as gate_spread
from pytest_qcrypto.measure import bench, limits, reference, spread as spreading
from pytest_qcrypto.measure.harness import Measurement

Key = tuple[str, str, int, bool, bool]


def settings_for(min_time: float, rounds: int) -> spreading.Spread:
    """The spread of a run of ``--qcrypto-min-time`` and ``--qcrypto-rounds`` (see module)."""
    return spreading.Spread(
        rounds=max(rounds, spreading.SPREAD_ROUNDS),
        round_s=min(min_time, spreading.ROUND_S),
        span_s=spreading.MIN_SPAN_S * min(min_time / DEFAULT_MIN_TIME, 1.0))


def key_of(case: Case) -> Key:
    return case.algorithm, case.plugin, case.size, case.decrypt, case.roundtrip


def pass_order(cases: list[Case]) -> list[Key]:
    """The order of the cells in each pass: a cell's peers next to it, grouped by algorithm,
    direction and size, each group where the cases first name it, the plugins in the cases'
    order within a group.  (Calibration keeps the cases' order, so that an interrupted run
    has measured the cells the table shows first.)

    Why: the gate compares a cell with its peers pass by pass
    (:func:`pytest_qcrypto.gate.spread.paired_change`), and this machine's speed moves within a
    tenth of a second too.  Measured on the project's development VM
    (``benchmarks/gate_drift.py``'s kept rounds, 2026-12-04): pass by pass, the log ratio of
    sha256 at 16 B in two plugins had a standard deviation of 0.20 to 0.22 with the peers
    seven cells (about 0.1 s) apart, and of 0.10 to 0.11 for cells next to each other."""
    first: dict[tuple[str, bool, bool, int], int] = {}
    for case in cases:
        first.setdefault((case.algorithm.lower(), case.decrypt, case.roundtrip, case.size),
                         len(first))
    return [key_of(c) for c in sorted(cases, key=lambda c: first[(
        c.algorithm.lower(), c.decrypt, c.roundtrip, c.size)])]


class SpreadCells:
    """The run's spread measurements, made when the first matrix cell asks (see module).

    ``opener(case)`` opens a :class:`~pytest_qcrypto.measure.bench.BenchContext` for a case,
    or returns None (not available here: its item will say why); ``timeout`` (seconds per
    cell, None: none) bounds the whole measurement at ``timeout`` times the cells.
    """

    def __init__(self, session: Callable[[], pytest.Session | None],
                 opener: Callable[[Case], bench.BenchContext | None],
                 spread: spreading.Spread, timeout: float | None,
                 case_of: Callable[[pytest.Item], Case | None],
                 say: Callable[[str], None] = lambda text: None,
                 record: Callable[[Case, Measurement], None] = lambda case, m: None) -> None:
        self._session = session
        self.case_of = case_of
        self._say = say
        self._record = record
        self._timed_out: dict[Key, BaseException] = {}
        self._opener = opener
        self.spread = spread
        self._timeout = timeout
        self._done = False
        self._measured: dict[Key, Measurement] = {}
        self.all: list[Measurement] = []  # every cell measured in turn, for the gate's peers

    def cases(self) -> list[Case]:
        """The sized cells of the session's items (the matrix's, the marker's), once each, in
    the items' order (``case_of``: :func:`pytest_qcrypto.pytest_side.matrix.case_of`, given
    by the run so that it is the function of the module that made the items)."""
        session = self._session()
        seen: dict[Key, Case] = {}
        for item in (session.items if session is not None else []):
            case = self.case_of(item)
            if case is not None and not case.operation and case.size > 0:
                seen.setdefault(key_of(case), case)
        return list(seen.values())

    def measurement(self, case: Case | None, size: int | None, way: dict[str, Any]
                    ) -> Measurement | BaseException | None:
        """The spread measurement of ``case`` (measuring every cell first, once), the
        timeout that ended its cell (to raise as its own measurement would), or None:
        measure it alone.  ``size`` and ``way`` are what the item asked for; a call that
        asks for something else than its case is measured alone."""
        if case is None or case.operation or size != case.size or \
                bool(way.get("decrypt")) != case.decrypt or \
                bool(way.get("roundtrip")) != case.roundtrip:
            return None
        if not self._done:
            self._done = True
            self._measure_all()
        key = key_of(case)
        return self._measured.pop(key, None) or self._timed_out.pop(key, None)

    def _measure_all(self) -> None:
        cases = self.cases()
        if len(cases) < 2:  # one cell has nothing to take turns with: measured alone
            return
        opened: list[bench.BenchContext] = []
        finish: dict[Hashable, Callable[[spreading.SpreadTiming], Measurement]] = {}

        def maker(case: Case) -> Callable[[], Any]:
            def make() -> Any:
                ctx = self._opener(case)
                if ctx is None:
                    raise _NotHere()
                opened.append(ctx)
                make_runner, finish[key_of(case)] = spreading.cell(
                    ctx, case.size, decrypt=case.decrypt, roundtrip=case.roundtrip)
                return make_runner()
            return make

        def failed(key: Hashable, exc: Exception) -> None:
            if isinstance(exc, _CellTimeout):  # measured alone it would hang again: say so
                self._timed_out[key] = exc.timeout  # type: ignore[index]

        def guard(call: Callable[[], Any]) -> Any:
            try:
                return limits.call_with_deadline(call, self._timeout)
            except limits.MeasurementTimeout as exc:
                for ctx in opened:  # the one it was in cannot be closed safely
                    ctx.abandoned = ctx.abandoned or ctx is opened[-1]
                raise _CellTimeout(exc) from None

        def keep(timings: dict[Hashable, spreading.SpreadTiming]) -> None:
            self._measured = {k: finish[k](t) for k, t in timings.items() if k in finish}
            self.all = list(self._measured.values())

        def interrupted(timings: dict[Hashable, spreading.SpreadTiming]) -> None:
            keep(timings)  # the cells measured so far, with the rounds they have
            for case in cases:
                if (m := self._measured.pop(key_of(case), None)) is not None:
                    self._record(case, m)

        sp = self.spread
        self._say(f"qcrypto: measuring {len(cases)} cells in turn, {sp.rounds} rounds each "
                  f"over at least {sp.span_s:.3g} s, so that the rounds of each sample the "
                  "machine's drift (the run saves or compares)")
        try:
            keep(spreading.spread_rounds({key_of(c): maker(c) for c in cases}, sp,
                                         between=reference.reference_s, failed=failed,
                                         guard=guard, interrupted=interrupted,
                                         order=pass_order(cases)))
        finally:
            for ctx in opened:
                try:
                    ctx.close()
                except Exception:  # a close error is the item's to see when it closes its own
                    pass


class _NotHere(Exception):
    """A cell this run cannot open here (unavailable, unsupported): its item says why."""


class _CellTimeout(Exception):
    """A cell's call passed ``--qcrypto-timeout``; ``timeout`` is the original exception."""

    def __init__(self, timeout: limits.MeasurementTimeout) -> None:
        super().__init__(str(timeout))
        self.timeout = timeout


def for_run(run: Any, item: pytest.Item | None,
            case_of: Callable[[pytest.Item], Case | None]) -> SpreadCells | None:
    """The run's :class:`SpreadCells` (made once, kept on ``run``), or None when the run
    neither saves nor compares against a baseline saved with spread rounds, or measures in a way that cannot take turns: counted
    instructions, ``--qcrypto-jobs``/``--qcrypto-threads`` above 1, ``--qcrypto-count``,
    ``--qcrypto-isolate``, ``--qcrypto-check-roundtrip``, targets, the tls grid's AAD, ``--qcrypto-misalign``, ``--qcrypto-update-size``."""
    if item is None:
        return None
    cells = getattr(run, "spread_cells", None)
    if cells is not None:
        return cells or None
    s, gate = run.settings, run.gate_options
    timeout, isolate = run.time_limits
    spread_base = gate.baseline is not None and any(r.spread_s for r in gate.baseline.results)
    wanted = (gate.save_path is not None or spread_base) and \
        run.counting.measure == "time" and run.jobs == 1 and run.threads == 1 and \
        s.count is None and not isolate and not s.check_roundtrip and run.targets is None \
        and not s.aad and s.misalign is None and not s.update_size  # (shaped: back to back)
    if not wanted:
        run.spread_cells = False
        return None
    session = item.session

    def opener(case: Case) -> bench.BenchContext | None:
        registry = run.registry
        selection = registry.resolve(case.plugin)
        alg = bench.resolve_algorithm(case.algorithm)
        if registry.unavailable(selection.plugin) is not None or \
                alg.name not in registry.supported(selection.plugin):
            return None
        return bench.open_context(selection, alg, run.rng)
    manager = item.config.pluginmanager
    reporter, capture = manager.get_plugin("terminalreporter"), manager.get_plugin("capturemanager")

    def say(text: str) -> None:  # one line on the terminal, past the item's output capture
        if reporter is None:
            return
        if capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(text)
        else:
            reporter.write_line(text)
    items = {key_of(c): i for i in session.items if (c := case_of(i)) is not None}

    def record(case: Case, m: Measurement) -> None:  # a cell measured when Ctrl-C came
        run.record(m, None, items.get(key_of(case)))
    run.spread_cells = SpreadCells(lambda: session, opener, settings_for(s.min_time, s.rounds),
                                   timeout, case_of, say, record)
    return run.spread_cells


def taken(spread: Any, ctx: Any, size: int | None, way: dict[str, Any]) -> Measurement | None:
    """What ``spread`` (a fixture's :func:`spreader`, or None) has for ``ctx``'s cell: its
    measurement, or None (measure it alone); raises the timeout that ended the cell."""
    got = spread(ctx.algorithm, ctx.plugin, size, way) if spread is not None else None
    if isinstance(got, BaseException):
        raise got
    return got


def spreader(cells: SpreadCells | None, item: pytest.Item | None) -> Any:
    """The ``spread`` callable of ``item``'s ``qcrypto`` fixture (None: measured alone)."""
    case = cells.case_of(item) if cells is not None and item is not None else None
    if case is None or cells is None:
        return None

    def spread(algorithm: str, plugin: str, size: int | None, way: dict[str, Any]
               ) -> Measurement | None:
        if plugin != case.plugin or algorithm.lower() != case.algorithm.lower():
            return None
        return cells.measurement(case, size, way)
    return spread


def with_peers(criteria: Callable[[Measurement], Any] | None, cells: SpreadCells | None,
               gate: Any) -> Callable[[Measurement], Any] | None:
    """``criteria`` (a measurement's :class:`~pytest_qcrypto.gate.verdicts.Criteria`) with
    the cell's peers from the same spread passes and their baselines (``gate``, the run's
    gate side, finds them): :func:`pytest_qcrypto.gate.spread.peers_of`."""
    if criteria is None or not cells or gate is None:
        return criteria

    def judged(m: Measurement) -> Any:
        c = criteria(m)
        if not m.spread_s or c.baseline is None:
            return c
        pairs = [(p, b) for p in cells.all if p is not m
                 and (b := gate.criteria(p, None).baseline) is not None]
        return replace(c, peers=tuple(gate_spread.peers_of(m, pairs)))
    return judged
