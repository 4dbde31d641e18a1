"""Counting the instructions of one operation: ``--qcrypto-measure=instructions``.

A time is moved by neighbours, CPU frequency and memory layout; the instructions one
operation executes are not.  A cell is counted in a worker process that opens the same
checked context through the same plugin code (:func:`pytest_qcrypto.measure.bench.open_context`,
known answers and round trip first) and runs the plugin's runner as one round of a fixed
count (as a timed round runs it, without the clocks), at two counts ``n`` and ``2n``:

* **valgrind** (``valgrind --tool=cachegrind --cache-sim=no``, no PMU needed): the worker,
  under cachegrind, forks a child per count that runs its round and exits; the difference of
  the two children's totals (``summary:`` of the out file cachegrind writes for each) over
  ``n`` iterations is one iteration's instructions, and everything before the fork (Python's
  start-up, the imports, the checks) cancels out exactly: both children start from the same
  state.  (Cachegrind 3.19 has no request to split one process's total; forking gives each
  count a total of its own.)
* **perf_event** (a PMU that ``perf_event_open`` opens for ``instructions:u``): the worker
  counts user-space instructions around each of the two rounds directly.

A run starts one counting process (:class:`_Server`, the child side in
:mod:`pytest_qcrypto.measure.counting_child`) when it counts its first cell, and forks a
worker from it for each cell: Python's start-up and the imports under cachegrind (measured
here: 4.5 to 5 CPU seconds, most of a counted cell's cost) are paid once a run, not once a
cell.  :func:`close` ends it (the pytest side at the end of the run, and at exit).

``n`` comes from rounds of 1 and 2 iterations counted the same way, so that the difference
covers about :data:`TARGET_INSTRUCTIONS`; the worker first runs :func:`warm_count` iterations
uncounted.  Two children forked from one state differ only by their rounds: repeated counts
gave the same figure to the last digit (hashlib sha256 at 16, 256 and 4096 B, openssl
aes-128-gcm at 16 and 1024 B, hmac-sha256 at 64 B, three runs each, 2026-12-03), and a target
of 2 million instead of 20 million moved them by 0.04% to 0.12% (what a round costs beyond
its iterations, over fewer of them), far inside the 1% gate, for a tenth of the counted work.

Plain Python that never imports pytest.
"""

from __future__ import annotations

import atexit
import functools
import math
import os
import pickle
import re
import select
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.base import Unsupported
from pytest_qcrypto.measure import cpu_features, pkey_bench
from pytest_qcrypto.measure.harness import Measurement

#: ``--qcrypto-measure`` choices: the clock (default) or counted instructions.
MEASURES = ("time", "instructions")
VALGRIND, PERF_EVENT = "valgrind-cachegrind", "perf_event"
#: The instructions the difference of the two counts should cover (see the module text; 20
#: million before 2026-12-03).
TARGET_INSTRUCTIONS = 2_000_000
#: The fewest iterations ``n`` may be, and the most (a slow KDF at 1 still counts once).
MIN_COUNT, MAX_COUNT = 1, 1 << 24
#: Seconds the counting of one cell may take when the run has no ``--qcrypto-timeout`` (the
#: first cell's includes the start of the counting process).
DEFAULT_CHILD_TIMEOUT = 900.0
#: The seed of keys and data when the run has no ``--qcrypto-seed``: a count must not depend
#: on which random bytes a run drew.
DEFAULT_SEED = 23
#: The module of the counting process (see :data:`BOOT`).
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


def warm_count(n: int, per_iteration: float, pool: int = 0) -> int:
    """Iterations to run, uncounted, before the counted rounds of ``n`` and ``2n``: ``n``, as a
    timed run's calibration runs its runner before its rounds, and at least the ``pool`` of
    nonces an AEAD runner cycles through when that costs at most 8 x
    :data:`TARGET_INSTRUCTIONS` (``per_iteration`` instructions each): its first pass costs
    more an operation (measured: aes-128-gcm at 1024 B, 8,243 instructions in it, 8,179
    after it)."""
    return max(n, pool) if pool * per_iteration <= 8 * TARGET_INSTRUCTIONS else n


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
    from pytest_qcrypto.measure import perf_counter  # here: a counting process needs none

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


#: What the counting process runs (``python -S -c BOOT MODE CGDIR PATH...``): the ``PATH``
#: arguments put first on ``sys.path``, then
#: :func:`pytest_qcrypto.measure.counting_child.main`.  Python starts without ``site``: its
#: ``.pth`` files and an editable install's finder cost seconds under valgrind, and the
#: parent's ``sys.path`` (with this package's folder after it) finds the same modules; a
#: plugin module that needs ``site`` to be imported gets it then.
BOOT = ("import gc, sys; gc.disable(); sys.path[:0] = sys.argv[3:]; "
        f"from {CHILD_MODULE} import main; sys.exit(main(sys.argv[1:3]))")


