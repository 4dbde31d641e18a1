"""pytest hooks of pytest-qcrypto: options, the speed matrix, fixtures, the summary.

Reads top to bottom in the order pytest calls it.  Registering this plugin is
cheap: no crypto library is imported and no kernel interface probed until an
option, fixture or marker asks for a measurement.  The run's state lives in one
:class:`QcryptoRun`, registered on the plugin manager as ``"qcrypto-run"``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from functools import cached_property
from itertools import product
from typing import Any

import pytest

from pytest_qcrypto import catalog, gate, jobs, machine, options, settings
from pytest_qcrypto.backends.base import describe_implementations
from pytest_qcrypto.bench import Case, Randomness, direction_of
from pytest_qcrypto.catalog import Algorithm
from pytest_qcrypto.harness import Measurement
from pytest_qcrypto.interrupts import Interrupts
from pytest_qcrypto.registry import Registry, RegistryError, Selection
from pytest_qcrypto.settings import Settings, SettingsError
from pytest_qcrypto import limits as qtimeout

CASE_KEY = pytest.StashKey[Case]()
#: The options that choose algorithms (``--qcrypto-digest``...) and the kinds each takes.
SELECTION = (("digest", (catalog.DIGEST,)), ("cipher", (catalog.CIPHER, catalog.AEAD)))
#: Each kind in messages.
KIND_WORDS = {catalog.DIGEST: "digest", catalog.CIPHER: "cipher", catalog.AEAD: "AEAD"}
#: The ini keys that take true or false (pytest's type="bool").
BOOL_INI = ("qcrypto_allow_missing", "qcrypto_require_same_machine")
RUN_NAME = "qcrypto-run"
GUARD_NAME = "qcrypto-guard"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_qcrypto import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_qcrypto_plugins() -> list[Any]:
    """The built-in crypto plugins join the registry through the same hook as everyone's."""
    from pytest_qcrypto.backends import builtin_plugins

    return list(builtin_plugins())


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.getoption("qcrypto_bare"):  # before configure: moves pytest's output to stderr
        config.pluginmanager.register(options.StderrTerminal(), "qcrypto-stderr-terminal")
    if config.getoption("qcrypto_list"):
        run = QcryptoRun(config)
        try:
            lines = list_plugins(run.registry)
        except RegistryError as exc:
            sys.stderr.write(f"ERROR: {exc}\n")
            return int(pytest.ExitCode.USAGE_ERROR)
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "qcrypto(algorithms, plugins=None, sizes=None, decrypt=False): parametrize a test over "
        "algorithm x crypto plugin x buffer size; it gets the qcrypto_case and "
        "qcrypto_context fixtures.")
    run = QcryptoRun(config)
    try:
        run.check()
    except (SettingsError, RegistryError) as exc:
        raise pytest.UsageError(options.for_command(config, str(exc))) from None
    config.pluginmanager.register(run, RUN_NAME)
    config.pluginmanager.register(RunGuard(config), GUARD_NAME)


def _size_text(size: object) -> str:
    """A marker's size as :func:`settings.parse_sizes` reads it; an int too long for ``str()``
    (over 4300 digits) is a usage error here, named as it is."""
    if isinstance(size, int) and not isinstance(size, bool) and abs(size).bit_length() > 99:
        problem = (f"over the limit of {settings.MAX_SIZE} bytes (256 MiB)" if size > 0
                   else "below the 1 byte a buffer needs at least")
        raise SettingsError(f"sizes: {settings.shown_value(size)} is {problem}")
    return str(size)


def list_plugins(registry: Registry) -> list[str]:
    """The ``--qcrypto-list`` text: each plugin, its state, library, algorithms, details."""
    lines = ["crypto plugins (first available is the default):"]
    for p in registry.plugins:
        supported = registry.supported(p)  # first: a supported() that fails makes p unavailable
        why = registry.unavailable(p)
        aliases = f" (aliases: {', '.join(p.aliases)})" if p.aliases else ""
        lines.append(f"{p.name}{aliases}: {'available' if why is None else 'unavailable: ' + why}")
        lines.append(f"  library: {p.library}")
        if why is None:
            lines.append(f"  version: {registry.version(p)}")
        for kind in (catalog.DIGEST, catalog.CIPHER, catalog.AEAD):
            names = [n for n in catalog.names(kind) if n in supported]
            if names:
                lines.append(f"  {kind}s: {', '.join(names)}")
        if why is None and supported:
            done = registry.implementations(p, [n for n in catalog.names() if n in supported])
            lines.append(f"  implementations: {describe_implementations(done)}")
        lines.extend(f"  {line}" for line in registry.details(p))
    return lines


