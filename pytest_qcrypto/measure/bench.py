"""Open a checked context and measure it: the plain-Python core of a benchmark.

This is what the pytest fixtures call, and what a script can call directly::

    from pytest_qcrypto.measure import bench
    from pytest_qcrypto.backends.openssl import OpenSSLPlugin
    from pytest_qcrypto.measure.registry import Selection

    with bench.open_context(Selection("openssl", OpenSSLPlugin()), "sha256") as ctx:
        m = ctx.measure(4096, min_time=0.1, rounds=3)   # checks the vectors first
        print(f"{m.kib_per_s:.2f} KiB/s")
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import TracebackType
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.cases import Case  # noqa: F401 (its old home)
from pytest_qcrypto.algorithms.catalog import Algorithm, Direction
from pytest_qcrypto.algorithms.settings import argument_problem  # noqa: F401 (its old home)
from pytest_qcrypto.backends.base import Context, Unsupported, Workload
from pytest_qcrypto.checks import known_answers
from pytest_qcrypto.checks.known_answers import checked_roundtrip_runner  # noqa: F401 (old home)
from pytest_qcrypto.measure import buffers, harness, jobs as multi, limits, memory, pkey_bench, reference
from pytest_qcrypto.measure.calibration import Calibrations, key_of
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.randomness import Randomness  # noqa: F401 (its old home)
from pytest_qcrypto.measure.registry import Selection
from pytest_qcrypto.measure.reuse import KeyPairs

#: AEAD operations cycle through this many distinct random nonces (one per operation).
NONCE_POOL = 1024

#: Old names of the directions (:class:`~pytest_qcrypto.algorithms.catalog.Direction`).
DIGEST, ENCRYPT, DECRYPT = Direction.DIGEST, Direction.ENCRYPT, Direction.DECRYPT


def resolve_algorithm(name: str | Algorithm) -> Algorithm:
    """The catalog entry for ``name``; ``Unsupported`` when the catalog has none."""
    if isinstance(name, Algorithm):
        return name
    alg = catalog.lookup(name)
    if alg is None:
        close = catalog.suggest(name, catalog.KINDS) if isinstance(name, str) else []
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise Unsupported(f"unknown algorithm {name!r}{hint} (see qcrypto list)")
    return alg


def direction_of(alg: Algorithm, decrypt: bool) -> Direction:
    """Old name of :meth:`Algorithm.direction <pytest_qcrypto.algorithms.catalog.Algorithm.direction>`."""
    return alg.direction(decrypt)


class BenchContext:
    """An open benchmark context (random key) that checks itself before it is timed.

    :meth:`check` runs the known-answer vectors once (on contexts of their own keys);
    :meth:`measure` calls it first, so nothing unchecked is ever timed.  Use as a context
    manager, or call :meth:`close`."""

    def __init__(self, selection: Selection, alg: Algorithm, ctx: Context | None,
                 rng: Randomness, key: bytes | None = None,
                 calibrations: Calibrations | None = None, keys: KeyPairs | None = None) -> None:
        self.selection = selection
        self.algorithm = alg
        #: the plugin's context; None when it is opened afresh in each isolated
        #: measurement's child process (``open_context(..., isolate=True)``)
        self.context = ctx
        #: the key to open ``context`` with in the child (isolated); None when not needed
        self.key = key
        self.rng = rng
        self.checked = False
        #: the other plugins a size-less algorithm's checks cross with (see
        #: :func:`pytest_qcrypto.measure.pkey_bench.check`), asked for when first checked
        self.peers: Callable[[], pkey_bench.Peers] = tuple
        #: set when a measurement in this process timed out or was interrupted (Ctrl-C,
        #: SIGTERM), or a close() did not return: the plugin was stopped mid-call (or is
        #: stuck), so the context is never used again, only closed (errors ignored)
        self.abandoned = False
        #: set by :meth:`close`: a closed context is never measured
        self.closed = False
        #: what this context's (or the run's) measurements showed, where calibration starts
        self.calibrations = calibrations if calibrations is not None else Calibrations()
        self.keys = keys  #: a quick run's key pairs, lent to contexts and checks (measure/reuse.py)

    def check(self) -> None:
        """Run the known-answer vectors of this algorithm on this plugin (once); raises
        ``KnownAnswerError`` naming plugin, algorithm and vector."""
        if not self.checked and not self.algorithm.rules.sized:
            sel, rng = self.selection, self.rng
            opener: pkey_bench.Opener = lambda a: open_plugin_context(sel, a, rng.key(a))
            checker = pkey_bench.check if self.keys is None else partial(self.keys.check, self.context)
            checker(sel.typed, self.algorithm, opener, self.peers())  # (quick: lent key pairs)
            self.checked = True
        if not self.checked:
            plugin, variant, alg = self.selection.plugin, self.selection.variant, self.algorithm
            known_answers.check_vectors(self.selection.typed, alg,
                                        lambda key: plugin.open(alg, key, variant),
                                        close=close_bounded)
            self.checked = True

    @property
    def driver(self) -> str | None:
        """The context's driver; None when not known (or not opened in this process)."""
        return self.context.driver if self.context is not None else None

    def workload(self, size: int, decrypt: bool = False, aad: int = 0, misalign: int | None = None, update_size: int | None = None) -> Workload:
        """Random buffer (IV, nonces, ciphertext, an AEAD's ``aad`` bytes of AAD) of ``size`` bytes, placed ``misalign`` bytes past 64, fed ``update_size`` bytes an update (:mod:`.buffers`)."""
        alg = self.algorithm
        problem = alg.size_problem(size) or buffers.problem(self.context, alg, aad, misalign, update_size)
        if problem:
            raise Unsupported(problem)
        data = self.rng.bytes(size)
        if not alg.keyed:
            return buffers.shaped(Workload(data), misalign, update_size)
        typed = self.selection.typed
        if alg.rules.nonce_per_operation:
            nonces = tuple(self.rng.bytes(alg.iv_size) for _ in range(NONCE_POOL))
            extra = self.rng.bytes(aad) if aad else b""  # (Unsupported above where not taken)
            sealed = known_answers.returned(typed, "encrypt", self.context.encrypt(nonces[0], data, *([extra] if aad else []))) if decrypt else b""
            return buffers.shaped(Workload(data, nonces=nonces, decrypt=decrypt, ciphertext=sealed, aad=extra), misalign, update_size)
        iv = self.rng.bytes(alg.iv_size)
        sealed = known_answers.returned(typed, "encrypt", self.context.encrypt(iv, data)) if decrypt else b""
        return buffers.shaped(Workload(data, iv=iv, decrypt=decrypt, ciphertext=sealed), misalign, update_size)

    def measure(self, size: int, *, decrypt: bool = False, min_time: float = 0.1, rounds: int = 3,
                jobs: int = 1, timeout: float | None = None, isolate: bool = False,
                count: int | None = None, roundtrip: bool = False, check_roundtrip: bool = False,
                threads: int = 1, operation: str | None = None, measure: str = "time",
                aad: int = 0, misalign: int | None = None, update_size: int | None = None,
                reference: bool = True, settle: float = 0.0) -> Measurement:
        """Time ``size``-byte operations (bytes; ``min_time`` in seconds).

        The kinds without a buffer size (signatures, key agreement, KEMs, RSA encryption,
        KDFs) take size 0 and ``operation``, one of the kind's directions (``sign``,
        ``verify``, ``keygen``, ``derive``, ``encaps``, ``decaps``, ``encrypt``, ``decrypt``;
        a KDF's only one may be left out): see :mod:`pytest_qcrypto.measure.pkey_bench`; their
        checks run first (with :attr:`peers`); their figure is :attr:`Measurement.ops_per_s`.

        ``reference`` and ``settle``: see :func:`~pytest_qcrypto.measure.harness.time_runner`.
        ``count`` (iterations, 1 to 2**40; None: calibrate) runs exactly that many in every
        round instead of the doubling loop (``--qcrypto-count``).  ``roundtrip`` times, for
        ciphers and AEADs, one encryption and one decryption per iteration (direction
        ``roundtrip``, two operations an iteration; other kinds keep their direction), not with
        ``decrypt`` (``ValueError``); ``check_roundtrip`` makes each such iteration check that
        the ciphertext differs from the plaintext and decrypts back to it (one-shot calls,
        slower: FreeBSD cryptotest's ``-c``), raising ``KnownAnswerError`` on the first wrong.

        Checks the known-answer vectors (once) and the decrypt round trip of the benchmark
        buffer first; raises ``KnownAnswerError`` if either fails, ``Unsupported`` for a size
        the algorithm does not take (below its minimum, not a whole number of blocks),
        ``ValueError`` for a size, ``min_time`` or ``rounds`` outside the limits of the options
        (see :func:`argument_problem`), ``TimerError`` for a frozen clock.  With ``jobs`` > 1
        the rounds run in that many processes at once (:mod:`pytest_qcrypto.measure.jobs`):
        ``count`` is then the operations of all of them, each round the common window, and
        ``jobs`` and ``workers`` hold the number of processes and the per-worker figures;
        ``JobsError`` when a worker fails; more than :func:`~pytest_qcrypto.measure.jobs.max_jobs`
        raise ``ValueError`` first.  ``threads`` > 1: :mod:`pytest_qcrypto.measure.threads`.

        ``timeout`` (seconds, None: no limit) bounds the whole call, known answers included:
        past it, raises ``MeasurementTimeout`` and, when measured in this process, marks the
        context :attr:`abandoned` (so does an interrupt, Ctrl-C or SIGTERM).  A known-answer
        context whose ``close()`` does not return within ``CLOSE_TIMEOUT`` raises
        ``CallTimeout``.  ``isolate`` measures in a child process instead (see
        :mod:`pytest_qcrypto.measure.limits` for what each can stop); a context opened with
        ``isolate=True`` is opened, checked, measured and closed there, and a failure to open
        raises :class:`OpenError`."""
        from pytest_qcrypto.measure import counting, isolate as isolation, threads as threaded
        way = _Way(decrypt, roundtrip, check_roundtrip, count, operation or "", aad, misalign,
                   update_size, reference, settle)
        _check_measurable(self, size, min_time, rounds, jobs, way)
        threaded.check_threads(threads, jobs)  # (imported here: a counting child needs none)
        if too_much := memory.problem(self.algorithm, max(jobs, 1) * max(threads, 1)):
            raise Unsupported(too_much)  # before it swaps the machine to a halt
        if measure == "instructions":  # counted in child processes (measure/counting.py)
            return counting.counted_measurement(self, size, way, jobs, threads, timeout)
        body = partial(_measure_here, self, size, way, min_time, rounds, jobs, threads)
        if self.context is None:  # opened, measured and closed in the child
            m = isolation.run_isolated(partial(_open_and_measure, self, body), timeout,
                                       close=self._close_in_child)
        elif isolate or (timeout is not None and in_child(self.algorithm)):
            m = isolation.run_isolated(body, timeout)
        else:
            try:
                m = limits.call_with_deadline(body, timeout)
            except BaseException as exc:
                if not isinstance(exc, Exception):  # a timeout, Ctrl-C, SIGTERM mid-call
                    self.abandoned = True
                raise
        self.calibrations.learn(m, check_roundtrip)  # where later sizes start calibrating
        return m

    def _close_in_child(self) -> None:
        if self.context is not None:
            self.context.close()  # run_isolated bounds it

    def close(self) -> None:
        """Close the context, within ``CLOSE_TIMEOUT`` seconds (``limits.CLOSE_TIMEOUT``).

        Raises ``CallTimeout`` past it (the context is then :attr:`abandoned`)
        and what the plugin's ``close()`` raises.  An abandoned context's close
        gets the same limit, and its errors are ignored: its measurement already
        failed, or the run is being interrupted.  Closing twice does nothing.
        """
        if self.closed:
            return
        self.closed = True
        if self.context is None:
            return  # opened and closed in the isolated children
        if not self.abandoned:
            if self.keys is not None and self.keys.keep(self.context):
                return  # lent: a later cell of its algorithm takes it (closed at the run's end)
            try:
                close_bounded(self.context)
            except limits.CallTimeout:
                self.abandoned = True
                raise
            return
        try:
            close_bounded(self.context)
        except (Exception, limits.MeasurementTimeout):
            pass  # the measurement already failed; a wedged session cannot be helped here

    def __enter__(self) -> BenchContext:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def in_child(alg: Algorithm) -> bool:
    """Whether ``alg`` is measured in a child process that can be killed at the timeout even
    without ``--qcrypto-isolate``: a KDF's derivation is one long call into C code, which the
    alarm cannot interrupt (``pbkdf2-sha256-i100000000`` takes a minute); needs ``os.fork``."""
    return alg.is_of((catalog.KDF,)) and hasattr(os, "fork")


