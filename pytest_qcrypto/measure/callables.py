"""Your own code in KiB/s: time any callable that processes ``size`` bytes per call.

A team gates ``encrypt_record()`` of its own service as the catalog's algorithms are
gated: the same doubling-count loop, min-time, rounds, fixed count, ``--qcrypto-jobs``,
``--qcrypto-timeout`` and ``--qcrypto-isolate`` (:mod:`pytest_qcrypto.measure.harness`), the same
:class:`~pytest_qcrypto.measure.harness.Measurement`, tables, results files and regression gate.

One operation (kind ``callable``, direction ``call``: :data:`pytest_qcrypto.algorithms.catalog.RULES`)
is one call ``fn(data)`` of the user's callable on a buffer ``data`` of ``size`` random
bytes (the run's randomness: ``--qcrypto-seed`` makes it reproducible), and the figure
counts ``size`` bytes per call, as the caller declares: nothing checks that ``fn`` reads
them.  Its cells are named by the caller (``name``, default ``fn.__name__``; see
:mod:`pytest_qcrypto.algorithms.callable_names`) and sit in the row :data:`PLUGIN` (``callable``)::

    Benchmark results for 'encrypt_record' callable (KiB/s):
    plugin          4096
    callable    81234.56

Known-answer checks do not apply: the catalog has no vectors for your code.  Give
``check`` to have one call checked before timing: ``check(data, result)`` must return
true (``result`` is what ``fn(data)`` returned), else :class:`CheckError`.

Three ways in: :func:`measure_callable` here (plain Python, no pytest); the ``qcrypto``
fixture's ``qcrypto.measure_callable(fn, size=4096, name="encrypt_record")`` (recorded,
saved, gated); and the marker ``@pytest.mark.qcrypto(callable=fn, sizes=[...])`` with
``qcrypto_context.measure(qcrypto_case.size)`` in the test, as for algorithms.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

from pytest_qcrypto.measure import bench, harness, isolate as isolation, jobs as multi, limits
from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.measure.bench import Randomness
from pytest_qcrypto.algorithms.callable_names import PLUGIN, algorithm, name_problem  # noqa: F401
from pytest_qcrypto.backends.base import Unsupported
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.checks.known_answers import KnownAnswerError


class CheckError(KnownAnswerError):
    """``check(data, result)`` did not return true for a callable's result."""


@dataclass(frozen=True)
class Row:
    """The row of a callable's cells, as a crypto plugin's selection names one."""

    typed: str = PLUGIN
    canonical: str = PLUGIN


def callable_problem(fn: object, name: object = None, check: object = None) -> str | None:
    """Why ``fn`` (under ``name``, None: its ``__name__``) and ``check`` cannot be measured
    (one line), or None."""
    if not callable(fn):
        return f"fn must be a callable taking the data buffer, not {settings.shown_value(fn)}"
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        return (f"fn is a generator function ({default_name(fn)}): calling it runs none of its "
                "body; pass a function that does the work, e.g. lambda data: list(fn(data))")
    if inspect.iscoroutinefunction(fn):
        return (f"fn is an async function ({default_name(fn)}): calling it only makes a "
                "coroutine; pass a plain function, e.g. lambda data: asyncio.run(fn(data))")
    if check is not None and not callable(check):
        return (f"check must be None or a callable check(data, result) -> bool, not "
                f"{settings.shown_value(check)}")
    return name_problem(default_name(fn) if name is None else name)


def default_name(fn: Callable[..., Any]) -> str:
    """``fn.__name__`` (``encrypt_record``); ``<lambda>`` and nameless callables need a name."""
    return str(getattr(fn, "__name__", "") or type(fn).__name__)