class QcryptoRun:
    """The state of one pytest run: settings, registry, matrix, recorded results."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        opt = config.getoption
        self.requested = bool(opt("qcrypto_digest") or opt("qcrypto_cipher"))
        from_command_line = config.args_source == pytest.Config.ArgsSource.ARGS
        self.matrix_only = self.requested and not from_command_line
        self.measurements: list[Measurement] = []
        #: (algorithm, direction) -> (plugin as typed, size) -> Cell
        self.cells: dict[tuple[str, str], dict[tuple[str, int], Any]] = {}
        self.plugin_order: list[str] = []
        #: saved results, baseline comparison and floors (see pytest_qcrypto.gate)
        self.gate = gate.Gate(config, lambda: self.registry)
        self.current_item: pytest.Item | None = None
        #: the machine when the first context was opened (see pytest_qcrypto.machine)
        self.machine_state: machine.MachineState | None = None
        #: set at the end of the run (pytest_sessionfinish)
        self.session: pytest.Session | None = None

    # -- settings ----------------------------------------------------------------

    def _ini_where(self, ini: str) -> str:
        """``qcrypto_rounds in pytest.ini`` (or ``-o qcrypto_rounds``), for messages."""
        return options.where(self.config, ini)

    def _ini_or_option(self, option: str, ini: str) -> tuple[Any, str]:
        """The option's value, else the ini key's (None if neither), and where it came from."""
        return options.given(self.config, option)

    @cached_property
    def settings(self) -> Settings:
        """The run's checked settings (algorithms are empty unless the matrix was asked for)."""
        opt = self.config.getoption
        algorithms = settings.parse_algorithms(opt("qcrypto_digest"), (catalog.DIGEST,),
                                               "--qcrypto-digest")
        algorithms += settings.parse_algorithms(opt("qcrypto_cipher"),
                                                (catalog.CIPHER, catalog.AEAD), "--qcrypto-cipher")
        if self.requested and not algorithms:
            raise SettingsError("--qcrypto-digest/--qcrypto-cipher: no algorithm name given")
        sizes_given, where = self._ini_or_option("qcrypto_size", "qcrypto_sizes")
        sizes = settings.parse_sizes(sizes_given, where)
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
        return Settings(
            algorithms=tuple(algorithms), plugins=tuple(plugins), sizes=sizes,
            min_time=(settings.parse_min_time(min_time, min_time_where) if min_time is not None
                      else settings.DEFAULT_MIN_TIME),
            rounds=(settings.parse_rounds(rounds, rounds_where) if rounds is not None
                    else settings.DEFAULT_ROUNDS),
            decrypt=bool(opt("qcrypto_decrypt")), seed=seed)

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
        from pytest_qcrypto.plot import PLOTTER
        from pytest_qcrypto.render import output_of

        return output_of(self.config.getoption, PLOTTER)

    @cached_property
    def rng(self) -> Randomness:
        return Randomness(self.settings.seed)

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
                raise RegistryError(f"{where}: {s.typed!r} names the same plugin as "
                                    f"{seen[s.canonical]!r}; give each plugin once")
            seen[s.canonical] = s.typed
        if not chosen:
            default = self.registry.default()
            if default is None:
                raise RegistryError("no crypto plugin is available here "
                                    "(see pytest --qcrypto-list)")
            chosen = [default]
        return chosen

    def check(self) -> None:
        """Find every command-line problem before any test runs (raises for a usage error)."""
        _ = self.settings, self.jobs
        if self.requested or self.config.getoption("qcrypto_plugin"):
            _ = self.selections
        if self.requested:
            self._check_all()
        self._check_ini_bools()
        self.gate.check()
        if self.output.plots:
            from pytest_qcrypto import plot as plotting

            for typed in self.config.getoption("qcrypto_plot"):
                plotting.check_writable(typed)
        _ = self.time_limits

    # -- collection --------------------------------------------------------------

    def cases(self) -> Iterator[Case]:
        """The speed matrix, in table order: algorithm, then plugin, then size."""
        s = self.settings
        for alg, sel, size in product(self.matrix_algorithms(), self.selections, s.sizes):
            yield Case(alg.name, sel.typed, size, s.decrypt and alg.kind != catalog.DIGEST)

    def matrix_algorithms(self) -> list[Algorithm]:
        """The algorithms as named; of ``all``, only those a chosen plugin supports."""
        opt = self.config.getoption
        typed = settings.split_list(opt("qcrypto_digest") + opt("qcrypto_cipher"))
        if settings.ALL not in (t.lower() for t in typed):
            return list(self.settings.algorithms)
        named = {a.name for a in map(catalog.lookup, typed) if a is not None}
        supported = set().union(*(self.registry.supported(s.plugin) for s in self.selections))
        return [a for a in self.settings.algorithms if a.name in named | supported]

    def _check_all(self) -> None:
        """``all`` must find something to measure for each option it is given to.

        ``--qcrypto-cipher all --qcrypto-plugin hashlib`` is a usage error, also beside
        ``--qcrypto-digest sha256``: the ciphers would silently be left out.  ``all``
        given to both options (``qcrypto speed`` without -C or -D) asks for everything
        the plugins support, like ``openssl speed``: one algorithm of either kind will do.
        """
        opt = self.config.getoption
        asked = [(f"--qcrypto-{o} {settings.ALL}", kinds) for o, kinds in SELECTION
                 if settings.ALL in (t.lower() for t in settings.split_list(opt(f"qcrypto_{o}")))]
        if len(asked) == len(SELECTION):
            asked = [("", tuple(k for _, kinds in SELECTION for k in kinds))]
        supported = set().union(*(self.registry.supported(s.plugin) for s in self.selections))
        for option, kinds in asked:
            if not any(a.kind in kinds and a.name in supported for a in catalog.ALGORITHMS):
                raise SettingsError(self._nothing_to_measure(option, kinds))

    def _nothing_to_measure(self, option: str, kinds: tuple[str, ...]) -> str:
        """Why ``all`` found nothing: each chosen plugin unavailable or without the kinds;
        and which plugins here do have one."""
        words = [KIND_WORDS[k] for k in kinds]
        kind = " or ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} or {words[-1]}"
        why = []
        for s in self.selections:
            reason = self.registry.unavailable(s.plugin)
            why.append(f"{s.typed}: unavailable: {reason}" if reason
                       else f"{s.typed} supports no {kind}")
        of_kinds = {a.name for a in catalog.ALGORITHMS if a.kind in kinds}
        others = [p.name for p in self.registry.plugins
                  if self.registry.supported(p) & of_kinds]
        where = f"{option}: " if option else ""
        if others:
            hint = (f"Plugins that support one here: {', '.join(others)}; choose them with "
                    "--qcrypto-plugin")
        else:
            hint = f"No plugin here supports a {kind}"
        return f"{where}nothing to measure: {'; '.join(why)}. {hint} {settings.LIST_HINT}"

    def _check_ini_bools(self) -> None:
        """A true/false ini key with another value: its name, file and the accepted words."""
        for name in BOOL_INI:
            try:
                self.config.getini(name)
            except (ValueError, TypeError, pytest.UsageError) as exc:
                found = re.search(r"invalid truth value ('.*')$", str(exc))
                raise SettingsError(settings.bool_problem(
                    self._ini_where(name), found.group(1) if found else None)) from None

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, Any]:
        rep = yield
        if self.requested and isinstance(collector, pytest.Session) and rep.passed:
            matrix = SpeedMatrix.from_parent(collector, name="qcrypto", nodeid="qcrypto")
            rep.result = [matrix] if self.matrix_only else [*rep.result, matrix]
        return rep

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        marker = metafunc.definition.get_closest_marker("qcrypto")
        if marker is None or "qcrypto_case" not in metafunc.fixturenames:
            return
        try:
            cases = self.marker_cases(marker)
        except (SettingsError, RegistryError, TypeError) as exc:
            raise pytest.Collector.CollectError(f"@pytest.mark.qcrypto: {exc}") from None
        metafunc.parametrize("qcrypto_case", cases,
                             ids=[f"{c.algorithm}-{c.plugin}-{c.size}" for c in cases])

    def marker_cases(self, marker: pytest.Mark) -> list[Case]:
        """Cases of ``@pytest.mark.qcrypto(algorithms, plugins=None, sizes=None, decrypt=False)``."""
        kwargs = dict(marker.kwargs)
        names = list(marker.args) + settings.split_list(_as_list(kwargs.pop("algorithms", [])))
        algorithms: list[Algorithm] = settings.parse_algorithms(
            names, (catalog.DIGEST, catalog.CIPHER, catalog.AEAD), "algorithms")
        if not algorithms:
            raise SettingsError("give at least one algorithm")
        typed = settings.split_list(_as_list(kwargs.pop("plugins", None)))
        selections = [self.registry.resolve(t) for t in typed] or self.selections
        sizes = kwargs.pop("sizes", None)
        sizes_t = (settings.parse_sizes([_size_text(s) for s in _as_list(sizes)], "sizes")
                   if sizes is not None else self.settings.sizes)
        settings.check_sizes(algorithms, sizes_t)
        decrypt = bool(kwargs.pop("decrypt", False))
        if "floor" in kwargs:  # applied by the regression gate; checked here, while collecting
            gate.marker_floors(kwargs.pop("floor"), "floor")
        if kwargs:
            raise SettingsError(f"unknown marker arguments: {', '.join(kwargs)}")
        return [Case(a.name, s.typed, size, decrypt and a.kind != catalog.DIGEST)
                for a, s, size in product(algorithms, selections, sizes_t)]

    # -- results -----------------------------------------------------------------

    def record(self, m: Measurement, again: Callable[[], Measurement] | None = None) -> None:
        """Keep a measurement for the summary (called by the fixtures).

        ``again`` re-measures the same cell (for confirmation runs).
        """
        from pytest_qcrypto.render import Cell

        verdict = self.gate.judge(m, again, self.current_item)  # may measure again
        m = verdict.measurement
        self.measurements.append(m)
        self._cell(m.algorithm, m.direction, m.plugin)[(m.plugin, m.size)] = Cell(m)
        self.gate.enforce(verdict)  # fails the test on a confirmed regression or floor

    def _cell(self, algorithm: str, direction: str, plugin: str) -> dict[tuple[str, int], Any]:
        if plugin not in self.plugin_order:
            self.plugin_order.append(plugin)
        return self.cells.setdefault((algorithm, direction), {})

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.current_item = item  # record() runs inside the test: its verdicts go to this item
        self.gate.begin()
        try:
            return (yield)
        finally:
            self.current_item = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report = yield
        case = case_of(item)
        self.gate.on_report(case, report)  # compare mode: a skipped baseline cell fails
        if case is None or report.passed:
            return report
        from pytest_qcrypto.render import FAILED, SKIPPED, Cell

        alg = catalog.lookup(case.algorithm)
        if alg is None:
            return report
        cells = self._cell(alg.name, direction_of(alg, case.decrypt), case.plugin)
        if (case.plugin, case.size) in cells and cells[(case.plugin, case.size)].measurement:
            return report  # measured, then failed later (e.g. a floor): keep the figure
        status = SKIPPED if report.skipped else FAILED
        cells[(case.plugin, case.size)] = Cell(None, status, _reason(report))
        return report

    def tables(self) -> list[Any]:
        """One table per (algorithm, direction), in matrix order then first-seen order."""
        from pytest_qcrypto.render import Table

        order = [p.typed for p in self.selections] if self.requested else []
        plugins_in_order = order + [p for p in self.plugin_order if p not in order]
        out = []
        for (alg_name, direction), cells in self.cells.items():
            alg = catalog.lookup(alg_name)
            assert alg is not None
            plugins = tuple(p for p in plugins_in_order if any(q == p for q, _ in cells))
            sizes = tuple(sorted({s for _, s in cells}))
            out.append(Table(alg.name, alg.table_kind, direction, plugins, sizes, cells))
        return out

    @pytest.hookimpl(tryfirst=True)  # saved before anything else can be interrupted
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.session = session  # the summary below may still set its exit status
        interrupts = self._guard().interrupts
        try:
            self.gate.finish(session, exitstatus, interrupts.ran_to_end)  # --qcrypto-save
        finally:
            interrupts.release()

    def _guard(self) -> RunGuard:
        guard: RunGuard = self.config.pluginmanager.get_plugin(GUARD_NAME)
        return guard

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        gate_lines = self._unused_decrypt() + list(self.gate.summary_lines())
        output = self.output
        if not self.cells and output.plots:  # as --qcrypto-save: no empty file
            gate_lines.append(f"qcrypto: nothing was measured: {', '.join(output.plots)} not "
                              "written")
            output = replace(output, plots=())
        if not self.cells and not gate_lines:
            return
        from pytest_qcrypto.plot import PLOTTER
        from pytest_qcrypto.render import write_summary
        from pytest_qcrypto.report import baseline_tables

        verbose = self.config.getoption("verbose") > 0
        # the tables in the chosen format, each with its change against the baseline;
        # also the step summary and the plot, which, if they cannot be written, fail
        # the run as a failed --qcrypto-save does
        problems = write_summary(terminalreporter, self.tables(), output, verbose,
                                 after_table=self.gate.table_lines,
                                 baseline=baseline_tables(self.gate.baseline), plotter=PLOTTER)
        if problems and self.session is not None and self.session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            self.session.exitstatus = pytest.ExitCode.TESTS_FAILED
        # noisy figures, the machine-state warning, per-worker figures (verbose)
        notes = machine.summary_lines(self.machine_state, self.measurements, self.jobs, verbose)
        for line in ([""] if notes else []) + notes:
            terminalreporter.write_line(line)
        for line in ([""] if self.cells and gate_lines else []) + gate_lines:
            terminalreporter.write_line(line)

    def _unused_decrypt(self) -> list[str]:
        """A note when ``--qcrypto-decrypt`` met only digests, which have no decrypt direction."""
        if not (self.requested and self.settings.decrypt) or any(
                a.kind != catalog.DIGEST for a in self.settings.algorithms):
            return []
        return ["qcrypto: --qcrypto-decrypt had no effect: digests have no decrypt direction "
                "(it times ciphers and AEADs decrypting)"]

    # -- fixtures ----------------------------------------------------------------

    def fixture(self) -> Any:
        from pytest_qcrypto.fixture import MeasureOptions, QcryptoFixture

        s = self.settings
        if self.machine_state is None:
            self.machine_state = machine.capture()
        timeout, isolate = self.time_limits
        options = MeasureOptions(s.min_time, s.rounds, self.jobs, timeout, isolate)
        interrupts = self._guard().interrupts
        return QcryptoFixture(lambda: self.registry, self.record, self.rng, options,
                              interrupted=lambda: interrupts.seen is not None)


