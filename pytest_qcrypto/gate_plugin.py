"""The regression gate's pytest side: its options, the baseline, and what it does to items.

:func:`read_options` checks every gate option and loads the baseline while pytest
configures (a problem is a usage error, also when the gate ends up unused).
:class:`GatePlugin` is registered (and put in ``config.stash[GATE_KEY]``) only when
the run compares, saves, has floors or writes JUnit XML (:func:`wanted`); a
``floor=`` on a ``@pytest.mark.qcrypto`` seen while collecting registers it too.  It
gives the fixture what each measurement is judged against (:meth:`GatePlugin.criteria`,
the retry loop is the fixture's), adds each verdict's JUnit user properties, turns a
skipped baseline cell into a failure, and writes ``--qcrypto-save`` at the end.
The rules and verdicts themselves are plain Python (:mod:`pytest_qcrypto.gate`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_qcrypto import catalog, gate, gate_stats, results, settings
from pytest_qcrypto.catalog import plural
from pytest_qcrypto.gate import BaselineIndex, GateRules, Rule, Verdict
from pytest_qcrypto.gate_summary import change_grid, summary_lines
from pytest_qcrypto.harness import Measurement
from pytest_qcrypto.interrupts import Interrupts
from pytest_qcrypto.ledger import Ledger
from pytest_qcrypto.tables import Changes, Table
from pytest_qcrypto.results import ResultsFile
from pytest_qcrypto.rules import Rules, marker_floors, parse_kib_per_s, parse_percent, parse_whole
from pytest_qcrypto.settings import SettingsError

PLUGIN_NAME = "qcrypto-gate"


@dataclass
class GateOptions:
    """The gate's checked options: ``save_path`` (None: not saving), the ``baseline`` (None:
    not comparing) and the rules."""

    rules: GateRules = field(default_factory=GateRules)
    save_path: Path | None = None
    baseline: ResultsFile | None = None


class PluginNames:
    """Canonical names and library versions of typed plugin names, each asked once.

    ``registry`` returns the run's crypto plugin registry (built only when needed).
    """

    def __init__(self, registry: Callable[[], Any]) -> None:
        self._registry = registry
        self._canonical: dict[str, str] = {}
        self._versions: dict[str, str] = {}

    def canonical(self, typed: str) -> str:
        """The canonical plugin name of a typed one (the typed name if it does not resolve)."""
        if typed not in self._canonical:
            try:
                self._canonical[typed] = self._registry().resolve(typed).canonical
            except Exception:
                self._canonical[typed] = typed
        return self._canonical[typed]

    def version(self, typed: str) -> str:
        if typed not in self._versions:
            self._versions[typed] = results.plugin_entries(
                [typed], self._registry().resolve)[typed]["version"]
        return self._versions[typed]

    def entries(self, saved: Sequence[results.Result]) -> dict[str, dict[str, Any]]:
        """The results file's ``plugins``: each typed plugin's entry and its drivers."""
        typed = list(dict.fromkeys(r.plugin for r in saved))
        if not typed:
            return {}
        entries = results.plugin_entries(typed, self._registry().resolve, saved)
        for entry_typed, entry in entries.items():
            entry["drivers"] = sorted({r.driver for r in saved
                                       if r.plugin == entry_typed and r.driver})
        return entries


# -- the options ----------------------------------------------------------------------------


def one_path(config: pytest.Config, name: str, why: str) -> str | None:
    """The one PATH of option ``name`` (None: not given), as typed.

    The option collects every value; the same file given twice is that
    file, two different ones a :class:`SettingsError` naming them and
    ``why`` only one is taken.  An empty PATH is an error too.
    """
    option = f"--{name.replace('_', '-')}"
    given = config.getoption(name)
    typed = [given] if isinstance(given, str) else [str(v) for v in given or ()]
    if any(not text.strip() for text in typed):
        raise SettingsError(f"{option}: the PATH is empty; give a file name")
    files = {os.path.abspath(config.invocation_params.dir / text): text for text in typed}
    if len(files) > 1:
        named = ", ".join(repr(text) for text in dict.fromkeys(typed))
        raise SettingsError(f"{option} was given more than once, with different files "
                            f"({named}): {why}; give it once")
    return typed[0] if typed else None


def _ini_where(config: pytest.Config, name: str) -> str:
    return settings.ini_source(name, config.inipath, config.getoption("override_ini", None))


def read_rules(config: pytest.Config) -> GateRules:
    """Thresholds, floors, confirmations and the comparison switches (option, else ini)."""
    opt, ini = config.getoption, config.getini
    rules = GateRules()
    if opt("qcrypto_threshold") is not None:
        rules.default_threshold = Rule(None, None, None, parse_percent(
            opt("qcrypto_threshold"), "--qcrypto-threshold"), "--qcrypto-threshold")
    elif ini("qcrypto_threshold"):
        where = _ini_where(config, "qcrypto_threshold")
        rules.default_threshold = Rule(None, None, None,
                                       parse_percent(ini("qcrypto_threshold"), where), where)
    rules.thresholds = Rules.parse(ini("qcrypto_thresholds"),
                                   _ini_where(config, "qcrypto_thresholds"), parse_percent)
    rules.floors = Rules.parse(ini("qcrypto_floors"), _ini_where(config, "qcrypto_floors"),
                               parse_kib_per_s)
    confirm, where = opt("qcrypto_confirm"), "--qcrypto-confirm"
    if confirm is None and ini("qcrypto_confirm"):
        confirm, where = ini("qcrypto_confirm"), _ini_where(config, "qcrypto_confirm")
    if confirm is not None:
        rules.confirm = parse_whole(confirm, where, 0, gate.MAX_CONFIRM)
    rules.compare_only = [f"--{n.replace('_', '-')}" for n in (
        "qcrypto_threshold", "qcrypto_confirm", "qcrypto_allow_missing",
        "qcrypto_require_same_machine") if opt(n) not in (None, False)]
    rules.allow_missing = bool(opt("qcrypto_allow_missing") or ini("qcrypto_allow_missing"))
    rules.require_same_machine = bool(opt("qcrypto_require_same_machine")
                                      or ini("qcrypto_require_same_machine"))
    return rules


def load_baseline(path: Path, typed: str, canonical: Callable[[str], str]) -> ResultsFile:
    """The ``--qcrypto-compare`` file: complete, with results (else a SettingsError)."""
    try:
        baseline = results.load(path, canonical)
    except results.ResultsError as exc:
        raise SettingsError(f"--qcrypto-compare: {exc}") from None
    if not baseline.complete:
        raise SettingsError(
            f"--qcrypto-compare: {typed}: the run that wrote it did not finish "
            "(\"complete\": false); save a complete run to compare against")
    if not baseline.results:
        raise SettingsError(
            f"--qcrypto-compare: {typed}: no results (the run that wrote it measured "
            "nothing, so every item would pass); save a run that measured the cells "
            "to compare")
    return baseline


def read_options(config: pytest.Config, canonical: Callable[[str], str]) -> GateOptions:
    """Read and check every gate option and the baseline (raises :class:`SettingsError`)."""
    out = GateOptions()
    save = one_path(config, "qcrypto_save", "a run writes one results file")
    compare = one_path(config, "qcrypto_compare", "only one baseline file is supported")
    if save:
        out.save_path = config.invocation_params.dir / save
        problem = results.check_writable(out.save_path)
        if problem:
            raise SettingsError(f"--qcrypto-save: cannot write {save}: {problem}")
    out.rules = read_rules(config)
    if compare:
        out.baseline = load_baseline(config.invocation_params.dir / compare, compare, canonical)
    return out


def wanted(config: pytest.Config, options: GateOptions) -> bool:
    """Whether the run needs the gate: comparing, saving, floors in the ini file, an option
    only a comparison uses (to say it had no effect), or JUnit XML (its properties)."""
    return bool(options.baseline is not None or options.save_path is not None
                or options.rules.floors.rules or options.rules.compare_only
                or getattr(config.option, "xmlpath", None))


def has_floor_marker(item: pytest.Item) -> bool:
    """A ``@pytest.mark.qcrypto(..., floor=...)`` applies to the item."""
    marker = item.get_closest_marker("qcrypto")
    return marker is not None and "floor" in marker.kwargs


def _marker_floors(item: pytest.Item) -> Rules | None:
    """The floors of the item's ``@pytest.mark.qcrypto(floor=...)``; a bad one fails it."""
    marker = item.get_closest_marker("qcrypto")
    if marker is None or "floor" not in marker.kwargs:
        return None
    try:
        return marker_floors(marker.kwargs["floor"], "@pytest.mark.qcrypto(floor=...)")
    except SettingsError as exc:
        problem = str(exc)  # failed outside the handler: one message, not a chain
    pytest.fail(problem, pytrace=False)


