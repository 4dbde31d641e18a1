"""Measuring in N processes at once (``--qcrypto-jobs N``), like ``openssl speed -multi N``.

The count is calibrated once in the calling process (the doubling-count loop
of :mod:`pytest_qcrypto.measure.harness`; chosen again from a worker's round when a
stall made it too small, see :func:`time_jobs`).  Then N worker processes are forked (the
``fork`` start method, named explicitly, so that the open context and crypto
plugins registered in a ``conftest.py`` reach the workers without pickling).
After an untimed warm-up, in every round all workers wait at a barrier,
then each runs ``count`` operations and notes its start and end on the
shared monotonic clock.

With a fixed count (``--qcrypto-count N``) nothing is calibrated: every
worker runs N iterations per round, so a round's total is jobs x N.

The round's figure is the total bytes of all workers over the common window,
from the earliest start to the latest end: ``sum(counts) * size / (max(ends) -
min(starts))``.  Per-worker rates are kept for the record, never summed.

At most :data:`JOBS_PER_CPU` workers per CPU this process may use
(:func:`max_jobs`): ``openssl speed -multi`` is run with up to one process per
core; more than a few per CPU only take turns on the same CPUs, and each one
is a forked copy of the test process.

Workers never outlive the run (:mod:`pytest_qcrypto.measure.procs`).  On Linux each worker asks
the kernel to ``SIGKILL`` it when its parent dies (``prctl(PR_SET_PDEATHSIG)``; then it
checks that the parent is still the one that forked it), so a pytest process killed
outright takes its workers with it.  When the parent is interrupted (Ctrl-C, a
SIGTERM, a ``--qcrypto-timeout`` deadline) or a fork fails part way (EAGAIN: the
limit on processes), the workers already started are killed and reaped before
the error goes on.  ``SIGINT``, ``SIGTERM`` and ``SIGALRM`` are held while a
worker is forked and while workers are killed, so an interrupt cannot land
between a fork and the bookkeeping that lets it be killed.

Scaling on the 2-vCPU machines of this project: see "Accuracy and scaling" in
the README.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_qcrypto.measure import counts, harness, procs
from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.backends.base import Runner
from pytest_qcrypto.algorithms.settings import SettingsError

#: What ``--qcrypto-jobs auto`` means: every CPU this process may run on.
AUTO = "auto"
#: The most worker processes per CPU (see :func:`max_jobs`).
JOBS_PER_CPU = 8
#: Seconds the workers get to exit once they have answered, before they are killed.
EXIT_WAIT = 5.0


class JobsError(RuntimeError):
    """A worker process failed, died or did not answer in time; ``str()`` says which and why."""


@dataclass(frozen=True)
class WorkerRound:
    """One worker's part of one round: ``count`` operations from ``start_ns`` to ``end_ns``.

    Times are nanoseconds of a clock all workers share (``time.perf_counter_ns``,
    CLOCK_MONOTONIC on Linux); ``cpu_ns`` is the worker's process CPU time.
    """

    count: int
    start_ns: int
    end_ns: int
    cpu_ns: int

    @property
    def wall_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


@dataclass(frozen=True)
class JobsTiming:
    """What :func:`time_jobs` found.

    ``count`` is the operations of all workers in one round; ``rounds_s`` the
    common window of each round (seconds); ``cpu_s`` the workers' summed CPU
    seconds of each round; ``workers[w][r]`` what worker ``w`` did in round ``r``;
    ``recalibrations`` and ``note`` as in :class:`~pytest_qcrypto.measure.harness.Timing`.
    """

    count: int
    rounds_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    workers: tuple[tuple[WorkerRound, ...], ...]
    recalibrations: int = 0
    note: str = ""


#: Clocks of nanoseconds: (wall, CPU).
Clocks = tuple[Callable[[], int], Callable[[], int]]
#: Starts ``jobs`` workers that each run ``rounds`` rounds of ``count`` operations
#: and returns, per worker, its rounds: ``start(run, jobs, count, rounds, timeout_s, clocks)``.
Starter = Callable[[Runner, int, int, int, float, Clocks], Sequence[Sequence[WorkerRound]]]


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def max_jobs() -> int:
    """The most worker processes allowed: :data:`JOBS_PER_CPU` per CPU this process may use."""
    return JOBS_PER_CPU * cpu_count()


def too_many(jobs: int, option: str = "jobs") -> str | None:
    """Why ``jobs`` is over :func:`max_jobs` (a message starting with ``option``), or None."""
    return _too_many(settings.shown_value(jobs), option) if jobs > max_jobs() else None


def _too_many(jobs: str, option: str) -> str:
    """The message of :func:`too_many` for a number of jobs as shown."""
    cpus = cpu_count()
    return (f"{option}: {jobs} is too many; give at most {max_jobs()} ({JOBS_PER_CPU} x the "
            f"{cpus} CPU{'' if cpus == 1 else 's'} this process may use): more workers only "
            "take turns on the same CPUs, and each is a forked process")


def check_jobs(jobs: int, option: str = "jobs") -> None:
    """Raise ``ValueError`` when ``jobs`` is over :func:`max_jobs` (see :func:`too_many`)."""
    problem = too_many(jobs, option)
    if problem:
        raise ValueError(problem)


def parse_jobs(text: object, option: str = "--qcrypto-jobs") -> int:
    """A whole number of worker processes from 1 to :func:`max_jobs`, or ``auto`` (all CPUs).

    Raises :class:`~pytest_qcrypto.algorithms.settings.SettingsError` (a usage error)
    naming the valid values.
    """
    value = str(text).strip()
    if value.lower() == AUTO:
        return cpu_count()

    def invalid(_: str) -> str:
        return (f"{option}: {settings.shown(value)} is not valid; give a whole number of worker "
                f"processes from 1 up, or 'auto' for all {cpu_count()} CPUs")

    jobs = settings.whole_number(value, option, 1, max_jobs(), not_whole=invalid,
                                 too_low=invalid, too_high=lambda v: _too_many(v, option))
    if jobs > 1 and not hasattr(os, "fork"):
        raise SettingsError(f"{option}: more than one job needs the 'fork' start method, "
                            "which this platform lacks")
    return jobs


def aggregate(workers: Sequence[Sequence[WorkerRound]]) -> tuple[int, tuple[float, ...],
                                                                  tuple[float, ...]]:
    """Per round, from every worker's rounds: (operations of one round, windows s, CPU s).

    The window of a round runs from the earliest start to the latest end of
    any worker; the operations of every round must be the same (they are:
    each worker runs the calibrated count).  Raises ``ValueError`` for no
    workers or rounds of unequal totals, :class:`~pytest_qcrypto.measure.harness.TimerError`
    for a window that is not positive.
    """
    if not workers or not workers[0]:
        raise ValueError("no worker rounds to aggregate")
    by_round = list(zip(*workers, strict=True))
    totals = {sum(w.count for w in rnd) for rnd in by_round}
    if len(totals) != 1:
        raise ValueError(f"rounds differ in total operations: {sorted(totals)}")
    windows, cpus = [], []
    for rnd in by_round:
        window = max(w.end_ns for w in rnd) - min(w.start_ns for w in rnd)
        if window <= 0:
            raise harness.TimerError(f"the timer stood still during a {len(rnd)}-job round")
        windows.append(window / 1e9)
        cpus.append(sum(w.cpu_ns for w in rnd) / 1e9)
    return totals.pop(), tuple(windows), tuple(cpus)


def time_jobs(run: Runner, jobs: int, *, min_time: float = 0.1, rounds: int = 3,
              start: Starter | None = None, clock: Callable[[], int] | None = None,
              cpu_clock: Callable[[], int] | None = None,
              count: int | None = None) -> JobsTiming:
    """Calibrate ``run`` here, then time ``rounds`` rounds in ``jobs`` processes at once.

    With ``count`` (iterations, ``--qcrypto-count``) nothing is calibrated: each worker
    runs exactly ``count`` in every round (the total is ``jobs * count``), and a worker's
    round under :data:`~pytest_qcrypto.measure.harness.MIN_FIXED_ROUND_S` gets the note of
    :func:`~pytest_qcrypto.measure.harness.fixed_count_note`.

    A worker's round under :data:`~pytest_qcrypto.measure.harness.SHORT_ROUND` of
    ``min_time`` (a stall chose the count) has the count predicted again from its rate
    (:func:`~pytest_qcrypto.measure.counts.predicted_count`, calibration's rule) and every
    round run again, as :func:`~pytest_qcrypto.measure.harness.time_runner` does, at most
    :data:`~pytest_qcrypto.measure.harness.MAX_RECALIBRATIONS` times.  Unlike there, the
    first round at the new count is not checked against ``min_time`` on its own: here a
    round is ``jobs`` processes' rounds at once, too dear to spend as a calibration run.

    ``start`` launches the workers (default :func:`fork_workers`; tests pass
    fake workers); ``clock`` and ``cpu_clock`` are as in
    :func:`~pytest_qcrypto.measure.harness.time_runner`, which calibrates.  Raises
    :class:`JobsError` when a worker fails, ``ValueError`` for ``rounds`` outside 1 to
    :data:`~pytest_qcrypto.algorithms.settings.MAX_ROUNDS`, and what ``time_runner`` raises.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs!r}")
    check_jobs(jobs)
    problem = settings.rounds_problem(rounds)
    if problem:
        raise ValueError(problem)
    clocks = (clock or time.perf_counter_ns, cpu_clock or time.process_time_ns)
    if count is not None:
        return _fixed_jobs(run, jobs, count, rounds, start or fork_workers, clocks)
    calibration = harness.time_runner(run, min_time=min_time, rounds=1,
                                      clock=clocks[0], cpu_clock=clocks[1])
    count, round_s, min_ns = calibration.count, max(calibration.rounds_s), min_time * 1e9
    recalibrations = 0
    while True:
        # A round takes about the calibration run when every worker has a CPU, jobs
        # times longer when they all share one; allow that and more before giving up.
        timeout_s = workers_timeout(jobs, round_s)
        workers = (start or fork_workers)(run, jobs, count, rounds, timeout_s, clocks)
        walls = [r.end_ns - r.start_ns for w in workers for r in w]
        shortest = min(walls, default=0)
        if not 0 < shortest < min_ns * harness.SHORT_ROUND \
                or recalibrations == harness.MAX_RECALIBRATIONS or count >= harness.MAX_COUNT:
            break
        # a stall chose the count (see harness): choose it again from the shortest round
        new = counts.predicted_count(count, shortest, min_ns)
        round_s, count = shortest / 1e9 * new / count, new
        recalibrations += 1
    note = harness.short_rounds_note(walls, min_time, recalibrations) \
        if 0 < shortest < min_ns * harness.SHORT_ROUND else ""
    total, windows, cpus = aggregate(workers)
    return JobsTiming(total, windows, cpus, tuple(tuple(w) for w in workers), recalibrations,
                      note)