def _check_measurable(bench: BenchContext, size: object, min_time: object, rounds: object,
                      jobs: int, way: _Way) -> None:
    """Before :meth:`BenchContext.measure` runs anything: ``RuntimeError`` for an abandoned or
    closed context, ``ValueError`` for arguments outside the limits of the options."""
    if bench.abandoned:
        raise RuntimeError(f"{bench.selection.typed} {bench.algorithm.name}: this context was "
                           "abandoned after a timeout; open a new one")
    if bench.closed:
        raise RuntimeError(f"{bench.selection.typed} {bench.algorithm.name}: this context is "
                           "closed; open a new one")
    problem = pkey_bench.operation_problem(bench.algorithm, size, way.operation,
                                           pkey_bench.declares(bench.selection))
    sized = bench.algorithm.rules.sized  # (no buffer size: the other limits only)
    problem = problem or argument_problem(size if sized else 1, min_time, rounds, way.count)
    if way.decrypt and way.roundtrip:
        problem = "decrypt and roundtrip: choose one (a round trip times both directions)"
    if problem:
        raise ValueError(problem)
    multi.check_jobs(jobs)


def _open_and_measure(bench: BenchContext, body: partial[Measurement]) -> Measurement:
    """In an isolated child: open this context (``OpenError`` if that fails), run ``body``."""
    try:
        bench.context = open_plugin_context(bench.selection, bench.algorithm, bench.key or b"")
    except Exception as exc:
        try:
            exc.qcrypto_origin = limits.origin(exc)  # type: ignore[attr-defined]
        except Exception:
            pass  # an exception type without attributes: sent without its origin
        raise OpenError(exc) from None
    return body()