def properties(v: Verdict) -> list[tuple[str, str]]:
    """The JUnit user properties of a verdict: ``qcrypto_kib_per_s``, ``qcrypto_verdict``..."""
    m = v.measurement
    props = [("qcrypto_cell", f"{m.algorithm}:{m.plugin}:{m.size}:{m.direction}"),
             ("qcrypto_kib_per_s", f"{m.kib_per_s:.2f}")]
    if v.baseline is not None:
        props += [("qcrypto_baseline_kib_per_s", f"{v.baseline.kib_per_s:.2f}"),
                  ("qcrypto_change_pct", gate.pct(v.change).rstrip("%"))]
        if v.threshold is not None:
            props.append(("qcrypto_threshold_pct", f"{v.threshold.value:g}"))
        if v.test is not None:  # the decision rule's statistic (gate_stats)
            props += [("qcrypto_rule", gate_stats.RULE), ("qcrypto_p_value", f"{v.test.p:.4g}"),
                      ("qcrypto_false_alarm_rate", f"{v.test.alpha:g}"),
                      ("qcrypto_rounds_below", f"{v.test.below}/{v.test.rounds}"),
                      ("qcrypto_baseline_spread_pct", f"{v.test.baseline_spread * 100:.1f}")]
    if v.floor is not None:
        props.append(("qcrypto_floor_kib_per_s", f"{v.floor.value:.2f}"))
    status = "; ".join(f.partition(":")[0] for f in v.failures) or (
        f"not judged: {v.not_judged}" if v.not_judged else v.status)
    return props + [("qcrypto_tries", str(len(v.tries))), ("qcrypto_verdict", status)]


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ").strip()
    return str(longrepr or "skipped").strip().splitlines()[-1]


