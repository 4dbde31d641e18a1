"""The objects behind the ``qcrypto`` and ``qcrypto_context`` fixtures.

They wrap :mod:`pytest_qcrypto.measure.bench` with pytest's verdicts: a plugin that cannot
run, or lacks the algorithm, skips the test with the reason; a wrong known answer or a plugin
error fails it with a one-line message naming plugin, algorithm and what went wrong.  A
measurement (or opening a context) that takes longer than ``--qcrypto-timeout`` fails with
``timed out after N s in PLUGIN ALGORITHM at SIZE bytes`` (:mod:`pytest_qcrypto.measure.limits`);
a context whose ``close()`` does not return within ``CLOSE_TIMEOUT`` fails its item with
``PLUGIN ALGORITHM: close() did not return within 5 s; the context was abandoned``.  With
``--qcrypto-isolate`` the context is opened in each measurement's child process, never here.
Every measurement is recorded into the run's summary table.

When the regression gate is on, :meth:`MeasuredContext.measure` runs the retry loop that
:func:`pytest_qcrypto.gate.verdicts.judge` decides on: measure, ask the gate, measure again
while it says so (not spread rounds: pytest_side/spread.py); then it records the best try with
its verdict and fails the test when the verdict has failures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest

from pytest_qcrypto.gate import counted as counted_gate, verdicts as gate
from pytest_qcrypto.measure import bench, callables, limits, pkey_bench
from pytest_qcrypto.pytest_side import spread as spreading
from pytest_qcrypto.backends.base import AuthenticationError, Unavailable, Unsupported
from pytest_qcrypto.measure.bench import BenchContext, Calibrations, Case, Randomness
from pytest_qcrypto.measure.reuse import KeyPairs
from pytest_qcrypto.measure.harness import Measurement, TimerError
from pytest_qcrypto.measure.isolate import IsolatedError
from pytest_qcrypto.measure.counting import CountingError
from pytest_qcrypto.measure.jobs import JobsError
from pytest_qcrypto.checks.known_answers import KnownAnswerError
from pytest_qcrypto.measure.machine import WaitMeter
from pytest_qcrypto.pytest_side.matrix import CASE_KEY
from pytest_qcrypto.measure.registry import Registry, RegistryError, Selection, peers_of
from pytest_qcrypto.gate.tries import Meter, judge_tries, retry  # noqa: F401 (their old home)


def _open_failed(who: str, exc: BaseException) -> NoReturn:
    """Skip or fail the test for what a plugin's ``open()`` raised (``who``: plugin, algorithm).

    Unavailable, unsupported or refused by the system (``OSError``): a skip
    with the reason; anything else is a plugin bug that fails this item.
    """
    if isinstance(exc, (Unavailable, Unsupported)):
        pytest.skip(f"{who}: {exc}")
    if isinstance(exc, OSError):
        pytest.skip(f"{who}: cannot open a context: {limits.errno_text(exc)}")
    fail(f"{who}: cannot open a context: {limits.plugin_error(exc)}")


def _abandoned(who: str, exc: limits.CallTimeout) -> str:
    """``stuckclose sha256: close() did not return within 5 s; the context was abandoned``."""
    return f"{who}: {exc}; the context was abandoned"


#: Called with each kept measurement (the best try of a cell) and its verdict (None: no gate).
Recorder = Callable[[Measurement, "gate.Verdict | None"], None]
#: What a measurement is judged against (the regression gate's pytest side gives it).
CriteriaOf = Callable[[Measurement], gate.Criteria]
Spreader = Callable[[str, str, "int | None", "dict[str, Any]"], "Measurement | None"]  # spread.py


@dataclass(frozen=True)
class MeasureOptions:
    """How measurements run: the run's ``--qcrypto-*`` settings.

    ``min_time`` and ``timeout`` in seconds (``timeout`` None: no limit); ``rounds`` timed rounds;
    ``jobs`` processes at once; ``isolate`` measures in a child process; ``count`` a fixed number
    of iterations per round (None: calibrate); ``check_roundtrip`` checks each round trip's
    result; ``threads`` threads at once; ``aad`` an AEAD's AAD bytes (13 under
    ``--qcrypto-size=tls``); ``misalign``, ``update_size``: their options; ``reference`` and
    ``settle``: what follows a round (``Run.round_options``)."""

    min_time: float = 0.1
    rounds: int = 3
    jobs: int = 1
    timeout: float | None = None
    isolate: bool = False
    count: int | None = None
    check_roundtrip: bool = False
    threads: int = 1
    measure: str = "time"  # or "instructions": --qcrypto-measure (measure/counting.py)
    aad: int = 0
    misalign: int | None = None
    update_size: int | None = None
    reference: bool = True  # the reference workload after each round (harness.time_runner)
    settle: float = 0.0  # 0: every round is timed; else fewer once they agree (harness.SETTLE)


#: Options left unsaid to ``measure()`` at these values (older targets do not take them).
UNSAID = {("measure", "time"), ("aad", 0), ("misalign", None), ("update_size", None), ("reference", True), ("settle", 0.0)}

def fail(message: str) -> NoReturn:
    """Fail the current test with a one-line message and no traceback.  ``from None``: called
    while handling the plugin's exception, whose text the message already carries."""
    raise pytest.fail.Exception(message, pytrace=False) from None


