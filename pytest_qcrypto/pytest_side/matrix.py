"""The speed matrix and the marker's cases: which benchmark items a run has.

``--qcrypto-digest`` / ``--qcrypto-cipher`` add a collector, ``qcrypto``, with one
item per algorithm x plugin x size (``qcrypto::sha256[openssl-16]``);
``@pytest.mark.qcrypto(algorithms, plugins=None, sizes=None, decrypt=False,
roundtrip=False, floor=None)`` parametrizes a test the same way.  :class:`Matrix` is the plugin that
adds both; it reads the run's checked settings, registry and plugins from the
object given to it (:class:`Run`), and is found from the items through
``config.stash[MATRIX_KEY]``.  :class:`RunGuard` keeps benchmark items off
pytest-xdist workers and watches for interrupts.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from itertools import product
from types import TracebackType
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from pytest_qcrypto.measure import callables, memory, pkey_bench
from pytest_qcrypto.algorithms import catalog, settings
from pytest_qcrypto.measure.bench import Case
from pytest_qcrypto.algorithms.catalog import Algorithm
from pytest_qcrypto.measure.interrupts import Interrupts, late_line
from pytest_qcrypto.measure.registry import Registry, RegistryError, Selection
from pytest_qcrypto.gate.rules import marker_floors
from pytest_qcrypto.algorithms.settings import Settings, SettingsError
from pytest_qcrypto.pytest_side import dormant

CASE_KEY = pytest.StashKey[Case]()
MATRIX_KEY = pytest.StashKey["Matrix"]()
#: The options that choose algorithms (``--qcrypto-digest``...) and the kinds each takes.
SELECTION = tuple(catalog.OPTION_GROUPS.items())


class Run(Protocol):
    """What the matrix needs of the run: its checked settings and plugins."""

    config: pytest.Config
    requested: bool
    matrix_only: bool

    @property
    def settings(self) -> Settings: ...

    @property
    def registry(self) -> Registry: ...

    @property
    def selections(self) -> list[Selection]: ...


def _size_text(size: object) -> str:
    """A marker's size as :func:`settings.parse_sizes` reads it; an int too long for ``str()``
    (over 4300 digits) is a usage error here, named as it is."""
    if isinstance(size, int) and not isinstance(size, bool) and abs(size).bit_length() > 99:
        problem = (f"over the limit of {settings.MAX_SIZE} bytes (256 MiB)" if size > 0
                   else "below the 1 byte a buffer needs at least")
        raise SettingsError(f"sizes: {settings.shown_value(size)} is {problem}")
    return str(size)


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, int)):
        return [value]
    return list(value)


def _marker_sizes(run: Run, sizes: Any) -> tuple[int, ...]:
    """A marker's ``sizes`` (None: the run's); ``sizes=[]`` is refused, not the default."""
    if sizes is None:
        return run.settings.sizes
    if not _as_list(sizes):
        raise SettingsError("sizes=[]: give at least one size, or leave sizes out for the "
                            "run's sizes")
    return settings.parse_sizes([_size_text(s) for s in _as_list(sizes)], "sizes")


@dataclass(frozen=True)
class BadMarker:
    """The one case of a test whose marker cannot be read: the test fails with ``why``."""

    why: str


def _supported(run: Run) -> set[str]:
    return set().union(*(run.registry.supported(s.plugin) for s in run.selections))


def matrix_algorithms(run: Run) -> list[Algorithm]:
    """The algorithms as named; of ``all``, only those a chosen plugin supports."""
    opt = run.config.getoption
    typed = settings.split_list([t for o, _ in SELECTION for t in opt(f"qcrypto_{o}")])
    if settings.ALL not in (t.lower() for t in typed):
        return list(run.settings.algorithms)
    named = {a.name for a in map(catalog.lookup, typed) if a is not None}
    return [a for a in run.settings.algorithms if a.name in named | _supported(run)]


def cells_of(alg: Algorithm, sel: Selection, sizes: tuple[int, ...], decrypt: bool,
             roundtrip: bool, plugin: str = "") -> list[Case]:
    """The cases of one algorithm in one plugin (named ``plugin``, else as typed): one per
    size, or, for a kind without a buffer size (``KindRules.sized`` False), one per direction
    the plugin has with size 0 (a signature's keygen where it generates signature keys)."""
    plugin, keys = plugin or sel.typed, pkey_bench.declares(sel)
    if not alg.rules.sized:
        return [Case(alg.name, plugin, 0, operation=str(d)) for d in alg.directions_in(keys)]
    return [Case(alg.name, plugin, size, decrypt and alg.can_decrypt,
                 roundtrip and alg.can_roundtrip) for size in sizes]


def cases(run: Run) -> Iterator[Case]:
    """The speed matrix, in table order: algorithm, then plugin, then size (or operation)."""
    s = run.settings
    targets = getattr(run, "target_names", None) or [""]  # --qcrypto-target: PLUGIN@NAME
    for alg, sel, target in product(matrix_algorithms(run), run.selections, targets):
        yield from cells_of(alg, sel, s.sizes, s.decrypt, s.roundtrip,
                            f"{sel.typed}@{target}" if target else sel.typed)


def check_all(run: Run) -> None:
    """``all`` must find something to measure for each option it is given to.

    ``--qcrypto-cipher all --qcrypto-plugin hashlib`` is a usage error, also beside
    ``--qcrypto-digest sha256``: the ciphers would silently be left out.  ``all``
    given to several options (``qcrypto speed`` without -C, -D or -M gives it to all
    three) asks for everything the plugins support, like ``openssl speed``: one
    algorithm of any of their kinds will do."""
    if not run.config.getoption("qcrypto_target"):  # a target checks its own memory
        copies = getattr(run, "jobs", 1) * getattr(run, "threads", 1)
        for alg in run.settings.algorithms:
            if why := memory.problem(alg, copies):
                raise SettingsError(f"--qcrypto-{alg.rules.option}: {why}")
    opt = run.config.getoption
    asked = [(f"--qcrypto-{o} {settings.ALL}", kinds) for o, kinds in SELECTION
             if settings.ALL in (t.lower() for t in settings.split_list(opt(f"qcrypto_{o}")))]
    if len(asked) > 1:
        asked = [("", tuple(k for _, kinds in SELECTION for k in kinds))]
    supported = _supported(run) if asked else set()  # (a kernel plugin's asks the kernel)
    for option, kinds in asked:
        if not any(a.name in supported for a in catalog.algorithms(kinds)):
            raise SettingsError(_nothing_to_measure(run, option, kinds))


def _nothing_to_measure(run: Run, option: str, kinds: tuple[str, ...]) -> str:
    """Why ``all`` found nothing: each chosen plugin unavailable or without the kinds;
    and which plugins here do have one."""
    kind = catalog.kind_words(kinds)
    why = []
    for s in run.selections:
        reason = run.registry.unavailable(s.plugin)
        why.append(f"{s.typed}: unavailable: {reason}" if reason
                   else f"{s.typed} supports no {kind}")
    of_kinds = {a.name for a in catalog.algorithms(kinds)}
    others = [p.name for p in run.registry.plugins if run.registry.supported(p) & of_kinds]
    where = f"{option}: " if option else ""
    if others:
        hint = (f"Plugins that support one here: {', '.join(others)}; choose them with "
                "--qcrypto-plugin")
    else:
        hint = f"No plugin here supports a {kind}"
    return f"{where}nothing to measure: {'; '.join(why)}. {hint} {settings.LIST_HINT}"


def marker_cases(run: Run, marker: pytest.Mark) -> list[Case]:
    """Cases of ``@pytest.mark.qcrypto(algorithms, plugins=None, sizes=None, decrypt=False,
    roundtrip=False)``, or of ``@pytest.mark.qcrypto(callable=fn, sizes=None, name=None,
    check=None)``: your own code (:mod:`pytest_qcrypto.measure.callables`), one case per size in
    the row ``callable``, named ``name`` (default ``fn.__name__``); the test measures it as an
    algorithm, ``qcrypto_context.measure(qcrypto_case.size)``.  ``floor=`` applies to both."""
    kwargs = dict(marker.kwargs)
    if "callable" in kwargs:
        return _callable_cases(run, kwargs, list(marker.args))
    names = list(marker.args) + settings.split_list(_as_list(kwargs.pop("algorithms", [])))
    algorithms: list[Algorithm] = settings.parse_algorithms(names, catalog.KINDS, "algorithms")
    if not algorithms:
        raise SettingsError("give at least one algorithm")
    typed = settings.split_list(_as_list(kwargs.pop("plugins", None)))
    selections = [run.registry.resolve(t) for t in typed] or run.selections
    given = kwargs.pop("sizes", None)  # the marker's sizes (None: the run's --qcrypto-size)
    sizes_t = _marker_sizes(run, given)
    settings.check_sizes(algorithms, sizes_t, "--qcrypto-size" if given is None else "sizes")
    decrypt = bool(kwargs.pop("decrypt", False))
    roundtrip = bool(kwargs.pop("roundtrip", False))
    if decrypt and roundtrip:
        raise SettingsError("decrypt=True and roundtrip=True: choose one (a round trip times "
                            "one encryption and one decryption per iteration)")
    if "floor" in kwargs:  # applied by the regression gate; checked here, while collecting
        marker_floors(kwargs.pop("floor"), "floor")
    if kwargs:
        raise SettingsError(f"unknown marker arguments: {', '.join(kwargs)}")
    return [c for a, s in product(algorithms, selections)
            for c in cells_of(a, s, sizes_t, decrypt, roundtrip)]


def _callable_cases(run: Run, kwargs: dict[str, Any], args: list[Any]) -> list[Case]:
    fn, name, check = kwargs.pop("callable"), kwargs.pop("name", None), kwargs.pop("check", None)
    problem = callables.callable_problem(fn, name, check)
    if problem:
        raise SettingsError(f"callable=: {problem}")
    sizes_t = _marker_sizes(run, kwargs.pop("sizes", None))
    if "floor" in kwargs:
        marker_floors(kwargs.pop("floor"), "floor")
    if args or kwargs:
        raise SettingsError(f"{', '.join(list(kwargs) or ['algorithms'])}: not with callable= "
                            "(it takes sizes, name, check and floor)")
    name = callables.default_name(fn) if name is None else name
    return [Case(name, callables.PLUGIN, size) for size in sizes_t]


class Matrix:
    """The plugin that adds the speed matrix and parametrizes the marker's tests."""

    def __init__(self, run: Run) -> None:
        self.run = run

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, Any]:
        rep = yield
        if self.run.requested and isinstance(collector, pytest.Session) and rep.passed:
            matrix = SpeedMatrix.from_parent(collector, name="qcrypto", nodeid="qcrypto")
            rep.result = [matrix] if self.run.matrix_only else [*rep.result, matrix]
        return rep

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        marker = metafunc.definition.get_closest_marker("qcrypto")
        if marker is None or "qcrypto_case" not in metafunc.fixturenames:
            return
        try:
            found = marker_cases(self.run, marker)
        except (SettingsError, RegistryError, TypeError, ValueError) as exc:
            # this test fails with the reason; the module's other tests still run
            metafunc.parametrize("qcrypto_case", [BadMarker(str(exc))], ids=["bad-marker"])
            return
        metafunc.parametrize("qcrypto_case", found,
                             ids=[f"{c.algorithm}-{c.id}" for c in found])

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        case = getattr(item, "callspec", None) and item.callspec.params.get("qcrypto_case")
        if isinstance(case, BadMarker):
            name = getattr(item, "originalname", item.name)
            pytest.fail(f"{name}: @pytest.mark.qcrypto: {case.why}", pytrace=False)


