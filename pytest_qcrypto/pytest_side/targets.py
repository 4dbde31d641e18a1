"""``--qcrypto-target``, ``--qcrypto-interleave``, ``--qcrypto-compare-target`` (pytest side).

``--qcrypto-target NAME=SPEC`` (repeatable; ini ``qcrypto_targets``, one per line) adds a
Python interpreter to measure in: SPEC is an execnet gateway spec
(``popen//python=.venv-old/bin/python``, ``ssh=user@board//python=python3``), and that
interpreter must have this version of pytest-qcrypto installed.  Every plugin is then
measured on every target, the local process (``local``) first: the speed matrix's rows
are ``PLUGIN@NAME``.  :class:`Targets` is the pytest plugin that does it: the fixture
opens a ``PLUGIN@NAME`` context through :meth:`Targets.open`, which gives a
:class:`RemoteBench` (what :class:`pytest_qcrypto.pytest_side.fixture.MeasuredContext` measures,
like a local :class:`~pytest_qcrypto.measure.bench.BenchContext`); the link to each target is in
:mod:`pytest_qcrypto.targets.link`, the code run there in :mod:`pytest_qcrypto.targets.remote`.
A target that cannot be used skips its cells with the one-line reason; one that stops
answering fails its cells.

``--qcrypto-interleave`` measures each cell on all targets at once, rounds taken in
turn (:mod:`pytest_qcrypto.targets.pairs`), and prints each target's paired ratio against the
first (the compare target, when given) under the tables.  ``--qcrypto-compare-target
NAME`` judges every other target's figure against NAME's figure of the same cell with
the regression gate's rules (thresholds, floors, ``--qcrypto-confirm``): an A/B gate
without a stored baseline.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_qcrypto.measure import bench
from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.gate.paired import Paired
from pytest_qcrypto.measure import limits
from pytest_qcrypto.targets import pairs
from pytest_qcrypto.measure import pkey_bench
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.store import Result
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.targets.link import LocalLink, Link, TargetGone

SEP = "@"
LOCAL = "local"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")
#: The execnet gateway kinds a SPEC may start with.
KINDS = ("popen", "ssh", "socket", "vagrant_ssh")


@dataclass(frozen=True)
class TargetOptions:
    """The checked target options: (name, spec) pairs, interleave, the compare target."""

    targets: tuple[tuple[str, str], ...] = ()
    interleave: bool = False
    compare: str | None = None

    @property
    def names(self) -> list[str]:
        """Target names in row order: the compare target first, then ``local``, then as given."""
        names = [LOCAL] + [n for n, _ in self.targets]
        return sorted(names, key=lambda n: n != self.compare)


def parse_targets(values: list[str], where: str) -> tuple[tuple[str, str], ...]:
    """``NAME=SPEC`` items (``SettingsError`` naming ``where`` and the problem)."""
    out: list[tuple[str, str]] = []
    for raw in values:
        name, eq, spec = str(raw).strip().partition("=")
        name, spec = name.strip(), spec.strip()
        if not eq or not spec:
            raise SettingsError(f"{where}: {raw!r} is not NAME=SPEC, e.g. "
                                "old=popen//python=.venv-old/bin/python")
        if not _NAME.match(name):
            raise SettingsError(f"{where}: target name {name!r}: use 1 to 40 letters, digits, "
                                "'_', '.' or '-'")
        if name == LOCAL:
            raise SettingsError(f"{where}: the name {LOCAL!r} is this process; give the "
                                "target another name")
        if name in (n for n, _ in out):
            raise SettingsError(f"{where}: target name {name!r} given twice")
        kind = spec.split("//")[0].partition("=")[0]
        if kind not in KINDS:
            raise SettingsError(f"{where}: {name}={spec}: an execnet gateway spec starts with "
                                f"{', '.join(KINDS)} (e.g. popen//python=PATH, "
                                "ssh=user@host//python=python3)")
        out.append((name, spec))
    return tuple(out)


def read_options(config: pytest.Config, rules: Any = None) -> TargetOptions:
    """The target options of the run (``SettingsError`` for a usage error).  With a compare
    target, the gate's ``rules`` (:class:`pytest_qcrypto.gate.verdicts.GateRules`) no longer list
    ``--qcrypto-threshold`` and ``--qcrypto-confirm`` as options without effect."""
    given = list(config.getoption("qcrypto_target") or [])
    where = "--qcrypto-target"
    if not given:
        given = [line for line in config.getini("qcrypto_targets") if line.strip()]
        where = "qcrypto_targets"
    opts = TargetOptions(parse_targets(given, where),
                         bool(config.getoption("qcrypto_interleave")),
                         config.getoption("qcrypto_compare_target"))
    if not opts.targets:
        for flag, value in (("--qcrypto-interleave", opts.interleave),
                            ("--qcrypto-compare-target", opts.compare)):
            if value:
                raise SettingsError(f"{flag} needs --qcrypto-target NAME=SPEC (at least one)")
    if opts.compare is not None and opts.compare not in opts.names:
        raise SettingsError(f"--qcrypto-compare-target {opts.compare}: no such target; "
                            f"valid: {', '.join([LOCAL] + [n for n, _ in opts.targets])}")
    if opts.compare is not None and rules is not None:  # the A/B gate takes them
        rules.compare_only = [o for o in rules.compare_only
                              if o not in ("--qcrypto-threshold", "--qcrypto-confirm")]
    return opts


def start(config: pytest.Config, run: Any) -> Targets | None:
    """Register the plugin of the targets when the run has any (``run``: the QcryptoRun)."""
    if not run.target_options.targets:
        return None
    targets = Targets(run.target_options, lambda: run.registry, run.settings.seed,
                      lambda: run.gate_options.rules, run.time_limits[0])
    config.pluginmanager.register(targets, "qcrypto-targets")
    run.names.remote = targets  # the results file's PLUGIN@NAME entries and targets
    return targets


class RemoteBench:
    """An open ``PLUGIN@NAME`` context: measured on its target, with the fixture's errors."""

    def __init__(self, owner: Targets, link: Any, ident: int | None, base: str, alg: Any,
                 driver: str | None) -> None:
        self.owner, self.link, self.ident, self.base = owner, link, ident, base
        self.algorithm = alg
        self.selection = SimpleNamespace(typed=f"{base}{SEP}{link.name}")
        self.driver = driver
        self.abandoned = self.closed = False
        #: interleaved: this context's first measurement is the cell's interleaved one
        self.interleave = ident is None

    def measure(self, size: int, **options: Any) -> Measurement:
        """``BenchContext.measure``'s keywords; the measurement named ``PLUGIN@NAME``.

        Interleaved, the first is this target's part of the cell's interleaved rounds;
        another (the gate's retry of a regressed cell) measures this target alone."""
        try:
            if self.interleave:  # all targets of this cell measured together
                self.interleave = False
                m = self.owner.interleaved(self, size, options)
            else:
                if self.ident is None:
                    self.owner.open_alone(self, options)
                m = self.link.measure(self.ident, size, options)
        except TargetGone as exc:
            from pytest_qcrypto.measure.isolate import IsolatedError
            self.abandoned = True
            raise IsolatedError(str(exc)) from None
        return self.owner.measured(self, m)

    def close(self) -> None:
        if not self.closed and self.ident is not None and not self.link.gone:
            try:
                self.link.close(self.ident)
            except TargetGone:
                pass  # its cells say why
        self.closed = True


