"""The ledger of one run: every measurement kept, the table cells and the verdicts.

One key throughout, :data:`pytest_qcrypto.gate.verdicts.CellKey`: ``(algorithm, plugin as
typed, size, direction)``.  Each kept measurement is a :class:`Record` (with its
verdict, its test's node id and its canonical plugin name); the tables, the
verdicts per cell and the results to save are views derived from the records.
A cell without a figure is a skipped or failed marker with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest

from pytest_qcrypto.algorithms import callable_names, catalog
from pytest_qcrypto.measure.bench import Case
from pytest_qcrypto.gate.verdicts import CellKey, Verdict
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.render import FAILED, SKIPPED, Cell, Table
from pytest_qcrypto.output.tables import assemble, grouped_cells
from pytest_qcrypto.results.store import Result


@dataclass(frozen=True)
class Record:
    """One kept measurement: the best try of a cell, its verdict (None: not judged, the gate
    is off) and the node id of its test (None outside a test)."""

    measurement: Measurement
    verdict: Verdict | None = None
    test: str | None = None
    #: ``failed``: its test failed or errored after measuring it (empty: it did not)
    outcome: str = ""

    @property
    def key(self) -> CellKey:
        m = self.measurement
        return m.algorithm, m.plugin, m.size, m.direction

    @property
    def canonical(self) -> str:
        """The canonical name of the plugin (the typed one when it did not say)."""
        return self.measurement.canonical_plugin or self.measurement.plugin

    def saved(self) -> Result:
        """The saved form: the kept try, every try's figure and its wait for a CPU."""
        v = self.verdict
        if v is None:
            result = Result.from_measurement(self.measurement, self.test)
        else:
            result = Result.from_measurement(v.measurement, self.test, v.tries, v.wait, v.record)
        return replace(result, outcome=self.outcome)


class Ledger:
    """What the run measured, in the order it happened."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        #: every table cell, a figure or a skipped / failed marker
        self.cells: dict[CellKey, Cell] = {}
        #: baseline cells that were skipped now, with the skip reason
        self.gone: dict[CellKey, str] = {}
        self.plugin_order: list[str] = []

    def add(self, m: Measurement, verdict: Verdict | None = None,
            test: str | None = None) -> None:
        """Keep a measurement (the best try) and its verdict; it is its cell's figure now."""
        record = Record(m, verdict, test)
        self.records.append(record)
        self._touch(m.plugin)
        self.cells[record.key] = Cell(m)

    def mark(self, key: CellKey, status: str, reason: str) -> None:
        """A cell that was skipped or failed (``render.SKIPPED``, ``render.FAILED``), unless it
        was measured (and failed later, e.g. below a floor: its figure stays)."""
        self._touch(key[1])
        cell = self.cells.get(key)
        if cell is not None and cell.measurement:
            return
        self.cells[key] = Cell(None, status, reason)

    def mark_report(self, case: Case | None, report: pytest.TestReport, test: str) -> None:
        """The cell of a skipped or failed matrix or marker item, with the report's reason;
        the cells test ``test`` measured before it failed (:meth:`failed_after`)."""
        if report.failed:
            crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
            first = str(crash).strip().splitlines()[0] if str(crash).strip() else ""
            self.failed_after(test, first[:160] or _reason(report))
        alg = callable_names.lookup(case.algorithm) if case is not None else None
        if case is not None and alg is not None:
            direction = case.operation or alg.direction(case.decrypt, case.roundtrip)
            self.mark((alg.name, case.plugin, case.size, direction),
                      SKIPPED if report.skipped else FAILED, _reason(report))

    def failed_after(self, test: str, reason: str) -> None:
        """Test ``test`` failed or errored after measuring: its records are saved with the
        outcome ``failed``, and its cells keep their figure marked failed (those the gate
        failed say so in its change grid and summary instead)."""
        for i, r in enumerate(self.records):
            if r.test != test or r.outcome:
                continue
            self.records[i] = replace(r, outcome="failed")
            cell = self.cells.get(r.key)
            gate_failed = r.verdict is not None and r.verdict.failed
            if cell is not None and cell.measurement is r.measurement and not gate_failed:
                self.cells[r.key] = Cell(r.measurement, FAILED, f"failed after measuring: "
                                         f"{reason}")

    def _touch(self, plugin: str) -> None:
        if plugin not in self.plugin_order:
            self.plugin_order.append(plugin)

    @property
    def measurements(self) -> list[Measurement]:
        """Every kept measurement, also of a cell measured more than once."""
        return [r.measurement for r in self.records]

    def verdicts(self) -> dict[CellKey, Verdict]:
        """The latest verdict of each cell, in the order cells were first judged."""
        return {r.key: r.verdict for r in self.records if r.verdict is not None}

    def saved(self) -> list[Result]:
        """The results to save: one per (canonical cell, test), the latest figure of a test
        that measured its cell again (as the table shows it), in first-measured order."""
        out: dict[tuple[tuple[str, str, int, str], str | None], Result] = {}
        for r in self.records:
            result = r.saved()
            out[(result.key, r.test)] = result
        return list(out.values())

    def tables(self, first: Sequence[str] = ()) -> list[Table]:
        """One table per (algorithm, direction), in first-seen order (one per size-less
        algorithm, a column per operation); rows: the plugins ``first`` (the matrix's), then
        the others in first-seen order."""
        order = list(first) + [p for p in self.plugin_order if p not in first]
        grouped = grouped_cells((*key, cell) for key, cell in self.cells.items())
        return [assemble(alg_name, direction, [p for p in order if any(q == p for q, _ in cells)],
                         cells) for (alg_name, direction), cells in grouped.items()]


def _reason(report: pytest.TestReport) -> str:
    """The one-line reason of a skipped or failed report."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
        text = text.removeprefix("Skipped: ")
    else:
        text = report.longreprtext.strip().splitlines()[-1] if report.longreprtext else ""
    text = text.strip()
    if report.failed and report.when != "call":
        text = f"error in {report.when}: {text}"
    return text or report.outcome


def with_unsupported(tables: Sequence[Table], registry: Any) -> list[Table]:
    """The tables, a cell that no item reached (an interrupted run) of a plugin that lacks its
    algorithm, or cannot run, saying so as a finished run's skip would (``hashlib does not
    support aes-128-gcm``; :meth:`~pytest_qcrypto.measure.registry.Registry.not_supported`),
    not "not measured in this run"."""
    out = []
    for t in tables:
        alg, why = catalog.lookup(t.algorithm), {}
        for p in t.plugins:
            empty = [c for c in t.columns if (p, c) not in t.cells and (p, c) not in t.absent]
            if empty and alg is not None and (reason := _unsupported(registry, p, alg)):
                why.update({(p, c): reason for c in empty})
        out.append(replace(t, absent={**t.absent, **why}) if why else t)
    return out


def _unsupported(registry: Any, typed: str, alg: catalog.Algorithm) -> str:
    """Why plugin ``typed`` has no cell of ``alg`` ("": it has; or it is not one of the
    registry's, a target's ``PLUGIN@NAME``)."""
    from pytest_qcrypto.measure.registry import RegistryError

    try:
        return registry.lacks(registry.resolve(typed).plugin, typed, alg)
    except RegistryError:
        return ""