class _Server:
    """The run's counting process (:mod:`pytest_qcrypto.measure.counting_child`): started
    once, then given cell after cell; killed (its process group) on a time-out, an
    interrupt, or :func:`close`."""

    def __init__(self, how: str, sys_path: tuple[str, ...]) -> None:
        import subprocess  # here: the counting process imports this module, not subprocess

        d = self.dir = Path(tempfile.mkdtemp(prefix="qcrypto-count-"))
        prefix = [] if how == PERF_EVENT else [
            "valgrind", "--tool=cachegrind", "--cache-sim=no", "-q", "--vgdb=no",
            f"--cachegrind-out-file={d / 'cg.%p'}"]
        paths = [*sys_path, str(Path(__file__).resolve().parents[2])]
        with open(d / "stderr", "wb") as err:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-S", "-c", BOOT,
                 "perf" if how == PERF_EVENT else "valgrind", str(d), *paths],
                env={**os.environ, "PYTHONHASHSEED": "0"}, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, start_new_session=True)
        self.ready, self.owner = False, os.getpid()

    def _read(self, size: int, deadline: float) -> bytes:
        """``size`` bytes from the process (fewer: it ended); ``TimeoutError`` at ``deadline``."""
        assert self.proc.stdout is not None
        got = b""
        while len(got) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(self.proc.stdout.fileno(), size - len(got))
            if not chunk:
                break
            got += chunk
        return got

    def count(self, blob: bytes, timeout: float) -> Any:
        """The answer of the cell pickled in ``blob`` (what the child raised is raised here)."""
        deadline = time.monotonic() + timeout
        out = self.dir / "out"
        for old in [out, *self.dir.glob("cg.*")]:  # the last cell's (all ended by now)
            old.unlink(missing_ok=True)
        (self.dir / "spec").write_bytes(blob)
        try:
            if not self.ready:
                self.ready = self._read(6, deadline) == b"ready\n"
            assert self.proc.stdin is not None
            if self.ready:
                self.proc.stdin.write(b"c")
                self.proc.stdin.flush()
            ended = not self.ready or self._read(1, deadline) != b"d"
        except TimeoutError:
            self.close()
            raise CountingError(f"the counting process took more than {timeout:g} s") from None
        except BrokenPipeError:
            ended = True
        except BaseException:  # an interrupt: the process is in an unknown state
            self.close()
            raise
        try:
            result, value = pickle.loads(out.read_bytes())
        except (OSError, EOFError, pickle.UnpicklingError):
            lines = (self.dir / "stderr").read_bytes().decode(errors="replace").splitlines()
            tail = " | ".join([x for x in lines if "warning: L3 cache" not in x][-3:])
            if ended:
                self.close()
            raise CountingError("the counting process " + (
                "ended" if ended else "ran the cell in a worker that ended") +
                f" with no result: {tail or 'no output'}") from None
        if result == "error":
            raise value
        return value

    def close(self) -> None:
        """Kill the process and what it forked, and remove its folder (nothing in a process
        forked from the one that started it)."""
        if os.getpid() != self.owner:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        shutil.rmtree(self.dir, ignore_errors=True)


#: The running counting processes, by method, ``sys.path`` and the process that started them
#: (a process forked from it starts its own); :func:`close` ends them.
_servers: dict[tuple[str, tuple[str, ...], int], _Server] = {}
_lock = threading.Lock()


def close() -> None:
    """End the counting processes this process started (the end of a pytest run, and at
    exit)."""
    with _lock:
        while _servers:
            _servers.popitem()[1].close()


atexit.register(close)


def count(spec: Spec, timeout: float | None = None, prefer: str | None = None) -> Counted:
    """Count the instructions of one operation of ``spec``'s cell (see the module text).

    ``timeout`` bounds the counting of the cell (seconds; None:
    :data:`DEFAULT_CHILD_TIMEOUT`), the start of the run's counting process included.  What
    the plugin raises there (``Unsupported``, ``KnownAnswerError``...) is raised here;
    ``CountingError`` when counting itself fails.
    """
    how = method(prefer)
    try:
        blob = pickle.dumps(spec)
    except Exception as exc:
        raise CountingError(f"the plugin cannot be sent to a counting process (it does not "
                            f"pickle: {type(exc).__name__}: {exc})") from None
    with _lock:
        key = (how, spec.sys_path, os.getpid())
        server = _servers.get(key)
        if server is None or server.proc.poll() is not None:
            if server is not None:
                server.close()
            server = _servers[key] = _Server(how, spec.sys_path)
        counts, totals, per_iteration, seen = server.count(blob,
                                                           timeout or DEFAULT_CHILD_TIMEOUT)
    return Counted(per_operation(counts, totals, per_iteration), how, counts, totals,
                   per_iteration, seen, cpu_features.host(),
                   "perf_event_open" if how == PERF_EVENT else valgrind_version())


@functools.cache
def valgrind_version() -> str:
    """``valgrind-3.19.0`` (empty when it does not say)."""
    import subprocess

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