@dataclass(frozen=True)
class _Way:
    """How :meth:`BenchContext.measure` times: its direction flags and the fixed count."""

    decrypt: bool = False
    roundtrip: bool = False
    check_roundtrip: bool = False
    count: int | None = None
    operation: str = ""
    aad: int = 0  # an AEAD's AAD bytes (the tls grid's 13)
    misalign: int | None = None  # buffers N bytes past a 64-byte boundary (None: anywhere)
    update_size: int | None = None  # a digest's or MAC's bytes per update() (None: all at once)
    reference: bool = True  # time the reference workload after each round
    settle: float = 0.0  # stop the rounds once they agree this well (harness.time_runner)


def prepare(bench: BenchContext, size: int, way: _Way) -> tuple[Callable[[int], None], Direction,
                                                                 int, Workload, Callable[..., Any]]:
    """Before the timed rounds of :func:`_measure_here`: known answers, workload, round trip;
    (the checked runner, direction, size: 0 if size-less, workload, the runner maker)."""
    bench.check()
    alg, typed = bench.algorithm, bench.selection.typed
    sized = alg.rules.sized
    direction = alg.direction(way.decrypt, way.roundtrip) if sized else \
        pkey_bench.direction(alg, way.operation)
    roundtrip = direction == Direction.ROUNDTRIP
    if sized:
        work = bench.workload(size, way.decrypt or roundtrip, way.aad, way.misalign, way.update_size)
    else:
        size, work = 0, pkey_bench.workload(alg, direction, bench.rng.bytes)

    def checked_runner(ctx: Context) -> Callable[[int], None]:
        if sized:
            known_answers.check_round_trip(typed, alg, ctx, work)
        elif direction in alg.rules.declared:  # a signature's keygen: its new key signs
            pkey_bench.check_keygen(typed, ctx)
        if roundtrip and way.check_roundtrip:
            run = checked_roundtrip_runner(typed, alg, ctx, work)
        else:
            run = ctx.roundtrip_runner(work) if roundtrip else ctx.runner(work)
        if not callable(run):
            method = "roundtrip_runner()" if roundtrip else "runner()"
            raise known_answers.WrongTypeError(
                f"plugin {typed} returned {type(run).__name__} from {method}, "
                "expected a callable that runs count operations")
        return run
    return checked_runner(bench.context), direction, size, work, checked_runner


