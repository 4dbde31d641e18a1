"""Counting the instructions of one operation: ``--qcrypto-measure=instructions``.

A time is moved by neighbours, CPU frequency and memory layout; the instructions one
operation executes are not.  A cell is counted in child processes that open the same
checked context through the same plugin code (:func:`pytest_qcrypto.measure.bench.open_context`,
known answers and round trip first) and run the plugin's runner as one round of a fixed
count (:func:`pytest_qcrypto.measure.harness.time_count`), at two counts ``n`` and ``2n``:

* **valgrind** (``valgrind --tool=cachegrind --cache-sim=no``, no PMU needed): one process
  under cachegrind opens and checks the context, then forks a child per count that runs
  its round and exits; the difference of the two children's totals (``summary:`` of the
  out file cachegrind writes for each) over ``n`` iterations is one iteration's
  instructions, and everything before the fork (Python's start-up, the imports, the checks)
  cancels out exactly: both children start from the same state.  (Cachegrind 3.19 has no
  request to split one process's total; forking gives each count a total of its own.)
* **perf_event** (a PMU that ``perf_event_open`` opens for ``instructions:u``): one native
  child counts user-space instructions around each of the two rounds directly.

``n`` comes from rounds of 1 and 2 iterations counted the same way, so that the difference
covers about :data:`TARGET_INSTRUCTIONS`: valgrind's totals of one program differ between
runs by a few thousand instructions (measured: 2,074 and 2,322 of 112 million for hashlib
sha256), under 0.02% of that.

Plain Python that never imports pytest.  The child's side is
:mod:`pytest_qcrypto.measure.counting_child`.
"""

from __future__ import annotations

import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.base import Unsupported
from pytest_qcrypto.measure import cpu_features, perf_counter, pkey_bench
from pytest_qcrypto.measure.harness import Measurement

#: ``--qcrypto-measure`` choices: the clock (default) or counted instructions.
MEASURES = ("time", "instructions")
VALGRIND, PERF_EVENT = "valgrind-cachegrind", "perf_event"
#: The instructions the difference of the two counts should cover (see the module text).
TARGET_INSTRUCTIONS = 20_000_000
#: The fewest iterations ``n`` may be, and the most (a slow KDF at 1 still counts once).
MIN_COUNT, MAX_COUNT = 1, 1 << 24
#: Seconds one counting child may take when the run has no ``--qcrypto-timeout``.
DEFAULT_CHILD_TIMEOUT = 900.0
#: The seed of keys and data when the run has no ``--qcrypto-seed``: a count must not depend
#: on which random bytes a run drew.
DEFAULT_SEED = 23
#: The module a counting child runs (``python -m``).
CHILD_MODULE = "pytest_qcrypto.measure.counting_child"


class CountingError(RuntimeError):
    """Counting could not run or gave no answer (no valgrind, a child that died, ...)."""


@dataclass(frozen=True)
class Counted:
    """How many instructions one operation took, and how that was found out.

    ``per_operation`` instructions (user space) for one operation of the cell; found by
    ``method`` (:data:`VALGRIND` or :data:`PERF_EVENT`) from the ``totals`` (instructions)
    of rounds of ``counts`` iterations, each ``per_iteration`` operations (2 for a round
    trip).  ``features`` are the crypto CPU flags the counted run saw (``CPUID``; under
    valgrind its CPU model's), ``host_features`` those ``/proc/cpuinfo`` lists (None:
    unknown); ``tool`` names the counter (``valgrind-3.19.0``).
    """

    per_operation: float
    method: str
    counts: tuple[int, int]
    totals: tuple[int, int]
    per_iteration: int = 1
    features: tuple[str, ...] | None = None
    host_features: tuple[str, ...] | None = None
    tool: str = ""
    repeats: tuple[float, ...] = field(default=())

    @property
    def hidden_features(self) -> tuple[str, ...]:
        """Host flags the counted run did not see (valgrind masks what it cannot emulate)."""
        if self.features is None or self.host_features is None:
            return ()
        return tuple(f for f in self.host_features if f not in self.features)

    def per_unit(self, size: int) -> float:
        """Instructions per byte (``size`` bytes an operation) or per operation (size 0)."""
        return self.per_operation / size if size > 0 else self.per_operation