class CallableBench:
    """A callable ready to be timed; what a test's context wraps (as ``BenchContext``).

    ``fn(data)`` is called with ``size`` bytes of ``rng``'s randomness.  Raises
    ``ValueError`` (:func:`callable_problem`) for an unusable ``fn``, ``name`` or ``check``.
    """

    def __init__(self, fn: Callable[[bytes], Any], name: str | None = None,
                 check: Callable[[bytes, Any], Any] | None = None,
                 rng: Randomness | None = None) -> None:
        problem = callable_problem(fn, name, check)
        if problem:
            raise ValueError(problem)
        self.fn, self.check = fn, check
        self.algorithm = algorithm(default_name(fn) if name is None else name)
        self.selection = Row()
        self.rng = rng or Randomness()
        self.driver: str | None = None
        #: set when a measurement timed out or was interrupted: not measured again
        self.abandoned = False
        self.closed = False

    def measure(self, size: int, *, min_time: float = 0.1, rounds: int = 3, jobs: int = 1,
                timeout: float | None = None, isolate: bool = False, count: int | None = None,
                decrypt: bool = False, roundtrip: bool = False,
                check_roundtrip: bool = False, threads: int = 1,
                measure: str = "time", reference: bool = True, settle: float = 0.0) -> Measurement:
        """Time calls on ``size``-byte buffers (bytes; ``min_time`` and ``timeout`` seconds).

        As :meth:`pytest_qcrypto.measure.bench.BenchContext.measure`: ``count`` fixes the calls per
        round, ``jobs`` runs the rounds in that many processes, ``timeout`` bounds the
        call (``MeasurementTimeout``), ``isolate`` measures in a child process, ``settle`` lets
        the rounds settle (:func:`pytest_qcrypto.measure.harness.time_runner`; ``reference`` is
        accepted and not timed: a callable's rounds are judged by their own times).  One call
        runs (and is checked by ``check``) before timing.  Raises ``ValueError`` for
        arguments outside the limits of the options (and for ``decrypt`` or ``roundtrip``:
        a callable has one direction, ``call``; ``check_roundtrip`` is ignored),
        :class:`CheckError`, ``TimerError``, and what ``fn`` raises.
        """
        if measure != "time":
            raise Unsupported("instructions are not counted for your own callables: the "
                              "function cannot be sent to a counting process")
        if self.abandoned or self.closed:
            raise RuntimeError(f"{PLUGIN} {self.algorithm.name}: "
                               f"{'abandoned after a timeout' if self.abandoned else 'closed'}")
        problem = bench.argument_problem(size, min_time, rounds, count)
        if decrypt or roundtrip:  # (check_roundtrip, a run-wide option, has nothing to check)
            problem = "a callable has one direction, call: no decrypt or roundtrip"
        if timeout is not None and not (isinstance(timeout, (int, float))
                                        and not isinstance(timeout, bool)
                                        and 0 < timeout <= limits.MAX_TIMEOUT):  # NaN too
            problem = (f"timeout must be a number of seconds more than 0 and at most "
                       f"{limits.MAX_TIMEOUT:g}, or None for no limit, not {timeout!r}")
        if threads != 1:  # the threads of --qcrypto-threads each open their own context
            problem = ("a callable is measured in one thread: --qcrypto-threads measures the "
                       "crypto plugins, each thread on a context of its own")
        if problem:
            raise ValueError(problem)
        multi.check_jobs(jobs)
        body = partial(self._measure_here, size, min_time, rounds, jobs, count, settle)
        if isolate:
            return isolation.run_isolated(body, timeout)
        try:
            return limits.call_with_deadline(body, timeout)
        except BaseException as exc:
            if not isinstance(exc, Exception):  # a timeout, Ctrl-C, SIGTERM mid-call
                self.abandoned = True
            raise

    def _measure_here(self, size: int, min_time: float, rounds: int, jobs: int,
                      count: int | None, settle: float = 0.0) -> Measurement:
        fn, data, name = self.fn, self.rng.bytes(size), self.algorithm.name
        result = fn(data)
        limits.rearm()
        verdict = self.check(data, result) if self.check is not None else True
        if not verdict:
            raise CheckError(f"{PLUGIN} {name} at {size} bytes: check(data, result) returned "
                             f"{settings.shown_value(verdict)}, not true")

        def run(n: int) -> None:
            for _ in range(n):
                fn(data)

        workers: tuple[harness.WorkerRecord, ...] = ()
        if jobs > 1:
            timing: harness.Timing | multi.JobsTiming = multi.time_jobs(
                run, jobs, min_time=min_time, rounds=rounds, count=count)
            workers = multi.worker_record(timing.workers, size)
        elif count is not None:
            timing = harness.time_count(run, count, rounds=rounds, settle=settle)
        else:
            timing = harness.time_runner(run, min_time=min_time, rounds=rounds, settle=settle)
        alg = self.algorithm
        return Measurement(
            algorithm=alg.name, plugin=PLUGIN, size=size, direction=alg.directions[0],
            count=timing.count, rounds_s=timing.rounds_s, cpu_s=timing.cpu_s,
            canonical_plugin=PLUGIN, operation=alg.operation, jobs=max(jobs, 1),
            workers=workers, calibration_note=timing.note)

    def close(self) -> None:
        """Nothing to release; a closed bench is not measured again."""
        self.closed = True

    def __enter__(self) -> CallableBench:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def measure_callable(fn: Callable[[bytes], Any], size: int, name: str | None = None, *,
                     min_time: float = 0.1, rounds: int = 3, count: int | None = None,
                     check: Callable[[bytes, Any], Any] | None = None,
                     timeout: float | None = None, seed: int | None = None) -> Measurement:
    """Time ``fn(data)`` on ``size`` random bytes per call, without pytest.

    ``size`` in bytes (1 to 256 MiB), ``min_time`` and ``timeout`` in seconds, ``rounds``
    1 to 1000, ``count`` calls per round (None: the doubling-count loop), ``seed`` makes
    the data reproducible.  ``name`` (default ``fn.__name__``) names the measurement's
    ``algorithm``; its ``plugin`` is ``callable``, its ``direction`` ``call``, and
    ``kib_per_s`` counts ``size`` bytes per call.  Known answers do not apply;
    ``check(data, result) -> bool`` checks one call before timing.  Raises
    ``ValueError`` (bad ``fn``, ``name``, ``check`` or arguments, one line),
    :class:`CheckError`, ``TimerError``, ``MeasurementTimeout`` past ``timeout`` (a
    ``BaseException``, as ``KeyboardInterrupt``: ``except Exception`` does not catch it) and
    what ``fn`` raises.

    Example::

        from pytest_qcrypto import measure_callable
        m = measure_callable(lambda data: encrypt_record(key, data), 4096,
                             name="encrypt_record")
        print(f"{m.kib_per_s:.2f} KiB/s")
    """
    with CallableBench(fn, name, check, Randomness(seed)) as runner:
        return runner.measure(size, min_time=min_time, rounds=rounds, count=count,
                              timeout=timeout)
