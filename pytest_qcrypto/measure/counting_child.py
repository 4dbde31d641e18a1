"""The child side of :mod:`pytest_qcrypto.measure.counting`: one counting process a run
(``python -S -c BOOT MODE CGDIR PATH...``, see
:data:`pytest_qcrypto.measure.counting.BOOT`), that counts cell after cell.

The process starts once (under cachegrind for ``MODE`` ``valgrind``) with the garbage
collector off, imports what every cell needs and asks ``CPUID`` which flags it sees, freezes
what it holds (:func:`gc.freeze`), then says ``ready`` on standard output.  For each byte on
its standard input it forks a worker for the cell pickled in ``CGDIR/spec`` (a
:class:`~pytest_qcrypto.measure.counting.Spec`), and writes ``d`` when the worker has ended;
every worker starts from the same state (:func:`serve`).  The worker loads the spec (the
plugin's module is imported there), opens the context with its seeded keys and data
(:func:`pytest_qcrypto.measure.bench.open_context`), checks it (known answers, round trip:
:func:`pytest_qcrypto.measure.bench.prepare`), runs one round of one iteration to warm it (so
that the code of a round is translated, and first-call costs paid, before any count forks),
then counts rounds of the plugin's runner, each one round as a timed round runs it, without
the clocks (:func:`_round`):

* ``valgrind``: each round runs in a child forked from the worker, which starts from the
  same state with the same instructions counted so far and exits after its round;
  cachegrind writes each child's total to ``CGDIR/cg.PID``.  Rounds of 1 and 2 iterations
  estimate one iteration's instructions, which choose ``n``
  (:func:`pytest_qcrypto.measure.counting.choose_count`); the worker runs
  :func:`~pytest_qcrypto.measure.counting.warm_count` iterations uncounted, then rounds of
  ``n`` and ``2n`` run at once.
* ``perf``: the same rounds in the worker, each counted by the PMU
  (:class:`pytest_qcrypto.measure.perf_counter.Counter`).

The answer file ``CGDIR/out`` receives ``pickle(("ok", (counts, totals, operations per
iteration, CPU flags seen)))`` or ``pickle(("error", exception))``.  Each cell's worker is a
process of its own, so a cell cannot change the next one's state, and a plugin that crashes
costs its cell only.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The CPU flags ``CPUID`` reports to this process, asked once before any worker forks.
_SEEN: tuple[str, ...] | None = None


def _round(run: Callable[[int], None], count: int) -> None:
    """One round of ``count`` iterations as a timed round runs it (the runner, the garbage
    collector off: :func:`pytest_qcrypto.measure.harness.timed`), without the clocks: what
    reads and formats a time costs instructions that depend on the time read (measured: a
    round of 2 iterations counted 1,509 fewer than a round of 1, both timed)."""
    gc.disable()
    run(count)


def _warm(run: Callable[[int], None], count: int) -> None:
    """A round that no count sees, in the worker before it forks."""
    _round(run, count)
    gc.enable()


def _forked_totals(run: Callable[[int], None], counts: Sequence[int], cgdir: Path) -> list[int]:
    """Run a round of each count in its own forked child (all at once); their totals."""
    from pytest_qcrypto.measure import counting

    pids = []
    for c in counts:
        pid = os.fork()
        if pid == 0:  # the round, then out without running anything else
            status = 0
            try:
                _round(run, c)
            except BaseException:
                status = 3
            os._exit(status)
        pids.append(pid)
    totals = []
    for pid, c in zip(pids, counts):
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise counting.CountingError(f"the round of {c} iterations failed in its process "
                                         f"(wait status {status})")
        out = cgdir / f"cg.{pid}"
        with open(out, "rb") as f:  # its summary line ends the file: read the end only
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            totals.append(counting.cachegrind_total(f.read().decode(errors="replace")))
        out.unlink()
    return totals


def _perf_totals(run: Callable[[int], None], counts: Sequence[int]) -> list[int]:
    from pytest_qcrypto.measure.perf_counter import Counter

    totals = []
    for c in counts:
        with Counter() as counter:
            _round(run, c)
        gc.enable()
        totals.append(counter.value)
    return totals


def run(spec: Any, mode: str, cgdir: Path) -> Any:
    """Counts, totals, operations per iteration and the CPU flags seen (the module text)."""
    from pytest_qcrypto.algorithms import catalog
    from pytest_qcrypto.measure import bench, counting
    from pytest_qcrypto.measure.randomness import Randomness

    ctx = bench.open_context(spec.selection, spec.algorithm, Randomness(spec.seed))
    way = bench._Way(spec.decrypt, spec.roundtrip, spec.check_roundtrip, None, spec.operation)
    try:
        runner, direction, _, work, _ = bench.prepare(ctx, spec.size, way)
        _warm(runner, 1)  # first-call costs, and the code of a round translated, before a fork
        if mode == "perf":
            totals = lambda counts: _perf_totals(runner, counts)  # noqa: E731
        else:
            totals = lambda counts: _forked_totals(runner, counts, cgdir)  # noqa: E731
        one, two = totals((1, 2))
        if two <= one:  # never a count from rounds that were not counted (2**24 iterations)
            raise counting.CountingError(f"rounds of 1 and 2 iterations took {one} and {two} "
                                         "instructions: the rounds were not counted")
        n = counting.choose_count(two - one)
        _warm(runner, counting.warm_count(n, two - one, len(work.nonces)))
        counts = (n, 2 * n)
        return (counts, tuple(totals(counts)),
                catalog.OPERATIONS_PER_ITERATION.get(direction, 1), _SEEN)
    finally:
        ctx.close()


def load_spec(path: Path) -> Any:
    """The pickled spec at ``path`` (the plugin's module imported by the worker, so that no
    cell leaves anything behind for the next), its ``sys_path`` put first; a module that
    cannot be imported without ``site`` (an editable install's finder, a ``.pth`` file) is
    retried after running it."""
    blob = path.read_bytes()
    try:
        spec = pickle.loads(blob)
    except ImportError:
        if "site" in sys.modules:
            raise
        import site

        site.main()
        spec = pickle.loads(blob)
    sys.path[:0] = [p for p in spec.sys_path if p not in sys.path]
    return spec


def _error(exc: Exception) -> bytes:
    """``("error", exc)`` pickled for the parent, which raises it (a ``RuntimeError`` naming
    it when it does not pickle)."""
    try:
        payload = pickle.dumps(("error", exc))
        pickle.loads(payload)
        return payload
    except Exception:
        return pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def _work(mode: str, cgdir: Path) -> None:
    """The worker of one cell (a fork of the counting process): its answer in ``CGDIR/out``,
    then out of the process."""
    status = 0
    try:
        devnull = os.open(os.devnull, os.O_RDWR)  # the plugin's prints stay off the protocol
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        gc.enable()  # as in any process (the rounds themselves run without it)
        try:
            payload = pickle.dumps(("ok", run(load_spec(cgdir / "spec"), mode, cgdir)))
        except Exception as exc:
            payload = _error(exc)
        (cgdir / "out").write_bytes(payload)
    except BaseException:
        status = 3
    os._exit(status)


def serve(mode: str, cgdir: Path) -> int:
    """Fork a worker for each byte on standard input (its spec in ``CGDIR/spec``), and write a
    byte (``d``) when it has ended.

    Every worker starts from the same state of this process, so that what was counted before
    cannot move a count (CPython's allocator hands out memory by what it handed out before:
    an allocation-heavy cell counted after other cells' specs had been loaded here read 4.8%
    more an operation).  The loop between forks allocates nothing that outlives it, and ran
    once before ``ready`` (a fork that exits at once) so that the free lists it uses are
    filled alike for every worker.
    """
    global _SEEN
    gc.disable()  # nothing here makes garbage cycles worth the collections while importing
    from pytest_qcrypto.measure import bench, counting, cpu_features  # noqa: F401

    _SEEN = cpu_features.seen()
    gc.freeze()  # what is imported now: the workers' collections need not walk it
    first = True
    while first or os.read(0, 1):
        pid = os.fork()
        if not pid:
            if first:
                os._exit(0)
            _work(mode, cgdir)
        os.waitpid(pid, 0)
        del pid
        if first:
            first = False
            os.write(1, b"ready\n")
        else:
            os.write(1, b"d")
    return 0


def main(argv: list[str]) -> int:
    return serve(argv[0], Path(argv[1]))
