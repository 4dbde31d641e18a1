"""The regression gate's pytest side: its options, the baseline, and what it does to items.

:func:`read_options` checks every gate option and loads the baseline while pytest
configures (a problem is a usage error, also when the gate ends up unused).
:class:`GatePlugin` is registered (and put in ``config.stash[GATE_KEY]``) only when
the run compares, saves, has floors or writes JUnit XML (:func:`wanted`); a
``floor=`` on a ``@pytest.mark.qcrypto`` seen while collecting registers it too.  It
gives the fixture what each measurement is judged against (:meth:`GatePlugin.criteria`,
the retry loop is the fixture's), adds each verdict's JUnit user properties, turns a
skipped baseline cell into a failure, and writes ``--qcrypto-save`` at the end.
The rules and verdicts themselves are plain Python (:mod:`pytest_qcrypto.gate.verdicts`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_qcrypto.algorithms import callable_names, settings
from pytest_qcrypto.gate import compare, verdicts as gate, stats as gate_stats
from pytest_qcrypto.results import history, lock as save_lock, store as results
from pytest_qcrypto.gate.compare import Baselines
from pytest_qcrypto.gate.verdicts import GateRules, Rule, Verdict
from pytest_qcrypto.gate.summary import change_grid, speedup_failure, summary_lines, summary_tables
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.interrupts import Interrupts
from pytest_qcrypto.pytest_side.ledger import Ledger
from pytest_qcrypto.output.tables import Changes, GateTables, Table
from pytest_qcrypto.results.store import ResultsFile
from pytest_qcrypto.gate.rules import (Rules, marker_floors, parse_kib_per_s, parse_percent,
                                  parse_speedup, parse_whole)
from pytest_qcrypto.pytest_side.saving import PluginNames, save  # noqa: F401 (the gate saves; plugin imports)
from pytest_qcrypto.algorithms.settings import SettingsError

PLUGIN_NAME = "qcrypto-gate"


@dataclass
class GateOptions:
    """The gate's checked options: ``save_path`` (None: not saving), the ``baseline`` (None:
    not comparing: the join of every ``--qcrypto-compare`` file, ``baseline_files``) and the
    rules."""

    rules: GateRules = field(default_factory=GateRules)
    save_path: Path | None = None
    baseline: ResultsFile | None = None
    baseline_files: list[ResultsFile] = field(default_factory=list)
    #: the lock of ``save_path``, held from the start of the run until it is saved
    save_lock: save_lock.SaveLock | None = None
    history_dir: Path | None = None  # --qcrypto-history: the folder the file is added to


# -- the options ----------------------------------------------------------------------------


def _typed(config: pytest.Config, name: str) -> list[str]:
    given = config.getoption(name)
    return [given] if isinstance(given, str) else [str(v) for v in given or ()]


def paths(config: pytest.Config, name: str) -> list[str]:
    """Every PATH of option ``name``, as first typed, each file once (the same file given
    twice, also as ``./a.json``, is that file); an empty PATH is a :class:`SettingsError`."""
    files: dict[str, str] = {}
    for text in _typed(config, name):
        if not text.strip():
            raise SettingsError(f"--{name.replace('_', '-')}: the PATH is empty; give a "
                                f"{'folder' if name == 'qcrypto_history' else 'file'} name")
        files.setdefault(os.path.abspath(config.invocation_params.dir / text), text)
    return list(files.values())


def one_path(config: pytest.Config, name: str, why: str) -> str | None:
    """The one PATH of option ``name`` (None: not given), as typed.

    The option collects every value; the same file given twice is that
    file, two different ones a :class:`SettingsError` naming them and
    ``why`` only one is taken.  An empty PATH is an error too.
    """
    found = paths(config, name)
    if len(found) > 1:
        named = ", ".join(repr(text) for text in dict.fromkeys(_typed(config, name)))
        raise SettingsError(f"--{name.replace('_', '-')} was given more than once, with "
                            f"different files ({named}): {why}; give it once")
    return found[0] if found else None


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
    pause, where = opt("qcrypto_confirm_pause"), "--qcrypto-confirm-pause"
    if pause is None and ini("qcrypto_confirm_pause"):
        pause, where = ini("qcrypto_confirm_pause"), _ini_where(config, "qcrypto_confirm_pause")
    if pause is not None:
        rules.confirm_pause = gate.parse_pause(pause, where)
    rules.compare_only = [f"--{n.replace('_', '-')}" for n in (
        "qcrypto_threshold", "qcrypto_confirm", "qcrypto_confirm_pause", "qcrypto_allow_missing",
        "qcrypto_require_same_machine", "qcrypto_max_speedup", "qcrypto_strict")
        if opt(n) not in (None, False)]
    speedup, where = opt("qcrypto_max_speedup"), "--qcrypto-max-speedup"
    if speedup is None and ini("qcrypto_max_speedup"):
        speedup, where = ini("qcrypto_max_speedup"), _ini_where(config, "qcrypto_max_speedup")
    if speedup is not None:
        rules.max_speedup = Rule(None, None, None, parse_speedup(speedup, where), where)
    rules.strict = ("--qcrypto-strict" if opt("qcrypto_strict") else
                    _ini_where(config, "qcrypto_strict") if ini("qcrypto_strict") else "")
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
    problem = compare.unusable(baseline)
    if problem:
        raise SettingsError(f"--qcrypto-compare: {typed}: {problem}")
    return baseline


def read_options(config: pytest.Config, canonical: Callable[[str], str]) -> GateOptions:
    """Read and check every gate option and the baseline (raises :class:`SettingsError`)."""
    out = GateOptions()
    save = one_path(config, "qcrypto_save", "a run writes one results file")
    baselines = paths(config, "qcrypto_compare")
    if save:
        out.save_path = config.invocation_params.dir / save
        problem = results.check_writable(out.save_path)
        if problem:
            raise SettingsError(f"--qcrypto-save: cannot write {save}: {problem}")
    folder = one_path(config, "qcrypto_history", "a run is added to one history folder")
    if folder:
        out.history_dir = config.invocation_params.dir / folder
        problem = history.check_folder(out.history_dir)
        if problem:
            raise SettingsError(f"--qcrypto-history: cannot add to {folder}: {problem}")
    out.rules = read_rules(config)
    if save and out.save_path is not None:
        for typed in baselines:
            if _same_file(out.save_path, config.invocation_params.dir / typed):
                raise SettingsError(
                    f"--qcrypto-save {save} is the baseline given to --qcrypto-compare: it "
                    "would be replaced by this run's figures, even if they fail the gate; save "
                    "elsewhere (--qcrypto-save=new.json) and replace the baseline after a "
                    "passing run")
    if baselines:
        # several files (one per sharded job) are joined; one cell of a test in two is refused
        out.baseline_files = [load_baseline(config.invocation_params.dir / typed, typed,
                                            canonical) for typed in baselines]
        out.baseline = compare.join(out.baseline_files, baselines).file
    return out


def _same_file(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file (also through a symbolic link or ``./``)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet)
        return os.path.realpath(a) == os.path.realpath(b)


def wanted(config: pytest.Config, options: GateOptions) -> bool:
    """Whether the run needs the gate: comparing, saving, floors in the ini file, an option
    only a comparison uses (to say it had no effect), or JUnit XML (its properties)."""
    return bool(options.baseline is not None or options.save_path is not None
                or options.history_dir is not None
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
    """JUnit user properties of a verdict: ``qcrypto_verdict``, ``qcrypto_failure`` (detail)..."""
    m = v.measurement
    props = [("qcrypto_cell", f"{m.algorithm}:{m.plugin}:{m.size}:{m.direction}"),
             ("qcrypto_kib_per_s" if m.sized else "qcrypto_ops_per_s", f"{m.figure:.2f}")]
    if v.baseline is not None:
        props += [("qcrypto_baseline_kib_per_s" if m.sized else "qcrypto_baseline_ops_per_s",
                   f"{v.baseline.figure:.2f}"),
                  ("qcrypto_change_pct", gate.pct(v.change).rstrip("%"))]
        if v.threshold is not None:
            props.append(("qcrypto_threshold_pct", f"{v.threshold.value:g}"))
        if v.drift is not None and v.drift.rule.startswith(gate.OWN_RULES):  # it decided
            props += [("qcrypto_decided_by", v.drift.rule),
                      ("qcrypto_slowdown_pct", f"{v.drift.slowdown * 100:.2f}"),
                      ("qcrypto_band_pct", f"{v.drift.band * 100:.2f}")]
        if v.test is not None:  # the median test's statistic (gate_stats)
            props += [("qcrypto_rule", gate_stats.RULE), ("qcrypto_p_value", f"{v.test.p:.4g}"),
                      ("qcrypto_false_alarm_rate", f"{v.test.alpha:g}"),
                      ("qcrypto_rounds_below", f"{v.test.below}/{v.test.rounds}"),
                      ("qcrypto_baseline_spread_pct", f"{v.test.baseline_spread * 100:.1f}")]
    if v.floor is not None:
        props.append(("qcrypto_floor_kib_per_s" if m.sized else "qcrypto_floor_ops_per_s",
                      f"{v.floor.value:.2f}"))
    status = "; ".join(f.partition(":")[0] for f in v.failures) or (
        f"not judged: {v.not_judged}" if v.not_judged else v.status)
    detail = [("qcrypto_failure", v.message)] if v.failed else []  # the item has the short one
    return props + [("qcrypto_tries", str(len(v.tries))), ("qcrypto_verdict", status)] + detail


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
        if options.save_path is not None and not hasattr(config, "workerinput"):
            try:  # held until saved (the controller saves under pytest-xdist)
                options.save_lock = save_lock.acquire(options.save_path)
            except (save_lock.LockBusy, OSError) as exc:
                raise pytest.UsageError(f"--qcrypto-save: {exc}") from None
        self.baseline = (Baselines(options.baseline_files or [options.baseline])
                         if options.baseline is not None else None)
        #: the line of a comparison that judged nothing (it fails the run), once known
        self.nothing_judged = ""
        #: the line about the results file, once written (or not)
        self.saved = ""

    # -- what the baseline says about this machine -----------------------------------------

    @property
    def machine_differences(self) -> list[str]:
        """Each field of this machine's fingerprint that differs from the baseline's."""
        return self.baseline.machine_differences() if self.baseline is not None else []

    def library_difference(self, typed: str, canonical: str) -> str:
        """``openssl: 'OpenSSL 3.0.2 ...' (baseline) vs '...' (now)``, or empty."""
        if self.baseline is None:
            return ""
        return self.baseline.library_difference(typed, canonical, self.names.version)

    # -- during the tests ------------------------------------------------------------------

    def criteria(self, m: Measurement, item: pytest.Item | None) -> gate.Criteria:
        """What ``m``, measured by ``item``, is judged against (a bad marker floor fails it)."""
        canonical = m.canonical_plugin or self.names.canonical(m.plugin)
        names = [m.plugin, canonical, m.plugin.partition(":")[0], canonical.partition(":")[0]]
        key = (m.algorithm, canonical, m.size, m.direction)
        test = item.nodeid if item is not None else None
        base = self.baseline.for_test(key, test) if self.baseline is not None else None

        def differences() -> list[str]:  # against the file this cell's baseline came from
            assert self.baseline is not None and base is not None
            return self.baseline.differences(base, m.plugin, canonical, self.names.version)

        marker = _marker_floors(item) if item is not None else None
        return gate.criteria(self.rules, m, names, base, marker, differences)

    def judged(self, v: Verdict, item: pytest.Item | None) -> None:
        """A verdict was reached: its status when not comparing, the item's properties."""
        if self.baseline is None and v.status == gate.NEW:
            v.status = gate.OK  # not comparing: "no baseline" would say nothing
        suspicious = speedup_failure(v, self.rules)  # None unless --qcrypto-strict
        if suspicious:
            v.failures.append(suspicious)  # the fixture fails the item on it
        if item is not None:
            item.user_properties.extend(properties(v))

    def on_report(self, case: Any, report: pytest.TestReport) -> None:
        """A matrix or marker item's report: a baseline cell that is skipped now fails.

        The skip becomes a failure of the item (reported as a failed test, also
        when the skip happened in a fixture) unless missing cells are allowed.
        """
        if self.baseline is None or case is None or report.when not in ("setup", "call"):
            return
        alg = callable_names.lookup(case.algorithm)  # a catalog algorithm or a callable
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
            f"({base.figure:.2f} {base.unit}) but was skipped now: {reason} "
            "(--qcrypto-allow-missing accepts this)")

    # -- the end of the run ----------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # saved before anything else can be interrupted
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            if not hasattr(self.config, "workerinput"):
                self.judged_nothing(session)
            if (self.options.save_path or self.options.history_dir) is not None and not hasattr(
                    self.config, "workerinput"):  # (an xdist worker does not save: the controller)
                self.saved = save(self.config, session, exitstatus, self.interrupts.ran_to_end,
                                  self.options.save_path, self.ledger.saved(), self.names,
                                  self._run_state, self.options.history_dir)
        finally:
            self.interrupts.release()
            self.pytest_unconfigure()

    def pytest_unconfigure(self) -> None:
        if self.options.save_lock is not None:
            self.options.save_lock.release()

    def after_table(self, table: Table) -> Changes | None:
        """Under a results table: the change against the baseline per cell (compare mode)."""
        if self.baseline is None:
            return None
        return change_grid(self.baseline.label, table.algorithm, table.direction,
                           table.plugins, table.columns, self.ledger.verdicts(), self.ledger.gone)

    def summary_lines(self, interrupted: bool = False) -> list[str]:
        """After the tables: regressions, floors, differences, missing and new cells, the file."""
        verdicts = self.ledger.verdicts()
        lines = summary_lines(self.rules, self.baseline, verdicts, self.ledger.gone, self.saved,
                              self.machine_differences, self.library_difference, interrupted)
        rule = gate_stats.summary_lines(
            [(gate.describe(v.measurement), v.test, v.threshold.value, v.status == gate.REGRESSION)
             for v in verdicts.values() if v.test is not None and v.threshold is not None
             and not (v.drift and v.drift.rule.startswith(gate.OWN_RULES))],
            self._run_state()[0].get("rounds"), self.rules.confirm)
        lines = lines[:-1] + rule + lines[-1:] if self.saved else lines + rule
        return lines + ([self.nothing_judged] if self.nothing_judged else [])

    def judged_nothing(self, session: pytest.Session) -> None:
        """Comparing, no cell was judged: none this run measured or skipped had a baseline
        entry, or every one that had could not be judged (another machine or jobs).  The line
        that says so, and exit status 1 (also for a run that collected nothing, as a ``-k``
        that matches no item; one that failed or stopped keeps its own)."""
        if self.baseline is None or session.exitstatus in (
                pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR,
                pytest.ExitCode.USAGE_ERROR):
            return
        if self.baseline.seen:
            line = (compare.none_judged(self.ledger.verdicts())
                    or compare.all_missing(self.ledger.verdicts(), self.ledger.gone,
                                           self.rules.allow_missing))
        else:
            xdist = getattr(self.config.option, "numprocesses", None)
            why = ("benchmarks are not measured under pytest-xdist: run them with -n 0"
                   if xdist else "no benchmark item ran")
            line = compare.nothing_judged(self.baseline, list(self.ledger.verdicts()), why)
        self.nothing_judged = line or ""
        if line and session.exitstatus in (pytest.ExitCode.OK,
                                           pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def summary_tables(self) -> GateTables | None:
        """The gate's outcome as tables for a markdown summary (None when not comparing)."""
        return summary_tables(self.rules, self.baseline, self.ledger.verdicts(), self.ledger.gone)
