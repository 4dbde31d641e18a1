"""The objects behind the ``qcrypto`` and ``qcrypto_context`` fixtures.

They wrap :mod:`pytest_qcrypto.bench` with pytest's verdicts: a plugin that
cannot run, or lacks the algorithm, skips the test with the reason; a wrong
known answer or a plugin error fails it with a one-line message naming plugin,
algorithm and what went wrong.  A measurement (or opening a context) that
takes longer than ``--qcrypto-timeout`` fails with ``timed out after N s in
PLUGIN ALGORITHM at SIZE bytes`` (:mod:`pytest_qcrypto.timeout`).  Every
measurement is recorded into the run's summary table.
"""

from __future__ import annotations

import dataclasses
import errno
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import pytest

from pytest_qcrypto import bench, timeout as limits
from pytest_qcrypto.backends import AuthenticationError, Unavailable, Unsupported
from pytest_qcrypto.bench import BenchContext, Randomness
from pytest_qcrypto.harness import Measurement, TimerError
from pytest_qcrypto.jobs import JobsError
from pytest_qcrypto.kat import KnownAnswerError
from pytest_qcrypto.registry import Registry, RegistryError


def _errno_text(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "")
    return f"[{name or exc.errno}] {exc.strerror or exc}" if exc.errno else str(exc)


def _plugin_error(exc: BaseException) -> str:
    """``Type: message (file:line in function)``, where the plugin raised it."""
    where = limits.origin(exc)
    return f"{type(exc).__name__}: {exc}" + (f" ({where})" if where else "")


#: Called with each new measurement and a callable that measures the same cell again
#: (the regression gate's confirmation runs use it).
Recorder = Callable[[Measurement, Callable[[], Measurement]], None]


@dataclass(frozen=True)
class MeasureOptions:
    """How measurements run: the run's ``--qcrypto-*`` settings.

    ``min_time`` and ``timeout`` in seconds (``timeout`` None: no limit);
    ``rounds`` timed rounds; ``jobs`` processes at once; ``isolate`` measures
    in a child process.
    """

    min_time: float = 0.1
    rounds: int = 3
    jobs: int = 1
    timeout: float | None = None
    isolate: bool = False


def fail(message: str) -> NoReturn:
    """Fail the current test with a one-line message and no traceback.

    ``from None``: called while handling the plugin's exception, whose text
    the message already carries; pytest would print it again as the context.
    """
    raise pytest.fail.Exception(message, pytrace=False) from None


class MeasuredContext:
    """An open context as tests see it: :meth:`measure` times it and records the figure."""

    def __init__(self, ctx: BenchContext, record: Recorder, options: MeasureOptions) -> None:
        self.bench = ctx
        self._record = record
        self.options = options

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

    def measure(self, size: int, *, decrypt: bool = False, min_time: float | None = None,
                rounds: int | None = None) -> Measurement:
        """Time ``size``-byte operations, record the result in the summary, return it.

        ``min_time`` (seconds) and ``rounds`` default to the run's
        ``--qcrypto-min-time`` and ``--qcrypto-rounds``.  Fails the test on a
        wrong known answer, a plugin error, or arguments outside the limits of
        the options (``measure(-5)``, ``rounds=10**100``: a size of 1 byte to
        256 MiB, more than 0 and at most 3600 seconds, 1 to 1000 rounds); skips
        it when the size does not suit the algorithm (below its minimum, not a
        whole number of blocks).
        """
        options = dataclasses.replace(
            self.options, min_time=self.options.min_time if min_time is None else min_time,
            rounds=self.options.rounds if rounds is None else rounds)
        problem = bench.argument_problem(size, options.min_time, options.rounds)
        if problem:  # the test's own bug: a failure, never a skip
            fail(f"{self.plugin} {self.algorithm}: measure(): {problem}")
        m = self._measure(size, decrypt, options)
        self._record(m, lambda: self._measure(size, decrypt, options))
        return m

    def _measure(self, size: int, decrypt: bool, options: MeasureOptions) -> Measurement:
        who = f"{self.plugin} {self.algorithm}"
        if self.bench.abandoned:
            fail(f"{who} at {size} bytes: not measured, the context was abandoned after a timeout")
        if self.bench.closed:
            fail(f"{who} at {size} bytes: not measured, the context is closed")
        try:
            return self.bench.measure(size, decrypt=decrypt, **dataclasses.asdict(options))
        except limits.MeasurementTimeout as exc:
            fail(f"timed out after {exc.seconds:g} s in {who} at {size} bytes")
        except KnownAnswerError as exc:
            fail(str(exc))
        except Unsupported as exc:
            pytest.skip(f"{who}: {exc}")
        except AuthenticationError as exc:
            fail(f"{who} at {size} bytes: authentication failed: {exc}")
        except (TimerError, JobsError) as exc:
            fail(f"{who} at {size} bytes: {exc}")
        except OSError as exc:
            driver = f" (driver {self.driver})" if self.driver else ""
            fail(f"{who}{driver} at {size} bytes failed: {_errno_text(exc)}")
        except limits.IsolatedError as exc:
            fail(f"{who} at {size} bytes: {exc}")
        except Exception as exc:  # the plugin broke mid-measurement: this item fails, others run
            fail(f"{who} at {size} bytes failed: {_plugin_error(exc)}")

    def close(self) -> None:
        self.bench.close()

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
                 options: MeasureOptions | None = None) -> None:
        self._registry = registry
        self._record = record
        self._rng = rng
        self.options = options or MeasureOptions()
        self._open: list[MeasuredContext] = []

    def open(self, algorithm: str, plugin: str) -> MeasuredContext:
        """Open a keyed context of ``algorithm`` in ``plugin`` (a name as typed).

        Skips the test when the plugin is unavailable or lacks the algorithm.
        """
        try:
            registry = self._registry()
            selection = registry.resolve(plugin)
            alg = bench.resolve_algorithm(algorithm)
        except (RegistryError, Unsupported) as exc:
            fail(str(exc))
        why = registry.unavailable(selection.plugin)
        if why is not None:
            pytest.skip(f"{plugin}: unavailable: {why}")
        if alg.name not in registry.supported(selection.plugin):
            why = registry.unavailable(selection.plugin)
            pytest.skip(f"{plugin}: unavailable: {why}" if why
                        else f"{plugin} does not support {alg.name}")
        try:
            ctx = limits.call_with_deadline(
                lambda: bench.open_context(selection, alg, self._rng), self.options.timeout)
        except limits.MeasurementTimeout as exc:
            fail(f"timed out after {exc.seconds:g} s in {plugin} {alg.name} opening a context")
        except (Unavailable, Unsupported) as exc:
            pytest.skip(f"{plugin} {alg.name}: {exc}")
        except OSError as exc:
            pytest.skip(f"{plugin} {alg.name}: cannot open a context: {_errno_text(exc)}")
        except Exception as exc:  # a plugin bug: fail this item with it, the run goes on
            fail(f"{plugin} {alg.name}: cannot open a context: {_plugin_error(exc)}")
        measured = MeasuredContext(ctx, self._record, self.options)
        self._open.append(measured)
        return measured

    def close(self) -> None:
        """Close every context this fixture opened (teardown), also when one fails to close.

        The first error is raised once all are closed.
        """
        first: BaseException | None = None
        while self._open:
            try:
                self._open.pop().close()
            except Exception as exc:
                first = first or exc
        if first is not None:
            raise first
