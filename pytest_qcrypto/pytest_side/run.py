"""The run of pytest-qcrypto: its settings, its hooks, the fixtures it makes, the summary.

Set up by :func:`configure` when a run asks for a measurement (the thin entry point
:mod:`pytest_qcrypto.plugin` and :mod:`pytest_qcrypto.pytest_side.dormant` decide when):
no crypto library is imported and no kernel interface probed before that.  Reads top to
bottom in the order pytest calls it.  The run's settings live in one
:class:`QcryptoRun`, registered on the plugin manager as ``"qcrypto-run"``; it
forwards to the parts that do the work: the matrix (:mod:`pytest_qcrypto.pytest_side.matrix`),
the ledger of what was measured (:mod:`pytest_qcrypto.pytest_side.ledger`) and, when the run
compares, saves or has floors, the regression gate (:mod:`pytest_qcrypto.pytest_side.gate`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from functools import cached_property
from typing import Any

import pytest

from pytest_qcrypto.algorithms import catalog, settings, size_grids
from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.measure import cost_model, harness, jobs, machine, pkey_bench
from pytest_qcrypto.pytest_side import counting as counting_side
from pytest_qcrypto.pytest_side import matrix, options, progress, quoting
from pytest_qcrypto.pytest_side import targets as remote_targets
from pytest_qcrypto.measure.bench import Calibrations, Case, Randomness
from pytest_qcrypto.measure.reuse import KeyPairs
from pytest_qcrypto.pytest_side.gate import (GATE_KEY, GateOptions, GatePlugin, PluginNames,
                                             has_floor_marker, read_options, wanted)
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.pytest_side.ledger import Ledger, with_unsupported
from pytest_qcrypto.pytest_side.saving import run_state
# the fixtures, found by pytest among this plugin's names
from pytest_qcrypto.pytest_side.dormant import GUARD_NAME, RUN_NAME
from pytest_qcrypto.pytest_side.fixture import FIXTURE_KEY
from pytest_qcrypto.pytest_side.matrix import MATRIX_KEY, Matrix, RunGuard, case_of
from pytest_qcrypto.measure.registry import (  # noqa: F401
    Registry, RegistryError, Selection, list_plugins)
from pytest_qcrypto.algorithms.settings import Settings, SettingsError
from pytest_qcrypto.output.tables import with_every_cell
from pytest_qcrypto.measure import limits as qtimeout, threads

BOOL_INI = options.BOOL_INI  # every true/false ini key of the option table
MATRIX_NAME = "qcrypto-matrix"


def configure(config: pytest.Config) -> QcryptoRun:
    """Set the run up: check its settings, register it, its guard, matrix, gate and targets
    (at pytest_configure when an option asked for it, else when a test first does; see
    :mod:`pytest_qcrypto.pytest_side.dormant`).  Raises ``pytest.UsageError``."""
    run = QcryptoRun(config)
    try:
        run.check()
    except (SettingsError, RegistryError) as exc:
        raise pytest.UsageError(options.for_command(config, str(exc))) from None
    config.pluginmanager.register(run, RUN_NAME)
    guard = RunGuard(config)
    config.pluginmanager.register(guard, GUARD_NAME)
    config.stash[FIXTURE_KEY] = run.fixture
    config.stash[MATRIX_KEY] = run.matrix = Matrix(run)
    config.pluginmanager.register(config.stash[MATRIX_KEY], MATRIX_NAME)
    if run.gate_wanted:
        run.start_gate(guard)
    run.targets = remote_targets.start(config, run)  # --qcrypto-target, else None
    return run


class RunSettings:
    """The checked settings of one pytest run: options, crypto plugin registry, plugins."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        opt = config.getoption
        self.requested = any(opt(f"qcrypto_{o}") for o in catalog.OPTION_GROUPS)
        from_command_line = config.args_source == pytest.Config.ArgsSource.ARGS
        self.matrix_only = self.requested and not from_command_line
        #: the regression gate's options, read by check(); the gate runs when it is wanted
        self.gate_options: GateOptions = GateOptions()
        self.names = PluginNames(lambda: self.registry)
        self.target_options = remote_targets.TargetOptions()
        #: the --qcrypto-target plugin, when targets are given
        self.targets: remote_targets.Targets | None = None
        #: the speed matrix and the marker's parametrization (set by configure)
        self.matrix: Matrix | None = None

    # -- settings ----------------------------------------------------------------

    def _ini_or_option(self, option: str, ini: str) -> tuple[Any, str]:
        """The option's value, else the ini key's (None if neither), and where it came from."""
        return options.given(self.config, option)

    def unused_options(self) -> list[str]:
        """:func:`quoting.unused_options` of this run: a note per option without effect."""
        return quoting.unused_options(self.settings, self._ini_or_option(
            "qcrypto_size", "qcrypto_sizes")[0] is not None, self.config.getoption("qcrypto_unit"))

    @cached_property
    def settings(self) -> Settings:
        """The run's checked settings (algorithms are empty unless the matrix was asked for)."""
        opt = self.config.getoption
        algorithms = [a for o, parse in options.ALGORITHM_PARSERS.items()
                      for a in parse(opt(f"qcrypto_{o}"), f"--qcrypto-{o}")]
        if self.requested and not algorithms:
            raise SettingsError("--qcrypto-digest/--qcrypto-cipher/--qcrypto-mac/--qcrypto-pkey/"
                                "--qcrypto-kdf: no algorithm name given")
        sizes_given, where = self._ini_or_option("qcrypto_size", "qcrypto_sizes")
        sizes = settings.parse_sizes(sizes_given, where)
        grids = size_grids.named(sizes_given)  # a size a grid's algorithm cannot take: skipped
        if not opt("qcrypto_skip_unsuited_sizes") and not grids:
            settings.check_sizes(algorithms, sizes, where)
        plugins, where = self._ini_or_option("qcrypto_plugin", "qcrypto_plugins")
        settings.check_elements([str(p) for p in plugins or ()], where, "plugin names",
                                "openssl,hashlib")
        plugins = settings.split_list(plugins)
        settings.check_plugin_count(plugins, where)
        min_time, min_time_where = self._ini_or_option("qcrypto_min_time", "qcrypto_min_time")
        rounds, rounds_where = self._ini_or_option("qcrypto_rounds", "qcrypto_rounds")
        seed = opt("qcrypto_seed")
        if seed is not None:
            seed = settings.parse_seed(seed)
        count, count_where = self._ini_or_option("qcrypto_count", "qcrypto_count")
        roundtrip, check_roundtrip = opt("qcrypto_roundtrip"), opt("qcrypto_check_roundtrip")
        settings.check_directions(opt("qcrypto_decrypt"), roundtrip, check_roundtrip)
        return quoting.read(self.config, Settings(  # --qcrypto-quick: one short round
            algorithms=tuple(algorithms), plugins=tuple(plugins), sizes=sizes,
            min_time=(settings.parse_min_time(min_time, min_time_where) if min_time is not None
                      else settings.DEFAULT_MIN_TIME),
            rounds=(settings.parse_rounds(rounds, rounds_where) if rounds is not None
                    else settings.DEFAULT_ROUNDS),
            decrypt=bool(opt("qcrypto_decrypt")), seed=seed,
            count=settings.parse_count(count, count_where) if count is not None else None,
            roundtrip=bool(roundtrip), check_roundtrip=bool(check_roundtrip),
            aad=size_grids.aad_of(sizes_given)))

    @cached_property
    def registry(self) -> Registry:
        """Every ``pytest_qcrypto_plugins`` answer in registration order: built-ins first."""
        found: list[object] = []
        # pluggy calls the newest registration first; reverse so built-ins lead.
        for result in reversed(self.config.hook.pytest_qcrypto_plugins()):
            if isinstance(result, (list, tuple)):
                found.extend(result)
            else:
                found.append(result)
        return Registry(found)

    @cached_property
    def jobs(self) -> int:
        """``--qcrypto-jobs``: processes that run each measurement at once (default 1)."""
        value = self.config.getoption("qcrypto_jobs")
        return 1 if value is None else jobs.parse_jobs(value)

    @cached_property
    def threads(self) -> int:
        """``--qcrypto-threads`` (ini ``qcrypto_threads``): threads per measurement (default 1)."""
        value, where = self._ini_or_option("qcrypto_threads", "qcrypto_threads")
        return threads.parse_threads(value, where, self.jobs)

    @cached_property
    def time_limits(self) -> tuple[float | None, bool]:
        """``--qcrypto-timeout`` in seconds (None: off) and ``--qcrypto-isolate``."""
        s = self.settings
        value, where = self._ini_or_option("qcrypto_timeout", "qcrypto_timeout")
        seconds = qtimeout.parse_timeout(value, s.min_time, s.rounds, where)
        isolate = bool(self.config.getoption("qcrypto_isolate"))
        qtimeout.check_isolate(isolate)
        return seconds, isolate

    @cached_property
    def output(self) -> Any:
        """The checked ``--qcrypto-unit``, ``-format``, ``-plot`` and ``-bare`` (render.Output)."""
        from pytest_qcrypto.output.plot import PLOTTER
        from pytest_qcrypto.output.render import output_of

        return output_of(self.config.getoption, PLOTTER)

    @cached_property
    def rng(self) -> Randomness:
        return Randomness(self.settings.seed)

    @cached_property
    def calibrations(self) -> Calibrations:  # what calibration starts from (other sizes)
        return Calibrations()

    @cached_property
    def keys(self) -> KeyPairs | None:  # a quick run lends its key pairs (measure/reuse.py)
        return KeyPairs() if self.settings.quick else None

    @cached_property
    def selections(self) -> list[Selection]:
        """The plugins of the matrix, as typed, checked against the registry."""
        where = self._ini_or_option("qcrypto_plugin", "qcrypto_plugins")[1]
        try:
            chosen = [self.registry.resolve(t) for t in self.settings.plugins]
        except RegistryError as exc:
            if where.startswith("--"):
                raise
            raise RegistryError(f"{where}: {exc}") from None
        seen: dict[str, str] = {}
        for s in chosen:
            if s.canonical in seen:
                again = ("is given twice" if s.typed == seen[s.canonical]
                         else f"names the same plugin as {seen[s.canonical]!r}")
                raise RegistryError(f"{where}: {s.typed!r} {again}; give each plugin once")
            seen[s.canonical] = s.typed
        algs = self.settings.algorithms
        if not chosen and algs and not any(a.rules.sized for a in algs):
            # only public-key kinds and KDFs (few, slow cells): every plugin that has one
            reg = self.registry
            chosen = [Selection(p.name, p) for p in reg.plugins if reg.unavailable(p) is None
                      and any(pkey_bench.listed_as(a) in reg.supported(p) for a in algs)]
        if not chosen:
            default = self.registry.default()
            if default is None:
                raise RegistryError("no crypto plugin is available here "
                                    "(see pytest --qcrypto-list)")
            chosen = [default]
        return chosen

    def check(self) -> None:
        """Find every command-line problem before any test runs (raises for a usage error)."""
        _ = self.settings, self.jobs, self.threads
        if self.requested or self._ini_or_option("qcrypto_plugin", "qcrypto_plugins")[0]:
            _ = self.selections  # the option's or the ini line's (--qcrypto-list too)
        if self.requested:
            matrix.check_all(self)
        options.check_ini_bools(self.config)
        self.gate_options = read_options(self.config, self.names.canonical)
        if self.output.plots:
            from pytest_qcrypto.output import plot as plotting

            for typed in self.config.getoption("qcrypto_plot"):
                plotting.check_writable(typed)
        _ = self.time_limits
        self.target_options = remote_targets.read_options(self.config, self.gate_options.rules)
        self.counting = counting_side.read(self.config, self.jobs, self.threads,
                                           self.gate_options)

    @property
    def target_names(self) -> list[str]:  # --qcrypto-target: the matrix's rows are PLUGIN@NAME
        return self.target_options.names if self.target_options.targets else []

    def cases(self) -> Iterator[Case]:
        """The speed matrix, in table order: algorithm, then plugin, then size."""
        return matrix.cases(self)