def from_record(rec: Any) -> Counted:
    """A :class:`Counted` from a saved ``instructions`` object
    (:func:`pytest_qcrypto.results.model.counted_record`)."""
    flags = (lambda v: None if v is None else tuple(v))
    return Counted(float(rec["per_operation"]), str(rec["method"]), tuple(rec["counts"]),
                   tuple(rec["totals"]), int(rec.get("per_iteration", 1)),
                   flags(rec.get("cpu_features")), flags(rec.get("host_cpu_features")),
                   str(rec.get("tool", "")))


def nominal_rounds(c: Counted, iterations: int) -> tuple[float]:
    """The one nominal round of a counted measurement of ``iterations`` iterations: their
    instructions at one per nanosecond, in seconds (so that a rate is work per 10**9
    instructions, and its ratio to a baseline's the inverse ratio of the counts)."""
    return (c.per_operation * c.per_iteration * iterations / 1e9,)


def unit_name(size: int) -> str:
    """``instructions/byte`` for a sized cell, ``instructions/op`` for a size-less one."""
    return "instructions/byte" if size > 0 else "instructions/op"


def parse_measure(value: object, where: str = "--qcrypto-measure") -> str:
    """``time`` or ``instructions`` (``SettingsError`` naming the choices otherwise)."""
    text = str(value).strip().lower()
    if text not in MEASURES:
        raise SettingsError(f"{where}: {value!r} is not a measure; choose "
                            f"{' or '.join(MEASURES)}")
    return text


def per_operation(counts: tuple[int, int], totals: tuple[int, int],
                  per_iteration: int = 1) -> float:
    """Instructions of one operation from two rounds: ``(totals[1] - totals[0])`` over
    ``(counts[1] - counts[0])`` iterations of ``per_iteration`` operations each.
    ``CountingError`` when the counts or totals do not grow (the rounds did not run)."""
    (n1, n2), (t1, t2) = counts, totals
    if n2 <= n1:
        raise CountingError(f"the second count ({n2}) must be larger than the first ({n1})")
    if t2 <= t1:
        raise CountingError(f"{n2} iterations took {t2} instructions, no more than {n1} "
                            f"iterations ({t1}): the rounds were not counted")
    return (t2 - t1) / ((n2 - n1) * per_iteration)


def choose_count(per_iteration: float) -> int:
    """``n`` so that ``n`` iterations of ``per_iteration`` instructions (an estimate) cover
    :data:`TARGET_INSTRUCTIONS`: a power of two from :data:`MIN_COUNT` to :data:`MAX_COUNT`."""
    want = TARGET_INSTRUCTIONS / per_iteration if per_iteration > 0 else MAX_COUNT
    if want <= MIN_COUNT:
        return MIN_COUNT
    return min(MAX_COUNT, 1 << math.ceil(math.log2(want)))


def cachegrind_total(text: str) -> int:
    """The instructions of a cachegrind out file: its ``summary:`` line (event ``Ir``)."""
    found = re.search(r"^summary:\s+(\d+)", text, re.MULTILINE)
    if not found:
        raise CountingError("cachegrind wrote no summary line")
    return int(found.group(1))


def valgrind_problem() -> str | None:
    """Why valgrind cannot count here, or None."""
    if shutil.which("valgrind") is None:
        return ("valgrind is not installed (Debian/Ubuntu: apt-get install valgrind); it "
                "counts instructions where no PMU does")
    return None


def method(prefer: str | None = None) -> str:
    """The counting method of this machine: :data:`PERF_EVENT` when ``perf_event_open``
    counts instructions here, else :data:`VALGRIND`; ``prefer`` forces one.
    ``CountingError`` when neither can run."""
    if prefer == PERF_EVENT or (prefer is None and perf_counter.problem() is None):
        return PERF_EVENT
    problem = valgrind_problem()
    if problem:
        raise CountingError(f"cannot count instructions: no PMU ({perf_counter.problem()}) "
                            f"and {problem}")
    return VALGRIND


def refusal(outside_process: str, jobs: int = 1, threads: int = 1, target: str = "") -> str:
    """Why a cell cannot be counted (empty: it can): work outside this process."""
    if outside_process:
        return f"instructions are not counted for this plugin: {outside_process}"
    if target:
        return (f"instructions are not counted on a --qcrypto-target ({target}): its work "
                "runs in another environment")
    if jobs > 1 or threads > 1:
        return ("--qcrypto-measure=instructions counts one process's work: not with "
                "--qcrypto-jobs or --qcrypto-threads")
    return ""