class MeasuredContext:
    """An open context as tests see it: :meth:`measure` times it and records the figure."""

    def __init__(self, ctx: BenchContext, record: Recorder, options: MeasureOptions,
                 criteria: CriteriaOf | None = None, meter: WaitMeter | None = None,
                 spread: Spreader | None = None) -> None:
        self.bench = ctx
        self._record = record
        self.options = options
        self._criteria = criteria
        self._meter = meter
        self._spread = spread  # the run's spread measurement of a matrix cell

    @property
    def algorithm(self) -> str:
        return self.bench.algorithm.name

    @property
    def plugin(self) -> str:
        """The plugin name as typed."""
        return self.bench.selection.typed

    @property
    def driver(self) -> str | None:
        """The implementation that does the work, when the plugin can tell (kernel plugins)."""
        return self.bench.driver

    def measure(self, size: int | None = None, *, decrypt: bool = False,
                min_time: float | None = None, rounds: int | None = None,
                roundtrip: bool = False, count: int | None = None,
                operation: str | None = None) -> Measurement:
        """Time ``size``-byte operations, record the result in the summary, return it.

        The kinds without a buffer size (signatures, key agreement, KEMs, RSA encryption,
        KDFs) take no size and ``operation``, one of the kind's directions:
        ``measure(operation="sign")``, ``measure(operation="encaps")``; a KDF's only one,
        ``derive``, may be left out.  Their figure is ``Measurement.ops_per_s``.

        ``min_time`` (seconds), ``rounds`` and ``count`` (iterations per round) default to
        the run's ``--qcrypto-min-time``, ``--qcrypto-rounds`` and ``--qcrypto-count``;
        ``roundtrip`` times one encryption and one decryption per iteration (ciphers and
        AEADs; direction ``roundtrip``).  Fails the test on a
        wrong known answer, a plugin error, or arguments outside the limits of
        the options (``measure(-5)``, ``rounds=10**100``: a size of 1 byte to
        256 MiB, more than 0 and at most 3600 seconds, 1 to 1000 rounds); skips
        it when the size does not suit the algorithm (below its minimum, not a
        whole number of blocks).
        """
        options = dataclasses.replace(  # rounds asked for: every one of them (no settling)
            self.options, min_time=self.options.min_time if min_time is None else min_time,
            **({} if rounds is None else {"rounds": rounds, "settle": 0.0}),
            count=self.options.count if count is None else count)
        alg = self.bench.algorithm
        problem = pkey_bench.operation_problem(alg, size, operation,
                                               pkey_bench.declares(self.bench.selection))
        if alg.rules.sized:
            problem = problem or bench.argument_problem(size, options.min_time, options.rounds,
                                                        options.count)
        else:
            size = 0
            problem = problem or bench.argument_problem(1, options.min_time, options.rounds,
                                                        options.count)
        if decrypt and roundtrip:
            problem = "decrypt and roundtrip: choose one (a round trip times both directions)"
        if problem:  # the test's own bug: a failure, never a skip
            fail(f"{self.plugin} {self.algorithm}: measure(): {problem}")
        way: dict[str, Any] = {"decrypt": decrypt, "roundtrip": roundtrip}
        if not alg.rules.sized:
            way = {"operation": operation or str(alg.directions[0])}
        m = self._measure(size, way, options, spread=options == self.options)
        if self._criteria is None:  # the regression gate is off
            self._record(m, None)
            return m
        first_wait = self._meter.share() if self._meter is not None else None
        verdict = counted_gate.judge(m, self._criteria(m)) if m.counted is not None else \
            retry(m, lambda: self._measure(size, way, options), self._criteria(m), first_wait)
        if self._meter is not None:
            self._meter.start()  # the next measurement of this item is timed from here
        self._record(verdict.measurement, verdict)
        if verdict.failed:  # a confirmed regression or a floor
            pytest.fail(verdict.short_message, pytrace=False)
        return m

    def _measure(self, size: int, way: dict[str, Any], options: MeasureOptions,
                 spread: bool = False) -> Measurement:
        who = f"{self.plugin} {self.algorithm}"
        at = f"{way['operation']}" if "operation" in way else f"at {size} bytes"
        if self.bench.abandoned:
            fail(f"{who} {at}: not measured, the context was abandoned after a timeout")
        if self.bench.closed:
            fail(f"{who} {at}: not measured, the context is closed")
        try:
            if spread and (got := spreading.taken(self._spread, self, size, way)) is not None:
                return got
            kwargs = {k: v for k, v in dataclasses.asdict(options).items() if (k, v) not in UNSAID}
            return self.bench.measure(size, **way, **kwargs)
        except limits.MeasurementTimeout as exc:
            fail(f"timed out after {exc.seconds:g} s in {who} {at}")
        except limits.CallTimeout as exc:
            fail(_abandoned(who, exc))
        except bench.OpenError as exc:  # opening it in the isolated child failed
            _open_failed(who, exc.cause)
        except KnownAnswerError as exc:
            fail(str(exc))
        except Unsupported as exc:
            pytest.skip(f"{who}: {exc}")
        except AuthenticationError as exc:
            fail(f"{who} {at}: authentication failed: {exc}")
        except (TimerError, JobsError, CountingError, IsolatedError) as exc:  # (no OSError)
            fail(f"{who} {at}: {exc}")
        except OSError as exc:
            driver = f" (driver {self.driver})" if self.driver else ""
            fail(f"{who}{driver} at {size} bytes failed: {limits.errno_text(exc)}")
        except Exception as exc:  # the plugin broke mid-measurement: this item fails, others run
            fail(f"{who} {at} failed: {limits.plugin_error(exc)}")

    def close(self) -> None:
        """Close the context (within ``limits.CLOSE_TIMEOUT`` seconds).

        Fails the test with ``PLUGIN ALGORITHM: close() did not return within
        5 s; the context was abandoned`` past the limit; raises what the
        plugin's ``close()`` raises."""
        try:
            self.bench.close()
        except limits.CallTimeout as exc:
            fail(_abandoned(f"{self.plugin} {self.algorithm}", exc))

    def __enter__(self) -> MeasuredContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class QcryptoFixture:
    """The ``qcrypto`` fixture: open contexts of any (algorithm, plugin) inside a test.

    Example::

        def test_sha256_floor(qcrypto):
            ctx = qcrypto.open("sha256", "openssl")
            assert ctx.measure(4096).kib_per_s > 100_000

    Contexts are closed when the test ends, also when it fails.
    """

    def __init__(self, registry: Callable[[], Registry], record: Recorder, rng: Randomness,
                 options: MeasureOptions | None = None,
                 interrupted: Callable[[], bool] = lambda: False, *,
                 criteria: CriteriaOf | None = None, meter: WaitMeter | None = None,
                 targets: Any = None, asked: Callable[[], list[Any]] | None = None,
                 spread: Spreader | None = None,
                 calibrations: Calibrations | None = None, keys: KeyPairs | None = None) -> None:
        #: where calibration starts (the run's; None: each context's own); a quick run's keys
        self._spread, self._registry, self._calibrations = spread, registry, calibrations
        self._keys = keys  # (pytest_qcrypto.measure.reuse; None: every context its own)
        #: the crypto plugins the run chose (None: any): a size-less cell's checks cross with
        #: these and the reference plugin only (``registry.peers_of``)
        self._asked = asked
        #: ``--qcrypto-target``'s plugin (pytest_qcrypto.pytest_side.targets): opens ``PLUGIN@NAME``
        self._targets = targets
        self._record = record
        #: with the regression gate on: what each measurement is judged against, and the
        #: meter of the waits for a CPU, started when the item started
        self._criteria = criteria
        self._meter = meter
        self._rng = rng
        self.options = options or MeasureOptions()
        #: whether the run is being interrupted (Ctrl-C, SIGTERM): contexts are then
        #: closed as abandoned, so that no close error turns the interrupt into a crash
        self._interrupted = interrupted
        self._open: list[MeasuredContext] = []
        #: the plugin and algorithm of the first context whose close() raised (teardown)
        self.failed_close = ""

    def open(self, algorithm: str, plugin: str) -> MeasuredContext:
        """Open a keyed context of ``algorithm`` in ``plugin`` (a name as typed).

        Skips the test when the plugin is unavailable or lacks the algorithm.
        """
        if self._targets is not None and "@" in plugin:  # measured on a --qcrypto-target
            try:
                remote = self._targets.open(algorithm, plugin, self.options.isolate,
                                            self.options.timeout)
            except limits.MeasurementTimeout as exc:
                fail(f"timed out after {exc.seconds:g} s in {plugin} {algorithm} opening a "
                     "context")
            except Exception as exc:  # what the plugin's open() raised there
                _open_failed(f"{plugin} {algorithm}", exc)
            return self._opened(remote)
        try:
            registry = self._registry()
            selection = registry.resolve(plugin)
            alg = bench.resolve_algorithm(algorithm)
        except (RegistryError, Unsupported) as exc:
            fail(str(exc))
        why = registry.lacks(selection.plugin, plugin, alg)
        if why:
            pytest.skip(why)
        try:  # isolated: opened in each measurement's child process
            ctx = limits.call_with_deadline(lambda: bench.open_context(
                selection, alg, self._rng, isolate=self.options.isolate,
                calibrations=self._calibrations, keys=self._keys), self.options.timeout)
        except limits.MeasurementTimeout as exc:
            fail(f"timed out after {exc.seconds:g} s in {plugin} {alg.name} opening a context")
        except Exception as exc:  # a plugin bug fails this item, the run goes on
            _open_failed(f"{plugin} {alg.name}", exc)
        if not alg.rules.sized:  # its checks cross with the other plugins that have it
            ctx.peers = lambda: peers_of(registry, selection, alg, self._asked_plugins())
        return self._opened(ctx)

    def _asked_plugins(self) -> list[Any] | None:
        try:
            return self._asked() if self._asked is not None else None
        except Exception:  # no plugin chosen nor available: the reference plugin only
            return []

    def _opened(self, ctx: Any) -> MeasuredContext:
        measured = MeasuredContext(ctx, self._record, self.options, self._criteria, self._meter,
                                   self._spread)
        self._open.append(measured)
        return measured

    def open_callable(self, fn: Callable[[bytes], Any], name: str | None = None,
                      check: Callable[[bytes, Any], Any] | None = None) -> MeasuredContext:
        """Your own code as a context: its ``measure(size)`` times ``fn(data)`` on ``size``
        random bytes per call and records, saves and gates it like an algorithm's cell (row
        ``callable``, header ``Benchmark results for 'NAME' callable (KiB/s):``; see
        :mod:`pytest_qcrypto.measure.callables`).  ``name`` defaults to ``fn.__name__``.  Known
        answers do not apply; ``check(data, result) -> bool`` checks one call.  Fails the
        test (one line) for an ``fn`` or ``check`` that is not callable, or a ``name`` that
        is not usable or is a catalog algorithm's; a call that raises fails it too."""
        try:
            return self._opened(callables.CallableBench(fn, name, check, self._rng))
        except ValueError as exc:
            fail(f"measure_callable(): {exc}")

    def measure_callable(self, fn: Callable[[bytes], Any], size: int, name: str | None = None,
                         *, check: Callable[[bytes, Any], Any] | None = None,
                         min_time: float | None = None, rounds: int | None = None,
                         count: int | None = None) -> Measurement:
        """``open_callable(fn, name, check).measure(size, ...)``: ``size`` in bytes (1 to
        256 MiB) per call, the rest as :meth:`MeasuredContext.measure`.  Example::

            def test_encrypt_record(qcrypto):
                qcrypto.measure_callable(lambda data: encrypt_record(KEY, data), size=4096,
                                         name="encrypt_record")
        """
        problem = bench.argument_problem(size, 1, 1)
        if problem:
            fail(f"measure_callable(): {problem}")
        return self.open_callable(fn, name, check).measure(size, min_time=min_time,
                                                          rounds=rounds, count=count)

    def close(self) -> None:
        """Close every context this fixture opened (teardown), also when one fails to close.

        Each ``close()`` has its own limit (``limits.CLOSE_TIMEOUT`` seconds).
        The first error is raised once all are closed.  While the run is being
        interrupted, or once an interrupt arrives during a close, the rest are
        closed as abandoned (within the limit, errors ignored) and the
        interrupt is raised at the end.
        """
        first: BaseException | None = None
        interrupt: BaseException | None = None
        while self._open:
            ctx = self._open.pop()
            if interrupt is not None or self._interrupted():
                ctx.bench.abandoned = True
            try:
                ctx.close()
            except (Exception, pytest.fail.Exception) as exc:
                if first is None:
                    first, self.failed_close = exc, f"{ctx.plugin} {ctx.algorithm}"
            except BaseException as exc:  # Ctrl-C or SIGTERM during this close
                interrupt = interrupt or exc
        if interrupt is not None:
            raise interrupt
        if first is not None:
            raise first


