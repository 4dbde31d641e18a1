"""Measuring in N threads of this process at once (``--qcrypto-threads N``): does the GIL go?

The companion of :mod:`pytest_qcrypto.measure.jobs`, which forks processes (and so always scales):
threads of one process share CPython's global interpreter lock, and run side by side only
while the crypto library releases it.  The same cell is measured twice in one item, with
the same settings:

1. in one thread, the calling one, on the item's context: the doubling-count calibration
   and timed rounds of :func:`pytest_qcrypto.measure.harness.time_runner` (or the fixed count of
   ``--qcrypto-count``).  This is the one-thread figure of the scaling line
   (:mod:`pytest_qcrypto.measure.gil`), and its count is what each thread runs per round, as the
   calibration of ``--qcrypto-jobs`` is;
2. in N new threads, each on a context of its own (contexts are not thread-safe), opened
   with the same key and checked (the round trip of the benchmark buffer) before any is
   timed.  After an untimed warm-up of 1/16 of the count, in every round all threads wait at
   a barrier, then each runs ``count`` operations and notes its start and end on
   ``time.perf_counter_ns`` and its own CPU time (``time.thread_time_ns``).

The aggregation is that of ``--qcrypto-jobs`` (:func:`pytest_qcrypto.measure.jobs.aggregate`): a
round's figure is the total bytes of all threads over the common window, from the earliest
start to the latest end; per-thread figures are kept (``Measurement.workers``), never
summed.  A thread's round under half of min-time (a stall chose the count) has the count
chosen again, as :func:`pytest_qcrypto.measure.jobs.time_jobs` does.  The garbage collector is off
for the whole threaded part.

A thread cannot be killed.  ``--qcrypto-timeout`` stops the calling thread's wait (the
``SIGALRM`` deadline of :mod:`pytest_qcrypto.measure.limits` interrupts ``Thread.join``): the item
fails, the barrier is aborted so the threads stop after their current round, and their
contexts are abandoned: never closed, since a thread may still be inside one (a thread
stuck in a plugin call stays stuck, as in one thread).  Each thread also has a limit of
its own (a barrier wait, and the calling thread's wait for all of them: ``30 + 10 x N x``
the one-thread round, seconds), past which the item fails with :class:`ThreadsError`.
Under ``--qcrypto-isolate`` all of this happens in the isolated child process, which is
killed on timeout, hung threads and all.

Saved results (:mod:`pytest_qcrypto.results.store`) record ``threads`` (optional, default 1; a
whole number from 1), ``workers`` with one entry per thread as for jobs, and
``one_thread_bytes_per_second`` (optional, a positive number): the one-thread figure.  The
regression gate never judges a cell against a baseline of another thread count.

Nothing here imports pytest.
"""

from __future__ import annotations

import gc
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import counts, harness, jobs
from pytest_qcrypto.checks import known_answers
from pytest_qcrypto.measure import machine
from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.backends.base import Context, Runner
from pytest_qcrypto.measure.jobs import Clocks, JobsError, WorkerRound
from pytest_qcrypto.algorithms.settings import SettingsError

#: The most threads per CPU this process may use (as :data:`pytest_qcrypto.measure.jobs.JOBS_PER_CPU`).
THREADS_PER_CPU = jobs.JOBS_PER_CPU


class ThreadsError(JobsError):
    """A thread failed or did not answer in time; ``str()`` says which and why.

    ``running``: some thread had not ended (its context is then abandoned, never closed).
    """

    def __init__(self, message: str, running: bool = False) -> None:
        super().__init__(message)
        self.running = running


@dataclass(frozen=True)
class ThreadsTiming(jobs.JobsTiming):
    """What :func:`time_threads` found: as :class:`pytest_qcrypto.measure.jobs.JobsTiming` (``count`` the
    operations of all threads in one round, ``rounds_s`` each round's common window,
    ``cpu_s`` the threads' summed CPU seconds, ``workers[t][r]`` what thread ``t`` did in
    round ``r``), and ``one_thread``, the same cell measured in one thread (never None).
    ``cpu_wait`` is the median round's share of the threads' time (N x the window) that they
    waited for a CPU (:func:`cpu_wait_share`; None where not known)."""

    one_thread: harness.Timing | None = None
    cpu_wait: float | None = None


@dataclass(frozen=True)
class ThreadRound(WorkerRound):
    """One thread's part of one round (:class:`pytest_qcrypto.measure.jobs.WorkerRound`), and
    ``wait_ns``, the time it was ready to run but waited for a CPU held by other work
    (Linux schedstat, :func:`pytest_qcrypto.measure.machine.cpu_wait_s`; None elsewhere)."""

    wait_ns: int | None = None