class SpeedMatrix(pytest.Collector):
    """The built-in matrix: one item per algorithm x plugin x size, ``qcrypto::sha256[openssl-16]``."""

    def collect(self) -> list[pytest.Item]:
        run = self.config.stash[MATRIX_KEY].run
        items: list[pytest.Item] = []
        for case in cases(run):
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
    """One cell of the speed matrix: measure the case's size or operation (the figure is
    recorded)."""
    if qcrypto_case.operation:
        qcrypto_context.measure(operation=qcrypto_case.operation)
        return
    qcrypto_context.measure(qcrypto_case.size, decrypt=qcrypto_case.decrypt,
                            roundtrip=qcrypto_case.roundtrip)


def case_of(item: pytest.Item) -> Case | None:
    """The qcrypto case of an item: a matrix cell, or a test parametrized by the marker."""
    case = item.stash.get(CASE_KEY, None)
    if case is None:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("qcrypto_case") if callspec is not None else None
    return case if isinstance(case, Case) else None
# -- reliability: interrupts, pytest-xdist -----------------------------------------------

#: The skip reason of benchmark items on pytest-xdist workers.
XDIST_SKIP = dormant.XDIST_SKIP


def is_benchmark(item: pytest.Item) -> bool:
    """A matrix cell, a ``@pytest.mark.qcrypto`` test, or any test using the ``qcrypto`` fixture."""
    return case_of(item) is not None or "qcrypto" in getattr(item, "fixturenames", ())