class QcryptoRun(RunSettings):
    """One pytest run: its settings, and its hooks, each forwarding to the part that acts."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(config)
        #: what the run measured (see pytest_qcrypto.pytest_side.ledger)
        self.ledger = Ledger()
        #: times each item's waits for a CPU (see pytest_qcrypto.measure.machine.WaitMeter)
        self.meter = machine.WaitMeter()
        #: the machine when the first context was opened (see pytest_qcrypto.measure.machine)
        self.machine_state: machine.MachineState | None = None
        #: set at the end of the run (pytest_sessionfinish)
        self.session: pytest.Session | None = None
        #: the lines already on standard output (pytest_side.progress.Streaming)
        self.streamed: list[str] = []

    # -- the regression gate ---------------------------------------------------------

    @property
    def gate_wanted(self) -> bool:
        return wanted(self.config, self.gate_options)

    @property
    def gate(self) -> GatePlugin | None:
        """The regression gate, when the run has one."""
        return self.config.stash.get(GATE_KEY, None)

    def start_gate(self, guard: RunGuard) -> None:
        """Register the regression gate (once)."""
        if self.gate is None:
            self.config.stash[GATE_KEY] = GatePlugin(
                self.config, self.gate_options, self.ledger, self.names, guard.interrupts,
                lambda: run_state(self))
            self.config.pluginmanager.register(self.config.stash[GATE_KEY], "qcrypto-gate")

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if self.gate is None and any(has_floor_marker(item) for item in items):
            self.start_gate(self._guard())  # a floor on a marker: the gate judges it

    # -- results -----------------------------------------------------------------

    def record(self, m: Measurement, verdict: gate.Verdict | None,
               item: pytest.Item | None) -> None:
        """Keep a measurement (the best try) and its verdict (called by the fixtures)."""
        if verdict is not None and self.gate is not None:
            self.gate.judged(verdict, item)
        self.ledger.add(m, verdict, item.nodeid if item is not None else None)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.meter.start()  # the item's first measurement's wait for a CPU counts from here
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report = yield
        case = case_of(item)
        if self.gate is not None:
            self.gate.on_report(case, report)  # compare mode: a skipped baseline cell fails
        if not report.passed:  # a skipped or failed cell; the cells of a test that failed
            self.ledger.mark_report(case, report, item.nodeid)
        return report

    def tables(self) -> list[Any]:
        """One table per (algorithm, direction), in matrix order then first-seen order; the
        matrix's show each of its plugins and sizes (``-`` where an interrupt left a cell);
        every figure by the run's ``--qcrypto-clock``."""
        if not self.requested:
            return quoting.clocked(self.ledger.tables([]), self.settings.clock)
        cases = list(self.cases())  # its rows are the cases' plugins (PLUGIN@TARGET too)
        plugins = list(dict.fromkeys(c.plugin for c in cases))
        return quoting.clocked(with_unsupported(with_every_cell(self.ledger.tables(plugins), {
            c.algorithm for c in cases}, plugins, self.settings.sizes,
            {(c.algorithm, c.plugin, c.operation) for c in cases}), self.registry),
            self.settings.clock)

    @pytest.hookimpl(tryfirst=True)  # (the gate saves its file first, see gate_plugin)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.session = session  # the summary below may still set its exit status
        quoting.close_keys(self.__dict__.get("keys"), session)  # a quick run's key pairs
        self._guard().interrupts.release()

    def _guard(self) -> RunGuard:
        guard: RunGuard = self.config.pluginmanager.get_plugin(GUARD_NAME)
        return guard

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        gate = self.gate
        stopped = self.session is not None and self.session.exitstatus == progress.INTERRUPTED
        gate_lines = (self.unused_options() if self.requested else []) + \
            quoting.notes(self.settings, self.ledger.measurements) + \
            quoting.cycles_lines(self.output.unit, self.ledger.measurements) + (
            gate.summary_lines(stopped) if gate else [])
        from pytest_qcrypto.output.render import unwritten

        output, said = unwritten(self.output, bool(self.ledger.cells), stopped)
        gate_lines += said
        if not self.ledger.cells and not gate_lines:
            return
        from pytest_qcrypto.output.plot import PLOTTER
        from pytest_qcrypto.output.render import write_summary
        from pytest_qcrypto.output.report import baseline_tables

        verbose = self.config.getoption("verbose") > 0
        # the tables in the chosen format, each with its change against the baseline;
        # also the step summary and the plot, which, if they cannot be written, fail
        # the run as a failed --qcrypto-save does
        problems = write_summary(terminalreporter, self.tables(), output, verbose,
                                 after_table=gate.after_table if gate else None,
                                 baseline=baseline_tables(gate.options.baseline if gate else None),
                                 plotter=PLOTTER,
                                 gate_tables=gate.summary_tables() if gate else None,
                                 shown=self.streamed)
        if problems and self.session is not None and self.session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            self.session.exitstatus = pytest.ExitCode.TESTS_FAILED
        # where the time goes (--qcrypto-model or -v), noisy figures, the machine-state
        # warning, per-worker figures (verbose)
        from pytest_qcrypto.measure.interface_cost import of_run  # kernel plugins' null request
        explicit, measured = bool(self.config.getoption("qcrypto_model")), self.ledger.measurements
        notes = cost_model.summary_lines(measured, explicit, None if self.targets else of_run(
            self.registry.resolve, measured)) if explicit or verbose else []
        alone = self.jobs == self.threads == 1 and not self.time_limits[1] and not self.targets
        notes += machine.summary_lines(self.machine_state, self.ledger.measurements,
                                      self.jobs, verbose, self.threads, own_thread=alone)
        for line in ([""] if notes else []) + notes:
            terminalreporter.write_line(options.for_command(self.config, line))
        for line in ([""] if self.ledger.cells and gate_lines else []) + gate_lines:
            terminalreporter.write_line(line)

    # -- fixtures ----------------------------------------------------------------

    def round_options(self) -> dict[str, Any]:
        """What follows a round: a run that saves or compares times the reference workload
        after each (the gate's drift rule judges by it, now or against a later run); one that
        does neither, and leaves ``--qcrypto-rounds`` at its default, lets the rounds settle
        (:data:`pytest_qcrypto.measure.harness.SETTLE`)."""
        g, s = self.gate_options, self.settings
        kept = g.save_path is not None or g.history_dir is not None or g.baseline is not None
        given = self._ini_or_option("qcrypto_rounds", "qcrypto_rounds")[0] is not None
        return {"reference": kept and not s.quick,
                "settle": harness.SETTLE if not (kept or given or s.quick) else 0.0}

    def fixture(self, item: pytest.Item | None = None) -> Any:
        """The ``qcrypto`` fixture of ``item``: its measurements are judged by the gate (when
        the run has one) and recorded for the item."""
        from pytest_qcrypto.pytest_side import spread as spreading
        from pytest_qcrypto.pytest_side.fixture import MeasureOptions, QcryptoFixture

        s = self.settings
        if self.machine_state is None:
            self.machine_state = machine.capture()
        timeout, isolate = self.time_limits
        options = MeasureOptions(s.min_time, s.rounds, self.jobs, self.counting.limit(timeout),
                                 isolate, s.count, s.check_roundtrip, self.threads,
                                 self.counting.measure, aad=s.aad, misalign=s.misalign,
                                 update_size=s.update_size, **self.round_options())
        interrupts = self._guard().interrupts
        gate = self.gate
        criteria = (lambda m: gate.criteria(m, item)) if gate is not None else None
        cells = spreading.for_run(self, item, case_of)
        criteria = spreading.with_peers(criteria, cells, gate)  # spread cells' peers
        if self.targets is not None:  # --qcrypto-compare-target judges targets against one
            criteria = self.targets.criteria(criteria)
        criteria = counting_side.judged_by_count(criteria, self.counting)  # instructions
        return QcryptoFixture(
            lambda: self.registry, lambda m, verdict: self.record(m, verdict, item), self.rng,
            options, interrupted=lambda: interrupts.seen is not None,
            criteria=criteria, meter=self.meter, targets=self.targets,
            asked=lambda: [s.plugin for s in self.selections],  # the checks' peers
            spread=spreading.spreader(cells, item), calibrations=self.calibrations, keys=self.keys)