#: Runs ``rounds`` barrier-started rounds of ``count`` operations, one thread per runner, and
#: returns each thread's rounds: ``start(runs, count, rounds, timeout_s, clocks)``.  Raises
#: :class:`ThreadsError` (``running`` when a thread may still be running).
Starter = Callable[[Sequence[Runner], int, int, float, Clocks], Sequence[Sequence[WorkerRound]]]


def max_threads() -> int:
    """The most threads allowed: :data:`THREADS_PER_CPU` per CPU this process may use."""
    return THREADS_PER_CPU * jobs.cpu_count()


def parse_threads(text: object, option: str = "--qcrypto-threads", jobs_n: int = 1) -> int:
    """A whole number of threads from 1 to :func:`max_threads`; 1 when ``text`` is None.

    ``jobs_n`` is the run's ``--qcrypto-jobs``: both above 1 is refused (threads inside
    forked workers would be a sum of sums).  Raises :class:`SettingsError` (a usage error)
    naming the valid range.
    """
    if text is None:
        return 1
    cpus = jobs.cpu_count()
    valid = (f"give a whole number of threads from 1 to {max_threads()} ({THREADS_PER_CPU} x "
             f"the {cpus} CPU{'' if cpus == 1 else 's'} this process may use)")
    n = settings.whole_number(text, option, 1, max_threads(),
                              not_whole=lambda v: f"{option}: {v} is not valid; {valid}",
                              too_low=lambda v: f"{option}: {v} is not valid; {valid}",
                              too_high=lambda v: f"{option}: {v} is too many; {valid}")
    if n > 1 and jobs_n > 1:
        raise SettingsError(f"{option}: {n} threads with --qcrypto-jobs {jobs_n}: choose one "
                            "(threads measure whether the GIL is released, jobs the machine's "
                            "processes)")
    return n


def check_threads(threads: int, jobs_n: int = 1) -> None:
    """``ValueError`` for ``threads`` outside 1 to :func:`max_threads`, or above 1 with
    ``jobs_n`` above 1 (the API's check of what :func:`parse_threads` refuses)."""
    if isinstance(threads, bool) or not isinstance(threads, int) \
            or not 1 <= threads <= max_threads() or (threads > 1 and jobs_n > 1):
        raise ValueError(f"threads must be from 1 to {max_threads()} (1 with jobs above 1), "
                         f"not {settings.shown_value(threads)}")


#: Opens ``n`` contexts: their runners, and a function that closes them (``close(quiet)``:
#: errors ignored when true).  See :func:`open_contexts`.
Opener = Callable[[int], "tuple[Sequence[Runner], Callable[[bool], None]]"]


def time_threads(run: Runner, open_runs: Opener, threads: int, *,
                 min_time: float = 0.1, rounds: int = 3, count: int | None = None,
                 start: Starter | None = None, clock: Callable[[], int] | None = None,
                 cpu_clock: Callable[[], int] | None = None) -> ThreadsTiming:
    """Measure ``run`` in this thread, then ``threads`` runners of ``open_runs(threads)`` in as
    many threads at once (see the module's docstring).  The contexts of ``open_runs`` are
    closed at the end, unless a thread may still be running (a timeout, an interrupt, a
    thread that did not answer): they are then abandoned.

    ``count`` (iterations, ``--qcrypto-count``): no calibration, each thread runs exactly
    ``count`` in every round (the total is ``threads * count``).  ``start`` runs the threads
    (default :func:`run_threads`; tests pass fakes); ``clock`` and ``cpu_clock`` are those of
    the one-thread measurement (:func:`pytest_qcrypto.measure.harness.time_runner`).  Raises
    :class:`ThreadsError` when a thread fails, ``ValueError`` for ``threads`` outside 1 to
    :func:`max_threads` or ``rounds`` outside the limits, and what ``time_runner`` raises.
    """
    check_threads(threads)
    problem = settings.rounds_problem(rounds) or (
        settings.count_problem(count) if count is not None else None)
    if problem:
        raise ValueError(problem)
    clocks = (clock or time.perf_counter_ns, cpu_clock or time.process_time_ns)
    one = (harness.time_count(run, count, rounds=rounds, clock=clocks[0], cpu_clock=clocks[1])
           if count is not None else
           harness.time_runner(run, min_time=min_time, rounds=rounds, clock=clocks[0],
                               cpu_clock=clocks[1]))
    runs, close = open_runs(threads)
    try:
        timing = _threaded(runs, one, count, rounds, min_time, start or run_threads, clocks)
    except ThreadsError as exc:
        if not exc.running:
            close(True)
        raise
    except Exception:
        close(True)
        raise
    # a BaseException (a timeout or an interrupt in the wait): threads may be running, and
    # their contexts are abandoned
    close(False)
    return timing