class SpeedMatrix(pytest.Collector):
    """The built-in matrix: one item per algorithm x plugin x size, ``qcrypto::sha256[openssl-16]``."""

    def collect(self) -> list[pytest.Item]:
        run: QcryptoRun = self.config.pluginmanager.get_plugin(RUN_NAME)
        items: list[pytest.Item] = []
        for case in run.cases():
            item = SpeedCell.from_parent(self, name=f"{case.algorithm}[{case.id}]",
                                         callobj=speed_cell)
            _structure_id(item)
            item.stash[CASE_KEY] = case
            items.append(item)
        return items

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "qcrypto", None, "qcrypto speed matrix"


class SpeedCell(pytest.Function):
    """One matrix item; reported by its node id (it has no test file of its own)."""

    def reportinfo(self) -> tuple[Any, int | None, str]:
        path, line, _ = super().reportinfo()
        return path, line, self.nodeid


def _structure_id(item: pytest.Item) -> None:
    """Give a matrix item the node id its string form parses to.

    pytest 9.2 keys the cache (``--lf``, ``--ff``, ``--nf``) by a structured
    node id read back from the string ``qcrypto::sha256[openssl-16]``: name
    ``sha256``, parameters ``openssl-16``.  An item made without a callspec
    gets the name ``sha256[openssl-16]`` and no parameters, which would never
    match.  Earlier pytest keys by the string and needs nothing.
    """
    node_id = getattr(item, "_id", None)
    parse = getattr(type(node_id), "parse", None)
    if node_id is not None and callable(parse):
        item._id = parse(str(node_id))