#: The longest the workers are waited for, seconds (a day, as --qcrypto-timeout's limit).
MAX_WAIT_S = 86400.0


def workers_timeout(jobs: int, round_s: float) -> float:
    """Seconds to wait for ``jobs`` workers whose round takes about ``round_s`` seconds with
    a CPU each (jobs times longer when they share one, and more), at most :data:`MAX_WAIT_S`:
    a huge count must not overflow the waits' timeouts."""
    return min(MAX_WAIT_S, 30.0 + 10 * jobs * round_s)


def _fixed_jobs(run: Runner, jobs: int, count: int, rounds: int, start: Starter,
                clocks: Clocks) -> JobsTiming:
    """:func:`time_jobs` with a fixed ``count``: one set of rounds, no calibration.

    One iteration is run here first, untimed by the figures, to size the workers'
    timeout as calibration does: a round is about ``count`` times it.
    """
    problem = settings.count_problem(count)
    if problem:
        raise ValueError(problem)
    t0, t1, _ = harness.timed(run, 1, *clocks)
    timeout_s = workers_timeout(jobs, max(t1 - t0, 0) / 1e9 * count)
    workers = start(run, jobs, count, rounds, timeout_s, clocks)
    note = harness.fixed_count_note([r.end_ns - r.start_ns for w in workers for r in w])
    total, windows, cpus = aggregate(workers)
    return JobsTiming(total, windows, cpus, tuple(tuple(w) for w in workers), 0, note)