def _threaded(runs: Sequence[Runner], one: harness.Timing, count: int | None, rounds: int,
              min_time: float, start: Starter, clocks: Clocks) -> ThreadsTiming:
    """:func:`time_threads` once the one-thread figure is in: the threaded rounds."""
    threads = len(runs)
    per_thread, round_s, min_ns = one.count, max(one.rounds_s), min_time * 1e9
    recalibrations = 0
    while True:
        timeout_s = 30.0 + 10 * threads * round_s
        workers = start(runs, per_thread, rounds, timeout_s, clocks)
        walls = [r.end_ns - r.start_ns for w in workers for r in w]
        shortest = min(walls, default=0)
        if count is not None or not 0 < shortest < min_ns * harness.SHORT_ROUND \
                or recalibrations == harness.MAX_RECALIBRATIONS \
                or per_thread >= harness.MAX_COUNT:
            break
        new = counts.predicted_count(per_thread, shortest, min_ns)  # as jobs.time_jobs
        round_s, per_thread = shortest / 1e9 * new / per_thread, new
        recalibrations += 1
    if count is not None:
        note = harness.fixed_count_note(walls)
    else:
        note = harness.short_rounds_note(walls, min_time, recalibrations) \
            if 0 < shortest < min_ns * harness.SHORT_ROUND else ""
    total, windows, cpus = jobs.aggregate(workers)
    return ThreadsTiming(total, windows, cpus, tuple(tuple(w) for w in workers),
                         recalibrations, note, one, cpu_wait_share(workers))


def cpu_wait_share(workers: Sequence[Sequence[WorkerRound]]) -> float | None:
    """Per round, the threads' summed wait for a CPU (:attr:`ThreadRound.wait_ns`) over N x
    the round's common window; the median of the rounds.  None when a thread's wait is not
    known.  A share near 0: the threads either ran or slept (waiting for the GIL is a sleep);
    a large one: other work held the CPUs, and the ratio to one thread says little."""
    shares = []
    for rnd in zip(*workers):
        waits = [getattr(r, "wait_ns", None) for r in rnd]
        window = max(r.end_ns for r in rnd) - min(r.start_ns for r in rnd)
        if any(w is None for w in waits) or window <= 0:
            return None
        shares.append(sum(waits) / (len(rnd) * window))  # type: ignore[arg-type]
    return statistics.median(shares) if shares else None