#: Where the run's plugins find the gate plugin, when it is registered.
GATE_KEY = pytest.StashKey["GatePlugin"]()


class GatePlugin:
    """The regression gate of one pytest run (registered as ``qcrypto-gate``).

    ``ledger`` is the run's (verdicts and results are read from it), ``names``
    resolves plugin names, ``interrupts`` tells whether the run got to its end,
    and ``run_state()`` gives the run's settings and its machine state for the
    saved file.
    """

    def __init__(self, config: pytest.Config, options: GateOptions, ledger: Ledger,
                 names: PluginNames, interrupts: Interrupts,
                 run_state: Callable[[], tuple[dict[str, Any], dict[str, Any] | None]]) -> None:
        self.config = config
        self.options = options
        self.rules = options.rules
        self.ledger = ledger
        self.names = names
        self.interrupts = interrupts
        self._run_state = run_state
        self.baseline = BaselineIndex(options.baseline) if options.baseline is not None else None
        #: the line about the results file, once written (or not)
        self.saved = ""
        self._machine_diffs: list[str] | None = None

    # -- what the baseline says about this machine -----------------------------------------

    @property
    def machine_differences(self) -> list[str]:
        if self._machine_diffs is None:
            self._machine_diffs = (results.machine_differences(self.baseline.file.machine,
                                                               results.fingerprint())
                                   if self.baseline is not None else [])
        return self._machine_diffs

    def library_difference(self, typed: str, canonical: str) -> str:
        """``openssl: 'OpenSSL 3.0.2 ...' (baseline) vs '...' (now)``, or empty."""
        if self.baseline is None:
            return ""
        entry = self.baseline.file.plugin_entry(canonical)
        if entry is None or "version" not in entry:
            return ""
        now = self.names.version(typed)
        return "" if entry["version"] == now else \
            f"{typed}: {entry['version']!r} (baseline) vs {now!r} (now)"

    # -- during the tests ------------------------------------------------------------------

    def criteria(self, m: Measurement, item: pytest.Item | None) -> gate.Criteria:
        """What ``m``, measured by ``item``, is judged against (a bad marker floor fails it)."""
        canonical = m.canonical_plugin or self.names.canonical(m.plugin)
        names = [m.plugin, canonical, m.plugin.partition(":")[0], canonical.partition(":")[0]]
        key = (m.algorithm, canonical, m.size, m.direction)
        test = item.nodeid if item is not None else None
        base = self.baseline.for_test(key, test) if self.baseline is not None else None

        def differences() -> list[str]:
            diffs = [d.partition(":")[0] for d in self.machine_differences]
            if self.library_difference(m.plugin, canonical):
                diffs.append(f"{m.plugin} version")
            return diffs

        marker = _marker_floors(item) if item is not None else None
        return gate.criteria(self.rules, m, names, base, marker, differences)

    def judged(self, v: Verdict, item: pytest.Item | None) -> None:
        """A verdict was reached: its status when not comparing, the item's properties."""
        if self.baseline is None and v.status == gate.NEW:
            v.status = gate.OK  # not comparing: "no baseline" would say nothing
        if item is not None:
            item.user_properties.extend(properties(v))

    def on_report(self, case: Any, report: pytest.TestReport) -> None:
        """A matrix or marker item's report: a baseline cell that is skipped now fails.

        The skip becomes a failure of the item (reported as a failed test, also
        when the skip happened in a fixture) unless missing cells are allowed.
        """
        if self.baseline is None or case is None or report.when not in ("setup", "call"):
            return
        alg = catalog.lookup(case.algorithm)
        if alg is None:
            return
        direction = alg.direction(case.decrypt, case.roundtrip)
        key = (alg.name, self.names.canonical(case.plugin), case.size, direction)
        if key not in self.baseline:
            return
        self.baseline.seen.add(key)
        if not report.skipped:
            return
        reason = _skip_reason(report)
        self.ledger.gone[(alg.name, case.plugin, case.size, direction)] = reason
        if self.rules.allow_missing:
            return
        base = self.baseline.first(key)
        report.outcome = "failed"
        report.when = "call"  # a failed test, not an error, even when a fixture skipped
        report.longrepr = (
            f"missing: {alg.name} {case.plugin} {case.size} B {direction} is in the baseline "
            f"({base.kib_per_s:.2f} KiB/s) but was skipped now: {reason} "
            "(--qcrypto-allow-missing accepts this)")

    # -- the end of the run ----------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # saved before anything else can be interrupted
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            if self.options.save_path is not None and not hasattr(self.config, "workerinput"):
                # (a pytest-xdist worker does not save: the controller does)
                self.saved = save(self.config, session, exitstatus, self.interrupts.ran_to_end,
                                  self.options.save_path, self.ledger.saved(), self.names,
                                  self._run_state)
        finally:
            self.interrupts.release()

    def after_table(self, table: Table) -> Changes | None:
        """Under a results table: the change against the baseline per cell (compare mode)."""
        if self.baseline is None:
            return None
        return change_grid(self.baseline.file.path, table.algorithm, table.direction,
                           table.plugins, table.sizes, self.ledger.verdicts(), self.ledger.gone)

    def summary_lines(self) -> list[str]:
        """After the tables: regressions, floors, differences, missing and new cells, the file."""
        verdicts = self.ledger.verdicts()
        lines = summary_lines(self.rules, self.baseline, verdicts, self.ledger.gone,
                              self.saved, self.machine_differences, self.library_difference)
        rule = gate_stats.summary_lines(
            [(gate.describe(v.measurement), v.test, v.threshold.value, v.status == gate.REGRESSION)
             for v in verdicts.values() if v.test is not None and v.threshold is not None],
            self._run_state()[0].get("rounds"), self.rules.confirm)
        return lines[:-1] + rule + lines[-1:] if self.saved else lines + rule