# -- the fixtures' work (pytest finds the fixtures in pytest_qcrypto.plugin) ----------------

#: Where the fixtures find how the run makes a ``qcrypto`` fixture for an item.
FIXTURE_KEY = pytest.StashKey[Callable[[pytest.Item], QcryptoFixture]]()


def qcrypto_fixture(request: pytest.FixtureRequest) -> Iterator[QcryptoFixture]:
    """The ``qcrypto`` fixture of ``request``'s item, closed (its contexts too) at teardown."""
    fixture = request.config.stash[FIXTURE_KEY](request.node)
    try:
        yield fixture
    finally:
        try:
            fixture.close()
        except Exception as exc:  # the plugin's close() raised: its bug, said in one line
            fail(f"{fixture.failed_close}: close() failed: {limits.plugin_error(exc)}")


def case_of_request(request: pytest.FixtureRequest) -> Case:
    """The ``qcrypto_case`` of ``request``'s item: set by the matrix or the marker."""
    case = request.node.stash.get(CASE_KEY, None)
    if case is None:
        pytest.fail("qcrypto_case needs @pytest.mark.qcrypto(algorithms=..., ...) on the test",
                    pytrace=False)
    return case


def context_of_request(request: pytest.FixtureRequest, qcrypto: QcryptoFixture,
                       qcrypto_case: Case) -> MeasuredContext:
    """The ``qcrypto_context`` of ``request``'s item: the case's open context, or under
    ``@pytest.mark.qcrypto(callable=fn, ...)`` the callable (:meth:`QcryptoFixture.open_callable`)."""
    marker = request.node.get_closest_marker("qcrypto")
    if marker is not None and "callable" in marker.kwargs:
        return qcrypto.open_callable(marker.kwargs["callable"], qcrypto_case.algorithm,
                                     marker.kwargs.get("check"))
    return qcrypto.open(qcrypto_case.algorithm, qcrypto_case.plugin)