def speed_cell(qcrypto_case: Case, qcrypto_context: Any) -> None:
    """One cell of the speed matrix: measure the case's size (the figure is recorded)."""
    qcrypto_context.measure(qcrypto_case.size, decrypt=qcrypto_case.decrypt)


def case_of(item: pytest.Item) -> Case | None:
    """The qcrypto case of an item: a matrix cell, or a test parametrized by the marker."""
    case = item.stash.get(CASE_KEY, None)
    if case is None:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("qcrypto_case") if callspec is not None else None
    return case if isinstance(case, Case) else None


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, int)):
        return [value]
    return list(value)


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


@pytest.fixture
def qcrypto(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Open, measure and record crypto contexts in your own tests.

    ``qcrypto.open(algorithm, plugin)`` returns a context with
    ``measure(size_bytes) -> Measurement`` (``.kib_per_s``, ``.count``,
    ``.rounds_s``); contexts close when the test ends.  Skips when the plugin is
    unavailable or lacks the algorithm.
    """
    run: QcryptoRun = request.config.pluginmanager.get_plugin(RUN_NAME)
    fixture = run.fixture()
    try:
        yield fixture
    finally:
        fixture.close()


@pytest.fixture
def qcrypto_case(request: pytest.FixtureRequest) -> Case:
    """The (algorithm, plugin, size) of this item: set by the matrix or ``@pytest.mark.qcrypto``."""
    case = request.node.stash.get(CASE_KEY, None)
    if case is None:
        pytest.fail("qcrypto_case needs @pytest.mark.qcrypto(algorithms=..., ...) on the test",
                    pytrace=False)
    return case


@pytest.fixture
def qcrypto_context(qcrypto: Any, qcrypto_case: Case) -> Any:
    """The open, keyed context of this item's (algorithm, plugin); closed at teardown.

    A software context, a /dev/crypto session or an AF_ALG socket.  Its
    ``measure(size)`` checks the known-answer vectors first, then times.
    """
    return qcrypto.open(qcrypto_case.algorithm, qcrypto_case.plugin)


# -- reliability: interrupts, pytest-xdist -----------------------------------------------

#: The skip reason of benchmark items on pytest-xdist workers.
XDIST_SKIP = ("not measured under pytest-xdist: a measurement must not share the machine "
              "with other tests; run benchmarks with -n 0")


def is_benchmark(item: pytest.Item) -> bool:
    """A matrix cell, a ``@pytest.mark.qcrypto`` test, or any test using the ``qcrypto`` fixture."""
    return case_of(item) is not None or "qcrypto" in getattr(item, "fixturenames", ())


class RunGuard:
    """Keeps measurements off pytest-xdist workers, and watches for interrupts.

    Under ``-n N`` (N > 0) each worker skips its benchmark items (they would
    share the CPUs with other tests) and runs everything else; the controller,
    which collects nothing itself, counts those skips in the reports the
    workers send and prints one notice.  In a run with benchmark items, Ctrl-C
    and SIGTERM (a CI runner's timeout) are watched by :attr:`interrupts`
    (:mod:`pytest_qcrypto.interrupts`): SIGTERM raises ``KeyboardInterrupt``
    like Ctrl-C, so that pytest's interrupt path runs, and ``--qcrypto-save``
    marks the results complete only when every benchmark item ran to its end
    and no interrupt was seen.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = hasattr(config, "workerinput")
        self.skipped_on_workers = 0
        self.interrupts = Interrupts()

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        benchmarks = [item for item in items if is_benchmark(item)]
        if self.worker:
            for item in benchmarks:
                item.add_marker(pytest.mark.skip(reason=XDIST_SKIP))
        elif benchmarks:
            self.interrupts.catch()

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.interrupts.expect(item.nodeid for item in session.items if is_benchmark(item))

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.interrupts.finished(nodeid)

    def pytest_keyboard_interrupt(self) -> None:
        self.interrupts.note("KeyboardInterrupt")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if (not self.worker and report.when == "setup" and report.skipped
                and XDIST_SKIP in str(report.longrepr)):
            self.skipped_on_workers += 1  # a worker's report, relayed to the controller

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        n = self.skipped_on_workers
        if n:
            tx = len(self.config.getoption("tx", None) or ())
            workers = catalog.plural(tx, "worker") if tx else "several workers"
            terminalreporter.write_sep("=", "qcrypto")
            terminalreporter.write_line(
                f"qcrypto: {catalog.plural(n, 'benchmark item')} skipped: pytest-xdist ran "
                f"{workers}, and a measurement must not share the machine with other "
                "work; run benchmarks with -n 0")

    def pytest_unconfigure(self) -> None:
        self.interrupts.restore()