def save(config: pytest.Config, session: pytest.Session, exitstatus: int, ran_to_end: bool,
         path: Path, saved: Sequence[results.Result], names: PluginNames,
         run_state: Callable[[], tuple[dict[str, Any], dict[str, Any] | None]]) -> str:
    """Save the results file (from ``pytest_sessionfinish``); the line that says so.

    A run that measured nothing writes nothing (an empty file would pass
    every later comparison); a file that cannot be written is an error
    line and exit status 1.  The file says ``"complete": true`` only when
    ``ran_to_end`` (every benchmark item finished, no interrupt was seen:
    see :mod:`pytest_qcrypto.interrupts`) and the exit status and session
    agree; an incomplete run never replaces an existing file.
    """
    if not saved:
        xdist = getattr(config.option, "numprocesses", None)
        why = ("benchmarks are not measured under pytest-xdist: run them with -n 0"
               if xdist else "no benchmark item ran")
        return f"qcrypto: nothing was measured ({why}): {path} not written"
    complete = (ran_to_end
                and exitstatus not in (pytest.ExitCode.INTERRUPTED,
                                       pytest.ExitCode.INTERNAL_ERROR,
                                       pytest.ExitCode.USAGE_ERROR)
                and not session.shouldstop and not session.shouldfail)
    try:
        run_settings, state = run_state()
        doc = ResultsFile(results=list(saved), machine=results.fingerprint(),
                          plugins=names.entries(saved), complete=complete,
                          settings=run_settings, machine_state=state)
        target = results.save(path, doc)
    except OSError as exc:
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return f"ERROR: qcrypto: could not save results to {path}: {exc.strerror or exc}"
    n = plural(len(saved), "result")
    if complete:
        return f"qcrypto: {n} saved to {target}"
    if target != path:
        return (f"qcrypto: the run did not finish: {n} saved to {target} "
                f"(\"complete\": false); {path} left untouched")
    return f"qcrypto: the run did not finish: {n} saved to {target} (\"complete\": false)"