class RunGuard:
    """Keeps measurements off pytest-xdist workers, and watches for interrupts.

    Under ``-n N`` (N > 0) each worker skips its benchmark items (they would
    share the CPUs with other tests) and runs everything else; the controller,
    which collects nothing itself, counts those skips in the reports the
    workers send and prints one notice.  In a run with benchmark items, Ctrl-C,
    SIGTERM (a CI runner's timeout) and SIGHUP are watched by :attr:`interrupts`
    (:mod:`pytest_qcrypto.measure.interrupts`): SIGTERM and SIGHUP raise
    ``KeyboardInterrupt`` like Ctrl-C, so that pytest's interrupt path runs;
    ``--qcrypto-save`` marks the results complete only when every benchmark item
    ran to its end and no interrupt was seen; a signal after the save is said in
    one line at the end (:func:`late_line`), the run's status kept."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = hasattr(config, "workerinput")
        self.skipped_on_workers = 0
        self.interrupts = Interrupts()
        self.session: pytest.Session | None = None

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

    @pytest.hookimpl(tryfirst=True)  # before the terminal reporter draws the interrupt
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.interrupts.note("KeyboardInterrupt")
        with_line_numbers(excinfo)

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

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    def pytest_unconfigure(self) -> None:
        self.interrupts.restore()
        late = self.interrupts.late  # (read after restore: none can come in between)
        if late and self.session is not None:
            run = self.config.pluginmanager.get_plugin("qcrypto-run")
            saved = getattr(getattr(run, "gate", None), "saved", None)
            line = late_line(late, saved, int(self.session.exitstatus))
            reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:  # (-p no:terminal: nothing is written)
                reporter.write_line(line)


def with_line_numbers(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """Give every entry of an interrupt's traceback a line number, so pytest can draw it.

    A signal can land where CPython 3.11 records no line (``tb_lineno`` None),
    and pytest's drawing of the interrupt then fails with a ``TypeError`` and
    exit status 1 instead of 2.  Such entries get their frame's current line
    (else the function's first); a traceback without them is left as it is.
    """
    tb = excinfo.tb
    if not any(e.tb_lineno is None for e in _entries(tb)):
        return
    fixed = lines_filled(tb)
    excinfo.value.__traceback__ = fixed
    if hasattr(excinfo, "_excinfo") and hasattr(excinfo, "_traceback"):
        excinfo._excinfo = (excinfo.type, excinfo.value, fixed)  # what pytest draws from
        excinfo._traceback = None  # the entries pytest may have cached


def _entries(tb: Any) -> list[Any]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def lines_filled(tb: Any) -> TracebackType | None:
    """A copy of traceback ``tb`` in which an entry without a line number has one."""
    rebuilt: TracebackType | None = None
    for e in reversed(_entries(tb)):
        line = e.tb_lineno
        if line is None:
            line = e.tb_frame.f_lineno or e.tb_frame.f_code.co_firstlineno
        rebuilt = TracebackType(rebuilt, e.tb_frame, e.tb_lasti, line)
    return rebuilt