def _measure_here(bench: BenchContext, size: int, way: _Way, min_time: float, rounds: int,
                  jobs: int, threads: int = 1) -> Measurement:
    """:meth:`BenchContext.measure` in the process that holds the context: known answers,
    round trip, then the timed rounds (in ``jobs`` processes, or ``threads`` threads, if > 1).
    A size-less cell (:mod:`pytest_qcrypto.measure.pkey_bench`) has size 0 and times ``way.operation``."""
    from pytest_qcrypto.measure import threads as threaded
    run, direction, size, work, checked_runner = prepare(bench, size, way)
    alg, ctx, typed = bench.algorithm, bench.context, bench.selection.typed
    one_thread, between = None, reference.reference_s if way.reference else None
    workers: tuple[harness.WorkerRecord, ...] = ()
    if jobs > 1:
        timing: harness.Timing | multi.JobsTiming = multi.time_jobs(
            run, jobs, min_time=min_time, rounds=rounds, count=way.count)
        workers = multi.worker_record(timing.workers, size,
                                      catalog.OPERATIONS_PER_ITERATION.get(direction, 1))
    elif threads > 1:  # each thread a checked context of the same key (not thread-safe)
        timing = threaded.time_threads(run, threaded.opener(
            partial(open_plugin_context, bench.selection, alg, bench.key or b""), ctx, alg,
            work.data, typed, checked_runner, close_bounded), threads, min_time=min_time,
            rounds=rounds, count=way.count)
        each = catalog.OPERATIONS_PER_ITERATION.get(direction, 1)
        workers = multi.worker_record(timing.workers, size, each)
        one_thread = threaded.one_thread_bps(timing, size or 1, each)  # a rate: bytes or ops
    elif way.count is not None:
        timing = harness.time_count(run, way.count, rounds=rounds, between=between, settle=way.settle)
    else:  # from the count that other sizes predict (measure/calibration.py)
        start = bench.calibrations.start(key_of(typed, alg.name, direction, way.check_roundtrip),
                                         size, min_time)
        timing = harness.time_runner(run, min_time=min_time, rounds=rounds,
                                     between=between, start=start, settle=way.settle)
    return measurement_of(bench, timing, direction, size, work, jobs=jobs, workers=workers,
                        threads=threads, one_thread=one_thread)