@dataclass
class _Cell:
    """The figures of one cell on every target, for ratios and the A/B gate."""

    figures: dict[str, Measurement] = field(default_factory=dict)
    interleaved: dict[str, Measurement | BaseException] = field(default_factory=dict)


class Targets:
    """The pytest plugin of the target options (registered as ``qcrypto-targets``)."""

    def __init__(self, options: TargetOptions, registry: Callable[[], Any],
                 seed: int | None, rules: Callable[[], Any],
                 timeout: float | None = None) -> None:
        self.options = options
        self.names = options.names
        specs = dict(options.targets)
        self.links: dict[str, Any] = {
            n: LocalLink(registry()) if n == LOCAL else Link(n, specs[n], timeout)
            for n in self.names}  # a gateway opens within --qcrypto-timeout
        self.seed = seed
        self._rules = rules
        self.ids = itertools.count(1)
        self.cells: dict[tuple[str, str, int, str], _Cell] = {}

    @property
    def reference(self) -> str:
        return self.names[0]

    # -- measuring ---------------------------------------------------------------------

    def _usable(self, link: Any, typed: str, alg: Any, timeout: float | None) -> str | None:
        """Why ``typed`` (a plugin name there) cannot measure ``alg`` on ``link``, or None
        (its gateway opened within ``timeout``, --qcrypto-timeout)."""
        link.connect(timeout)
        if link.problem:
            return f"target {link.name}: {link.problem}"
        plugins = link.hello()["plugins"]
        base = typed.partition(":")[0].lower()
        found = next((p for n, p in plugins.items()
                      if base in (n.lower(), *(a.lower() for a in p["aliases"]))), None)
        if found is None:
            return (f"target {link.name} has no crypto plugin {typed!r} "
                    f"(it has {', '.join(plugins)})")
        if found["unavailable"]:
            return f"{typed}{SEP}{link.name}: unavailable: {found['unavailable']}"
        if pkey_bench.listed_as(alg) not in found["supported"]:  # a KDF's family by its default
            return f"{typed}{SEP}{link.name} does not support {alg.name}"
        return None

    def open(self, algorithm: str, typed: str, isolate: bool,
             timeout: float | None) -> RemoteBench:
        """Open ``PLUGIN@NAME``'s context of ``algorithm`` (skips or fails the test with the
        reason when the target cannot; raises what the plugin's open raised there)."""
        base, _, name = typed.rpartition(SEP)
        link = self.links.get(name)
        if link is None:
            pytest.fail(f"{typed}: no target {name!r}; the targets are {', '.join(self.names)}",
                        pytrace=False)
        alg = bench.resolve_algorithm(algorithm)
        if link.gone:
            pytest.fail(f"{typed} {alg.name}: not measured: {link.gone}", pytrace=False)
        why = self._usable(link, base, alg, timeout)
        if why is not None:
            pytest.skip(why)
        if self.options.interleave:
            return RemoteBench(self, link, None, base, alg, None)
        ident = next(self.ids)
        try:
            driver = link.open(ident, alg.name, base, self.seed, isolate, timeout)
        except TargetGone as exc:
            pytest.fail(f"{typed} {alg.name}: {exc}", pytrace=False)
        return RemoteBench(self, link, ident, base, alg, driver)

    def interleaved(self, rb: RemoteBench, size: int, options: dict[str, Any]) -> Measurement:
        """This target's figure of the cell, measuring every target's rounds in turn when the
        cell's first item asks (:func:`pairs.interleave`)."""
        alg = rb.algorithm
        direction = (alg.direction(bool(options.get("decrypt")), bool(options.get("roundtrip")))
                     if alg.rules.sized else pkey_bench.direction(alg, options.get("operation")))
        cell = self.cells.setdefault((rb.algorithm.name, rb.base, size, direction), _Cell())
        if not cell.interleaved:
            members: dict[str, pairs.OneRound] = {}
            opened: list[tuple[Any, int]] = []
            for name, link in self.links.items():
                if link.gone or self._usable(link, rb.base, rb.algorithm,
                                             options.get("timeout")) is not None:
                    continue
                ident = next(self.ids)
                try:
                    link.open(ident, rb.algorithm.name, rb.base, self.seed,
                              bool(options.get("isolate")), options.get("timeout"))
                except (Exception, limits.MeasurementTimeout) as exc:  # its cell says why
                    cell.interleaved[name] = exc
                    continue
                opened.append((link, ident))
                members[name] = self._one_round(link, ident, size, options)
            try:
                cell.interleaved.update(pairs.interleave(members, options.get("rounds", 3),
                                                         options.get("count")))
            finally:
                for link, ident in opened:
                    try:
                        link.close(ident)
                    except Exception:
                        pass  # a target that broke says so in its cells
        got = cell.interleaved.get(rb.link.name)
        if got is None:  # not measured with the others (it came back after a failure)
            self.open_alone(rb, options)
            return rb.link.measure(rb.ident, size, options)
        if isinstance(got, BaseException):
            raise got
        return got

    def open_alone(self, rb: RemoteBench, options: dict[str, Any]) -> None:
        """Open ``rb``'s own context on its target, to measure it alone."""
        rb.ident = next(self.ids)
        rb.driver = rb.link.open(rb.ident, rb.algorithm.name, rb.base, self.seed,
                                 bool(options.get("isolate")), options.get("timeout"))

    @staticmethod
    def _one_round(link: Any, ident: int, size: int, options: dict[str, Any]) -> pairs.OneRound:
        return lambda count: link.measure(ident, size, {**options, "rounds": 1, "count": count})

    def measured(self, rb: RemoteBench, m: Measurement) -> Measurement:
        """``m`` named ``PLUGIN@NAME``, kept as its cell's figure on that target."""
        name = rb.link.name
        canonical = m.canonical_plugin or rb.base
        m = replace(m, plugin=f"{rb.base}{SEP}{name}", canonical_plugin=f"{canonical}{SEP}{name}")
        cell = self.cells.setdefault((m.algorithm, rb.base, m.size, m.direction), _Cell())
        cell.figures[name] = m
        return m

    # -- the A/B gate ------------------------------------------------------------------

    def criteria(self, inner: Callable[[Measurement], gate.Criteria] | None
                 ) -> Callable[[Measurement], gate.Criteria] | None:
        """What each measurement is judged against: with ``--qcrypto-compare-target NAME``,
        another target's figure against NAME's of the same cell (the gate's rules);
        otherwise as ``inner`` (the gate's, or None: not judged)."""
        ref = self.options.compare
        if ref is None:
            return inner

        def judge(m: Measurement) -> gate.Criteria:
            base, _, name = m.plugin.rpartition(SEP)
            if not base or name == ref:
                return inner(m) if inner is not None else gate.Criteria(self._rules().confirm)
            cell = self.cells.get((m.algorithm, base, m.size, m.direction))
            figure = cell.figures.get(ref) if cell is not None else None
            baseline = Result.from_measurement(figure) if figure is not None else None
            names = [m.plugin, base, base.partition(":")[0]]
            c = gate.criteria(self._rules(), m, names, baseline, None, lambda: [])
            if baseline is None:
                c = gate.Criteria(c.confirm, None, None, c.floor,
                                  f"no figure of {base}{SEP}{ref} for this cell")
            elif self.options.interleave and figure is not None:  # judged by its pairs
                try:
                    r = pairs.paired_ratio(figure, m)
                except ValueError:  # a zero figure: the gate's other rules say so
                    return c
                if r.low is not None and r.high is not None and r.low > 0:
                    c = replace(c, paired=Paired(r.point, r.low, r.high, r.rounds, ref))
            return c

        return judge

    # -- the summary, the results file -----------------------------------------------

    def plugin_entries(self, typed_names: list[str], saved: list[Any]) -> dict[str, Any]:
        """The results file's ``plugins`` entries of ``PLUGIN@NAME`` rows: library, version
        and per-algorithm implementation on that target, and the drivers seen."""
        out: dict[str, Any] = {}
        for typed in typed_names:
            base, _, name = typed.rpartition(SEP)
            link = self.links.get(name)
            if not base or link is None or link.problem:
                continue
            plugins = link.hello().get("plugins", {})
            info = next((p for n, p in plugins.items()
                         if base.partition(":")[0].lower() in (n.lower(), *p["aliases"])), {})
            mine = [r for r in saved if r.plugin == typed]
            algorithms = sorted({r.algorithm for r in mine})
            try:
                impl = link.implementations(base, algorithms) if algorithms and not link.gone \
                    else {}
            except Exception as exc:
                impl = {a: f"unknown ({type(exc).__name__}: {exc})" for a in algorithms}
            out[typed] = {"canonical": typed, "library": info.get("library", ""),
                          "version": info.get("version", ""), "target": name,
                          "drivers": sorted({r.driver for r in mine if r.driver}),
                          "implementations": impl}
        return out

    def targets_entry(self) -> dict[str, Any]:
        """The results file's ``targets``: per name, its spec, package version, fingerprint,
        and the reason it was not used (null: it was)."""
        out = {}
        for name, link in self.links.items():
            hello = link.hello() if not link.problem else {}
            out[name] = {"spec": link.spec, "version": hello.get("version"),
                         "machine": hello.get("machine", {}),
                         "problem": link.problem or link.gone}
        return out

    def summary_lines(self, ledger: Any) -> list[str]:
        """The legend of the targets, the interleaved ratios and the A/B verdict."""
        from pytest_qcrypto.targets.summary import ab_lines, legend_lines, ratio_lines

        return (legend_lines(self, ledger) + ratio_lines(self)
                + ab_lines(self, ledger))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """An A/B run (``--qcrypto-compare-target``) that judged no cell fails (exit 1), as a
        compare against a stored baseline does: a gate never passes without judging."""
        from pytest_qcrypto.targets.summary import ab_judged

        run = session.config.pluginmanager.get_plugin("qcrypto-run")
        if (self.options.compare is None or run is None
                or hasattr(session.config, "workerinput")):
            return
        if not ab_judged(self, run.ledger) and session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        run = terminalreporter.config.pluginmanager.get_plugin("qcrypto-run")
        lines = self.summary_lines(run.ledger)
        for line in ([""] if lines else []) + lines:
            terminalreporter.write_line(line)

    def pytest_unconfigure(self) -> None:
        for link in self.links.values():
            link.shutdown()