def _worker(run: Runner, count: int, rounds: int, barrier: Any, send: Any,
            timeout_s: float, clocks: Clocks, parent: int) -> None:
    """A worker's life: per round, wait at the barrier, run, note the times; send them."""
    procs.become_child(parent, release_held=True)  # held by the parent's fork
    try:
        # untimed: the first touches of copy-on-write pages after fork cost page faults
        run(max(1, count // 16))
        done = []
        for _ in range(rounds):
            barrier.wait(timeout_s)
            t0, t1, cpu = harness.timed(run, count, *clocks)
            done.append((count, t0, t1, cpu))
        send.send(("ok", done))
    except BaseException as exc:  # reported to the parent, which raises JobsError
        barrier.abort()
        send.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()


def fork_workers(run: Runner, jobs: int, count: int, rounds: int, timeout_s: float,
                 clocks: Clocks | None = None) -> list[list[WorkerRound]]:
    """Fork ``jobs`` processes that run ``rounds`` barrier-started rounds of ``count`` operations.

    ``clocks`` (wall, CPU; nanoseconds) default to ``time.perf_counter_ns`` and
    ``time.process_time_ns``; the wall clock must be one all processes share.

    Each worker first runs 1/16 of ``count`` untimed (after fork, its first
    writes to shared pages fault).  Returns each worker's rounds, in worker
    order.  Raises :class:`JobsError` when a worker raises, dies, or has not
    answered after ``timeout_s`` seconds (the others are then stopped: the
    barrier is aborted), and when a worker cannot be started (a fork fails:
    EAGAIN, the limit on processes).  Whatever happens, also an interrupt or
    a timeout raised here, every worker started is gone when this returns or
    raises: killed if it has not exited, and reaped (one stuck in an
    uninterruptible kernel wait is reaped later, see :func:`.procs.stop`).
    """
    import multiprocessing  # here: a run without --qcrypto-jobs never needs it

    check_jobs(jobs)
    ctx = multiprocessing.get_context("fork")
    clocks = clocks or (time.perf_counter_ns, time.process_time_ns)
    procs.libc_prctl()  # load libc before forking, not in every worker
    parent = os.getpid()
    barrier = ctx.Barrier(jobs)
    started: list[Any] = []
    pipes: list[Any] = []
    answered = False
    try:
        for i in range(jobs):
            # held: an interrupt waits until the new worker is in started, where stop finds it
            with procs.signals_held():
                try:
                    proc, recv = _start(ctx, run, count, rounds, barrier, timeout_s, clocks,
                                        parent)
                except OSError as exc:
                    raise JobsError(procs.start_failure(i + 1, jobs, exc)) from None
                started.append(proc)
                pipes.append(recv)
        answers = _collect(pipes, started, barrier, timeout_s)
        answered = True
        errors = [f"worker {i}: {a}" for i, a in enumerate(answers, 1) if isinstance(a, str)]
        if errors:
            # a broken barrier in the others is a consequence: name the first cause
            first = [e for e in errors if "BrokenBarrierError" not in e] or errors
            raise JobsError(f"{len(errors)} of {jobs} workers failed; {first[0]}")
        return [[WorkerRound(*r) for r in a] for a in answers if not isinstance(a, str)]
    finally:
        # answered: they are exiting; otherwise (an interrupt, a timeout, a failed
        # fork, no answer) they may be running or waiting at the barrier: kill now
        procs.stop(started, EXIT_WAIT if answered else 0.0)
        for recv in pipes:
            recv.close()


def _start(ctx: Any, run: Runner, count: int, rounds: int, barrier: Any, timeout_s: float,
           clocks: Clocks, parent: int) -> tuple[Any, Any]:
    """Start one :func:`_worker` with a pipe of its own: the process and the pipe's
    receiving end.  On ``OSError`` (a fork that failed) nothing is left open."""
    recv = send = None
    try:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, name="qcrypto-worker", daemon=True,
                           args=(run, count, rounds, barrier, send, timeout_s, clocks, parent))
        proc.start()
    except OSError:
        for end in (recv, send):
            if end is not None:
                end.close()
        raise
    send.close()
    return proc, recv


def _collect(pipes: list[Any], children: list[Any], barrier: Any,
             timeout_s: float) -> list[list[tuple[int, int, int, int]] | str]:
    """Every worker's answer, in worker order: its rounds, or what went wrong (a string).

    The first failure aborts the barrier, so the other workers stop at once
    instead of waiting out the timeout.
    """
    from multiprocessing.connection import wait

    answers: dict[int, list[tuple[int, int, int, int]] | str] = {}
    pending = dict(enumerate(pipes))
    deadline = time.monotonic() + timeout_s
    while pending:
        ready = wait(list(pending.values()), max(0.0, deadline - time.monotonic()))
        if not ready:
            barrier.abort()
            late = ", ".join(str(i + 1) for i in pending)
            raise JobsError(f"worker(s) {late} of {len(pipes)} did not answer within "
                            f"{timeout_s:.0f} s")
        for i in [i for i, pipe in pending.items() if pipe in ready]:
            try:
                status, payload = pending.pop(i).recv()
            except EOFError:
                children[i].join(timeout=1.0)
                status, payload = "error", f"died (exit code {children[i].exitcode})"
            if status != "ok":
                barrier.abort()
            answers[i] = payload
    return [answers[i] for i in range(len(pipes))]


def worker_record(workers: Sequence[Sequence[WorkerRound]], size: int,
                  per_iteration: int = 1) -> tuple[harness.WorkerRecord, ...]:
    """Per worker: its count, each round's wall and CPU seconds and KiB/s of ``size``-byte
    buffers (bytes), ``per_iteration`` operations each (2 for a round trip).

    This is what ``Measurement.workers`` holds for a multi-job measurement.
    """
    return tuple(harness.WorkerRecord(
        count=rounds[0].count,
        rounds_s=tuple(r.wall_s for r in rounds),
        cpu_s=tuple(r.cpu_ns / 1e9 for r in rounds),
        kib_per_s=tuple(r.count * per_iteration * size / r.wall_s / harness.KIB
                        for r in rounds))
        for rounds in workers)