def measurement_of(bench: BenchContext, timing: Any, direction: Direction, size: int,
                 work: Workload, *, jobs: int = 1, workers: tuple[Any, ...] = (),
                 threads: int = 1, one_thread: float | None = None,
                 spread_s: float = 0.0) -> Measurement:
    """The :class:`Measurement` of ``timing`` (a harness, jobs or threads timing)."""
    alg, ctx, typed = bench.algorithm, bench.context, bench.selection.typed
    roundtrip = direction == Direction.ROUNDTRIP
    first_iv = work.nonces[0] if work.nonces else work.iv
    return Measurement(
        algorithm=alg.name, plugin=typed, size=size, direction=direction, count=timing.count,
        rounds_s=timing.rounds_s, cpu_s=timing.cpu_s,
        canonical_plugin=bench.selection.canonical, operation=(catalog.ROUNDTRIP_OPERATION if roundtrip else alg.operation),
        driver=ctx.driver, hardware=ctx.hardware,
        jobs=jobs if jobs > 1 else 1, workers=workers, calibration_note=timing.note,
        iv=bytes(first_iv).hex(), threads=threads, one_thread_bps=one_thread,
        threads_cpu_wait=getattr(timing, "cpu_wait", None),
        reference_s=getattr(timing, "reference_s", ()), spread_s=spread_s)


class OpenError(Exception):
    """Opening a context failed in an isolated child; ``cause`` is what the plugin raised."""
    def __init__(self, cause: BaseException) -> None:
        super().__init__(cause)
        self.cause = cause


def close_bounded(ctx: Context) -> None:
    """``ctx.close()`` within ``limits.CLOSE_TIMEOUT`` seconds; ``CallTimeout`` past it."""
    limits.call_bounded(ctx.close, "close()", limits.CLOSE_TIMEOUT)


def open_plugin_context(selection: Selection, alg: Algorithm, key: bytes) -> Context:
    """``selection.plugin.open(alg, key, variant)``, checked to be a ``Context`` (``TypeError``)."""
    ctx = selection.plugin.open(alg, key, selection.variant)
    if not isinstance(ctx, Context):
        raise TypeError(f"{type(selection.plugin).__name__}.open() returned {ctx!r:.60}, "
                        "not a pytest_qcrypto.backends.Context")
    return ctx


def open_context(selection: Selection, algorithm: str | Algorithm,
                 rng: Randomness | None = None, *, isolate: bool = False,
                 calibrations: Calibrations | None = None, keys: KeyPairs | None = None) -> BenchContext:
    """Open the benchmark context of ``algorithm`` in the selected plugin, with a random key.

    Raises ``Unsupported`` / ``Unavailable`` from the plugin, with its reason, and
    ``TypeError`` when the plugin returns something that is not a ``Context``.  The
    known-answer check runs later, in :meth:`BenchContext.check`.  With ``isolate`` the plugin
    is not called here: the key is drawn, and each :meth:`BenchContext.measure` opens, checks,
    measures and closes the context in a child process (``--qcrypto-isolate``), so that a crash
    in the plugin's ``open()`` costs one measurement.  ``calibrations``: where calibration
    starts (:mod:`pytest_qcrypto.measure.calibration`; default: what this context measured).
    ``keys``: a quick run's, which lend a size-less algorithm's context (:mod:`.reuse`).
    """
    alg = resolve_algorithm(algorithm)
    rng = rng or Randomness()
    key = rng.key(alg)
    if isolate:
        return BenchContext(selection, alg, None, rng, key, calibrations)
    opener: pkey_bench.Opener = lambda a: open_plugin_context(selection, a, key)
    if keys is not None and not alg.rules.sized:
        opener = keys.lend(selection.typed, opener)
    return BenchContext(selection, alg, opener(alg), rng, key, calibrations, keys)