@dataclass(frozen=True)
class Spec:
    """What a counting child measures: the plugin (pickled), the algorithm, the seed of keys
    and data, and the cell (size in bytes, 0 for a size-less kind; direction flags)."""

    selection: Any
    algorithm: str
    seed: int
    size: int
    decrypt: bool = False
    roundtrip: bool = False
    check_roundtrip: bool = False
    operation: str = ""
    sys_path: tuple[str, ...] = ()


def _finish(proc: subprocess.Popen[bytes], out: Path, timeout: float) -> Any:
    """The child's answer (what it raised is raised here)."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise CountingError(f"the counting process took more than {timeout:g} s") from None
    try:
        status, value = pickle.loads(out.read_bytes())
    except (OSError, EOFError, pickle.UnpicklingError):
        tail = err.decode(errors="replace").strip().splitlines()[-3:]
        raise CountingError(f"the counting process ended with status {proc.returncode} "
                            f"and no result: {' | '.join(tail) or 'no output'}") from None
    if status == "error":
        raise value
    return value


def count(spec: Spec, timeout: float | None = None, prefer: str | None = None) -> Counted:
    """Count the instructions of one operation of ``spec``'s cell (see the module text).

    ``timeout`` bounds the counting process (seconds; None: :data:`DEFAULT_CHILD_TIMEOUT`).
    What the plugin raises there (``Unsupported``, ``KnownAnswerError``...) is raised here;
    ``CountingError`` when counting itself fails.
    """
    how = method(prefer)
    limit = timeout or DEFAULT_CHILD_TIMEOUT
    try:
        blob = pickle.dumps(spec)
    except Exception as exc:
        raise CountingError(f"the plugin cannot be sent to a counting process (it does not "
                            f"pickle: {type(exc).__name__}: {exc})") from None
    with tempfile.TemporaryDirectory(prefix="qcrypto-count-") as tmp:
        d = Path(tmp)
        (d / "spec").write_bytes(blob)
        prefix = [] if how == PERF_EVENT else [
            "valgrind", "--tool=cachegrind", "--cache-sim=no", "-q",
            f"--cachegrind-out-file={d / 'cg.%p'}"]
        mode = "perf" if how == PERF_EVENT else "valgrind"
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", CHILD_MODULE, str(d / "spec"), str(d / "out"),
             mode, str(d)], env={**os.environ, "PYTHONHASHSEED": "0"},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        counts, totals, per_iteration, seen = _finish(proc, d / "out", limit)
    return Counted(per_operation(counts, totals, per_iteration), how, counts, totals,
                   per_iteration, seen, cpu_features.host(),
                   "perf_event_open" if how == PERF_EVENT else valgrind_version())


def valgrind_version() -> str:
    """``valgrind-3.19.0`` (empty when it does not say)."""
    try:
        return subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def counted_measurement(bench: Any, size: int, way: Any, jobs: int, threads: int,
                        timeout: float | None) -> Measurement:
    """``--qcrypto-measure=instructions``: the instructions of one operation, counted in a
    child process (:func:`pytest_qcrypto.measure.count`), as a :class:`Measurement`
    with :attr:`~Measurement.counted` set.  ``Unsupported`` with the reason for a plugin whose
    work runs outside the process, or with jobs or threads."""
    why = refusal(getattr(bench.selection.plugin, "outside_process", ""), jobs,
                           threads)
    if why:
        raise Unsupported(why)
    alg = bench.algorithm
    spec = Spec(bench.selection, alg.name,
                         bench.rng.seed if bench.rng.seed is not None else DEFAULT_SEED,
                         size if alg.rules.sized else 0, way.decrypt, way.roundtrip,
                         way.check_roundtrip, way.operation, tuple(sys.path))
    c = count(spec, timeout)
    direction = alg.direction(way.decrypt, way.roundtrip) if alg.rules.sized else \
        pkey_bench.direction(alg, way.operation)
    iterations = c.counts[1] - c.counts[0]
    return Measurement(
        algorithm=alg.name, plugin=bench.selection.typed, size=spec.size, direction=direction,
        count=iterations, rounds_s=nominal_rounds(c, iterations),
        canonical_plugin=bench.selection.canonical,
        operation=catalog.ROUNDTRIP_OPERATION if way.roundtrip else alg.operation,
        counted=c)
