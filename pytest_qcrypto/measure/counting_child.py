"""The child side of :mod:`pytest_qcrypto.measure.counting`:
``python -m pytest_qcrypto.measure.counting_child SPEC OUT MODE CGDIR``.

It opens the context of the pickled :class:`~pytest_qcrypto.measure.counting.Spec` with its
seeded keys and data (:func:`pytest_qcrypto.measure.bench.open_context`), checks it (known
answers, round trip: :func:`pytest_qcrypto.measure.bench.prepare`), then counts rounds of the
plugin's runner, each one round as a timed round runs it
(:func:`pytest_qcrypto.measure.harness.time_count`).  ``MODE``:

* ``valgrind`` (the parent runs this process under cachegrind): each round runs in a forked
  child, which starts from the same state with the same instructions counted so far and
  exits after its round; cachegrind writes each child's total to ``CGDIR/cg.PID``.  Rounds
  of 1 and 2 iterations estimate one iteration's instructions, which choose ``n``
  (:func:`pytest_qcrypto.measure.counting.choose_count`); then rounds of ``n`` and ``2n``
  run at once.
* ``perf``: the same rounds in this process, each counted by the PMU
  (:class:`pytest_qcrypto.measure.perf_counter.Counter`) after a warm-up round.

``OUT`` receives ``pickle(("ok", (counts, totals, operations per iteration, CPU flags seen)))``
or ``pickle(("error", exception))``.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _forked_totals(run: Callable[[int], None], counts: Sequence[int], cgdir: Path) -> list[int]:
    """Run a round of each count in its own forked child (all at once); their totals."""
    from pytest_qcrypto.measure import counting, harness

    pids = []
    for c in counts:
        pid = os.fork()
        if pid == 0:  # the round, then out without running anything else
            status = 0
            try:
                harness.time_count(run, c, rounds=1)
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
        totals.append(counting.cachegrind_total((cgdir / f"cg.{pid}").read_text()))
    return totals


def _perf_totals(run: Callable[[int], None], counts: Sequence[int]) -> list[int]:
    from pytest_qcrypto.measure import harness
    from pytest_qcrypto.measure.perf_counter import Counter

    totals = []
    for c in counts:
        with Counter() as counter:
            harness.time_count(run, c, rounds=1)
        totals.append(counter.value)
    return totals


def run(spec: Any, mode: str, cgdir: Path) -> Any:
    """Counts, totals, operations per iteration and the CPU flags seen (the module text)."""
    from pytest_qcrypto.algorithms import catalog
    from pytest_qcrypto.measure import bench, counting, cpu_features
    from pytest_qcrypto.measure.randomness import Randomness

    ctx = bench.open_context(spec.selection, spec.algorithm, Randomness(spec.seed))
    way = bench._Way(spec.decrypt, spec.roundtrip, spec.check_roundtrip, None, spec.operation)
    runner, direction, _, _, _ = bench.prepare(ctx, spec.size, way)
    if mode == "perf":
        runner(1)  # warm: first-call costs land in neither count
        totals = lambda counts: _perf_totals(runner, counts)  # noqa: E731
    else:
        totals = lambda counts: _forked_totals(runner, counts, cgdir)  # noqa: E731
    try:
        one, two = totals((1, 2))
        n = counting.choose_count(max(two - one, 1))
        counts = (n, 2 * n)
        return (counts, tuple(totals(counts)),
                catalog.OPERATIONS_PER_ITERATION.get(direction, 1), cpu_features.seen())
    finally:
        ctx.close()


def main(argv: list[str]) -> int:
    spec_path, out, mode, cgdir = argv[0], Path(argv[1]), argv[2], Path(argv[3])
    try:
        spec = pickle.loads(Path(spec_path).read_bytes())
        sys.path[:0] = [p for p in spec.sys_path if p not in sys.path]
        payload = pickle.dumps(("ok", run(spec, mode, cgdir)))
    except Exception as exc:  # sent back to the parent, which raises it
        try:
            payload = pickle.dumps(("error", exc))
            pickle.loads(payload)
        except Exception:
            payload = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    out.write_bytes(payload)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