def run_threads(runs: Sequence[Runner], count: int, rounds: int, timeout_s: float,
                clocks: Clocks | None = None) -> list[list[ThreadRound]]:
    """Start one thread per runner of ``runs``; each runs ``rounds`` barrier-started rounds of
    ``count`` operations after an untimed 1/16 of it.  Returns each thread's rounds, in order.

    ``clocks`` are the wall clock all threads share (default ``time.perf_counter_ns``) and a
    CPU clock, ignored: each thread's CPU time is ``time.thread_time_ns``.  Raises
    :class:`ThreadsError` when a thread raises or has not answered after ``timeout_s``
    seconds.  On any way out but a clean one (a failure, a timeout, an interrupt raised
    here) the barrier is aborted, so the threads still running stop after their round.
    """
    wall = clocks[0] if clocks else time.perf_counter_ns
    n = len(runs)
    barrier = threading.Barrier(n)
    answers: list[list[ThreadRound] | str | None] = [None] * n

    def work(i: int) -> None:
        try:
            runs[i](max(1, count // 16))
            done = []
            for _ in range(rounds):
                barrier.wait(timeout_s)
                w0 = machine.cpu_wait_s()
                t0, t1, cpu = harness.timed(runs[i], count, wall, time.thread_time_ns)
                w1 = machine.cpu_wait_s()
                waited = round((w1 - w0) * 1e9) if w0 is not None and w1 is not None else None
                done.append(ThreadRound(count, t0, t1, cpu, waited))
            answers[i] = done
        except BaseException as exc:  # reported to the caller, which raises ThreadsError
            barrier.abort()
            answers[i] = f"{type(exc).__name__}: {exc}"

    workers = [threading.Thread(target=work, args=(i,), name=f"qcrypto-thread-{i + 1}",
                                daemon=True) for i in range(n)]
    gc_was_on = gc.isenabled()
    gc.disable()  # once for all: harness.timed in each thread then leaves it alone
    clean = False
    try:
        for t in workers:
            t.start()
        deadline = time.monotonic() + timeout_s
        for t in workers:
            t.join(max(0.0, deadline - time.monotonic()))
        late = [str(i) for i, t in enumerate(workers, 1) if t.is_alive()]
        if late:
            raise ThreadsError(f"thread(s) {', '.join(late)} of {n} did not answer within "
                               f"{timeout_s:.0f} s", running=True)
        clean = True
    finally:
        if not clean:
            barrier.abort()
        if gc_was_on:
            gc.enable()
    errors = [f"thread {i}: {a}" for i, a in enumerate(answers, 1) if isinstance(a, str)]
    if errors:
        first = [e for e in errors if "BrokenBarrierError" not in e] or errors
        raise ThreadsError(f"{len(errors)} of {n} threads failed; {first[0]}")
    return [a for a in answers if isinstance(a, list)]


def open_contexts(n: int, open_one: Callable[[], Context], prepare: Callable[[Context], Runner],
                  close_one: Callable[[Context], None]) -> tuple[list[Runner], Callable[[], None]]:
    """``n`` contexts of ``open_one()``, one per thread, each turned into its runner by
    ``prepare`` (which checks it first); returns the runners and a function that closes
    every context with ``close_one`` (all are closed, then the first error is raised).

    When one cannot be opened or prepared, those already open are closed (their errors
    ignored) and the error goes on.
    """
    opened: list[Context] = []

    def close_all(quiet: bool = False) -> None:
        first: BaseException | None = None
        for ctx in opened:
            try:
                close_one(ctx)
            except Exception as exc:
                first = first or exc
        if first is not None and not quiet:
            raise first

    try:
        runs = []
        for _ in range(n):
            opened.append(open_one())
            runs.append(prepare(opened[-1]))
    except BaseException:
        close_all(quiet=True)
        raise
    return runs, close_all


def opener(open_one: Callable[[], Context], ref: Context, alg: catalog.Algorithm,
           data: bytes, plugin: str, runner_of: Callable[[Context], Runner],
           close_one: Callable[[Context], None]) -> Opener:
    """The :data:`Opener` of :func:`time_threads` for contexts of ``open_one()``: each checked
    like ``ref`` (:func:`check_like`, on the benchmark buffer ``data``), then made a runner by
    ``runner_of`` (which checks its round trip); closed with ``close_one``."""
    def prepare(ctx: Context) -> Runner:
        check_like(ref, ctx, alg, data, plugin)
        return runner_of(ctx)

    return lambda n: open_contexts(n, open_one, prepare, close_one)


def check_like(ref: Context, ctx: Context, alg: catalog.Algorithm, data: bytes,
               plugin: str) -> None:
    """A thread's context ``ctx`` of a digest or MAC must give the one-shot output of the
    item's context ``ref`` for the benchmark buffer ``data`` (a cipher's or AEAD's context is
    checked by its round trip instead): ``KnownAnswerError`` naming ``plugin`` when not."""
    method = {catalog.DIGEST: "digest", catalog.MAC: "mac"}.get(alg.kind)
    if method is None:
        return
    want = known_answers.returned(plugin, method, getattr(ref, method)(data))
    if known_answers.returned(plugin, method, getattr(ctx, method)(data)) != want:
        raise known_answers.KnownAnswerError(
            f"{plugin} {alg.name}: a thread's context gave another {method} of the "
            f"{len(data)}-byte benchmark buffer than the item's context")


def not_comparable(base: Any, m: Any) -> str:
    """Why a measurement ``m`` is not judged against its baseline result ``base`` of other
    jobs or threads: ``different jobs (2 in the baseline, 1 now)`` (a sum over processes is
    not comparable with one process), else ``different threads (4 in the baseline, 2 now)``
    (nor N threads, GIL or not, with one thread); ``""`` when both are the same."""
    for what in ("jobs", "threads"):
        was, now = getattr(base, what, 1), getattr(m, what, 1)
        if was != now:
            return f"different {what} ({was} in the baseline, {now} now)"
    return ""


def one_thread_bps(timing: ThreadsTiming, size: int, per_iteration: int = 1) -> float:
    """The one-thread figure of ``timing``: bytes per second of its median round, of
    ``size``-byte buffers (bytes) and ``per_iteration`` operations an iteration."""
    one = timing.one_thread
    assert one is not None  # time_threads always sets it
    return one.count * per_iteration * size / statistics.median(one.rounds_s)
