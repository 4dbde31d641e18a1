"""Saved results: the JSON file format, the machine fingerprint, atomic writes, loading.

A results file is one JSON object.  Its field names are public (CI scripts and
dashboards read them) and only change with ``schema_version``::

    {
      "format": "pytest-qcrypto results",
      "schema_version": 2,
      "complete": true,                 # false: the run was interrupted or stopped early
      "created": "2026-11-29T21:30:00Z",  # UTC, ISO 8601
      "tool": {"name": "pytest-qcrypto", "version": "0.1.0"},
      "settings": {"min_time_s": 0.1, "rounds": 3},
      "machine": {                      # the fingerprint, see :func:`fingerprint`
        "cpu_model": "...", "cpu_flags": ["aes", "avx2", ...], "architecture": "x86_64",
        "cores": 2, "os": "Linux", "kernel": "6.1.0-...", "libc": "glibc 2.36",
        "python": "CPython 3.11.7"
      },
      "plugins": {                      # per crypto plugin as typed
        "openssl": {"canonical": "openssl", "library": "pyca/cryptography",
                    "version": "OpenSSL 3.4.1 11 Feb 2025 (cryptography 44.0.2)",
                    "drivers": [],
                    "implementations": {"sha256": "OpenSSL 3.4.1 via cryptography 44.0.2"}}
      },                                # "implementations" (optional): per algorithm
                                        # measured, the code that did it (hashlib:
                                        # "CPython's _blake2" or "OpenSSL 3.0.19")
      "results": [
        {"algorithm": "sha256", "plugin": "openssl", "canonical_plugin": "openssl",
         "size": 4096, "direction": "digest", "operation": "hash one buffer ...",
         "count": 4096, "rounds_s": [0.0082, 0.0081, 0.0083], "cpu_s": [...],
         "bytes_per_second": 2.07e9, "jobs": 1, "driver": null, "hardware": null,
         "test": "qcrypto::sha256[openssl-4096]", "cpu_wait_share": 0.8}
      ],                                # with --qcrypto-jobs N > 1 an entry also has
                                        # "workers": [{"count": 2048, "rounds_s": [...],
                                        #   "cpu_s": [...], "bytes_per_second": 1.0e9}, ...]
      "machine_state": {"load": [0.1, 0.2, 0.2], ...}   # optional, see machine.py
    }

``bytes_per_second`` is ``count * size`` over the median of ``rounds_s``
(seconds of wall time per round): the figure a regression gate compares.
``cpu_s`` are the CPU seconds of the same rounds.  ``cpu_wait_share`` is, of
the time the measuring thread was off the CPU during the measurement, the
part it was ready to run but waited for a CPU held by other processes (0: it
slept or waited for a device; Linux schedstat, null elsewhere): the gate
judges figures without that wait.  ``jobs`` is the number of
processes that measured at once (``--qcrypto-jobs``; the figure is their sum:
total bytes of all workers over the common window of the round).  When it is
above 1, ``workers`` has one entry per process: its ``count`` of operations
per round, the wall seconds of each round from its own start to its own end
(``rounds_s``), its CPU seconds (``cpu_s``), and ``bytes_per_second``, its
count times ``size`` over its median round.  The workers' counts add up to
``count``.
A cell appears once per ``test`` (two tests may measure the same cell; a
test that measures it again replaces its entry): :func:`load` refuses a file
that repeats (algorithm, canonical plugin, size, direction) for the same test.
``tries`` (optional) lists ``bytes_per_second`` of every try when the gate
measured a cell again.  ``machine_state`` (optional) is the load and clock
state when measuring started: it differs between identical runs, so it is not
part of the ``machine`` fingerprint.

Schema 1 is the figures-only form: ``schema_version``, optional ``machine``,
and ``results`` whose entries carry ``algorithm``, ``plugin``, ``size``,
optional ``direction`` and ``kib_per_s`` (1 KiB = 1024 bytes), as one would
type in from a ``qcrypto speed`` table.  :func:`load` migrates it to schema 2.

:func:`load` refuses, naming the field (``results[3].size``), what no run
writes and what would break arithmetic downstream: a key given twice in one
object, a whole number of more than 20 digits anywhere
(:mod:`pytest_qcrypto.strictjson`), a ``size`` over 256 MiB, a ``count``
over 2**53, a round under a nanosecond, a figure that is not finite or
becomes infinite once the wait for a CPU is taken out.  A plugin written as
an alias (``pyca``) without ``canonical_plugin`` gets its canonical name.

Files are written atomically (:func:`write_atomic`): a reader sees the old
file or the whole new one, never a truncated one.  Nothing here imports pytest.
"""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import stat
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_qcrypto import __version__, catalog, registry, settings, strictjson
from pytest_qcrypto import timeout as limits
from pytest_qcrypto.harness import KIB, Measurement

FORMAT = "pytest-qcrypto results"
#: The most operations a result may record per round: 2**53, the largest whole number a
#: float holds exactly (the harness stops doubling at 2**40, times at most a few jobs).
MAX_COUNT = 2**53
#: The shortest round a result may record, seconds: the timers count nanoseconds.
MIN_ROUND_S = 1e-9
#: The schema this version writes; :func:`load` reads 1 up to this one.
SCHEMA_VERSION = 2
DIRECTIONS = ("digest", "encrypt", "decrypt")

#: CPU flags that change crypto speed (``/proc/cpuinfo``), x86: AES-NI, carry-less
#: multiply (GHASH), SHA extensions, the vector units that OpenSSL's AES-GCM,
#: ChaCha20 and SHA code paths select at run time.
X86_CRYPTO_FLAGS = frozenset({
    "aes", "pclmulqdq", "vpclmulqdq", "vaes", "sha_ni", "ssse3", "sse4_1", "sse4_2", "avx",
    "avx2", "avx512f", "avx512bw", "avx512vl", "avx512ifma", "bmi2", "adx", "gfni"})
#: The same for Arm (the ``Features`` line): the ARMv8 crypto extensions and vector units.
ARM_CRYPTO_FLAGS = frozenset({
    "aes", "pmull", "sha1", "sha2", "sha3", "sha512", "sm3", "sm4", "asimd", "neon", "sve",
    "sve2"})


class ResultsError(ValueError):
    """A results file that cannot be used; ``str()`` names the file and the problem."""


@dataclass(frozen=True)
class WorkerResult:
    """One ``--qcrypto-jobs`` process's part of a :class:`Result`.

    ``count`` operations in every round; ``rounds_s`` and ``cpu_s`` its wall
    and CPU seconds per round (its own start to end); ``bytes_per_second`` its
    count times the result's size over its median round.
    """

    count: int
    rounds_s: tuple[float, ...]
    cpu_s: tuple[float, ...]
    bytes_per_second: float

    @classmethod
    def from_record(cls, record: Mapping[str, Any], size: int) -> WorkerResult:
        """From an entry of ``Measurement.extra["workers"]`` (:func:`.jobs.worker_record`)."""
        rounds = tuple(float(x) for x in record["rounds_s"])
        return cls(count=int(record["count"]), rounds_s=rounds,
                   cpu_s=tuple(float(x) for x in record.get("cpu_s", ())),
                   bytes_per_second=int(record["count"]) * size / statistics.median(rounds))

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "rounds_s": list(self.rounds_s), "cpu_s": list(self.cpu_s),
                "bytes_per_second": self.bytes_per_second}


# -- the machine fingerprint ----------------------------------------------------------------------


def _cpuinfo(text: str) -> dict[str, str]:
    """The first processor block of ``/proc/cpuinfo`` as a dict (keys lower case)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        key = key.strip().lower()
        if sep and key and key not in fields:
            fields[key] = value.strip()
    return fields


def fingerprint(cpuinfo: str | None = None) -> dict[str, Any]:
    """What identifies this machine for comparing speed, without volatile values.

    Keys: ``cpu_model`` (str), ``cpu_flags`` (sorted crypto-relevant flags,
    :data:`X86_CRYPTO_FLAGS` / :data:`ARM_CRYPTO_FLAGS`), ``architecture``,
    ``cores`` (logical CPUs), ``os``, ``kernel`` (release), ``libc``,
    ``python`` (implementation and version).  Current clock speed, BogoMIPS,
    the host name and load are left out: they change between identical runs.
    ``cpuinfo`` is the text of ``/proc/cpuinfo`` (read when None; absent
    outside Linux, where the model comes from :func:`platform.processor`).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    info = _cpuinfo(cpuinfo)
    model = info.get("model name") or info.get("hardware") or info.get("cpu model") or ""
    if not model and "cpu implementer" in info:  # Arm: implementer and part numbers
        model = f"implementer {info['cpu implementer']} part {info.get('cpu part', '?')}"
    model = " ".join(model.split()) or platform.processor() or "unknown"
    flags = set((info.get("flags") or "").split())
    crypto = (flags & X86_CRYPTO_FLAGS) | (set((info.get("features") or "").split())
                                           & ARM_CRYPTO_FLAGS)
    libc, libc_version = platform.libc_ver()
    return {
        "cpu_model": model,
        "cpu_flags": sorted(crypto),
        "architecture": platform.machine() or "unknown",
        "cores": os.cpu_count() or 0,
        "os": platform.system() or sys.platform,
        "kernel": platform.release(),
        "libc": f"{libc} {libc_version}".strip() or "unknown",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def machine_differences(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One line per fingerprint field that differs: ``cores: 2 (baseline) vs 8 (now)``.

    CPU flags are listed as those only the baseline had and those only this
    machine has.  A field the baseline does not record is not a difference.
    """
    out: list[str] = []
    for key, now in current.items():
        if key not in baseline or baseline[key] == now:
            continue
        then = baseline[key]
        if key == "cpu_flags" and isinstance(then, list) and isinstance(now, list):
            gone = sorted(set(then) - set(now))
            new = sorted(set(now) - set(then))
            parts = ([f"baseline only: {' '.join(gone)}"] if gone else []) + \
                    ([f"this machine only: {' '.join(new)}"] if new else [])
            if parts:
                out.append(f"cpu_flags: {'; '.join(parts)}")
        else:
            out.append(f"{key}: {then!r} (baseline) vs {now!r} (now)")
    return out


# -- the model ---------------------------------------------------------------------------------


def without_wait(rounds_s: Sequence[float], cpu_s: Sequence[float],
                 share: float | None) -> list[float] | None:
    """Each round's seconds without its wait for a CPU, or None without ``share`` or CPU times.

    ``share`` is the part of the time off the CPU that was a wait for a CPU held by other
    work: each round loses that share of its wall time beyond its CPU time; the rest (a
    plugin sleeping, a device working) stays.  A round is at least its CPU time.
    """
    if not share or not rounds_s or len(cpu_s) != len(rounds_s):
        return None
    return [w - share * max(w - c, 0.0) for w, c in zip(rounds_s, cpu_s)]


@dataclass(frozen=True)
class Result:
    """One saved measurement (a row of ``results``).  Seconds, bytes, bytes per second."""

    algorithm: str
    plugin: str
    size: int
    direction: str
    bytes_per_second: float
    count: int = 0
    rounds_s: tuple[float, ...] = ()
    cpu_s: tuple[float, ...] = ()
    canonical_plugin: str = ""
    operation: str = ""
    driver: str | None = None
    hardware: bool | None = None
    test: str | None = None
    tries: tuple[float, ...] = ()
    jobs: int = 1
    cpu_wait_share: float | None = None
    workers: tuple[WorkerResult, ...] = ()

    @classmethod
    def from_measurement(cls, m: Measurement, test: str | None = None,
                         tries: Iterable[Measurement] = (),
                         cpu_wait_share: float | None = None) -> Result:
        """The saved form of ``m``; ``tries`` are all tries when the gate re-measured,
        ``cpu_wait_share`` the share of its time off the CPU spent waiting for one."""
        every = tuple(t.bytes_per_second for t in tries)
        jobs = m.extra.get("jobs", 1)
        records = m.extra.get("workers")
        workers = tuple(WorkerResult.from_record(w, m.size) for w in records) \
            if isinstance(records, list) else ()
        return cls(algorithm=m.algorithm, plugin=m.plugin, size=m.size, direction=m.direction,
                   bytes_per_second=m.bytes_per_second, count=m.count,
                   rounds_s=tuple(m.rounds_s), cpu_s=tuple(m.cpu_s),
                   canonical_plugin=m.canonical_plugin or m.plugin, operation=m.operation,
                   driver=m.driver, hardware=m.hardware, test=test,
                   tries=every if len(every) > 1 else (),
                   jobs=jobs if isinstance(jobs, int) and jobs > 0 else 1,
                   cpu_wait_share=cpu_wait_share, workers=workers)

    @property
    def key(self) -> tuple[str, str, int, str]:
        """``(algorithm, canonical plugin, size, direction)``: what a baseline is matched on."""
        return self.algorithm, self.canonical_plugin or self.plugin, self.size, self.direction

    @property
    def kib_per_s(self) -> float:
        return self.bytes_per_second / KIB

    @property
    def slowest_round_bytes_per_second(self) -> float:
        """The figure of the slowest round, scaled from ``bytes_per_second`` by the rounds' spread.

        Equal to ``bytes_per_second`` when no rounds are recorded.
        """
        if not self.rounds_s:
            return self.bytes_per_second
        return self.bytes_per_second * (statistics.median(self.rounds_s) / max(self.rounds_s))

    def figures_without_wait(self) -> tuple[float, float]:
        """The judged figure and its slowest round's (bytes per second), this result's own
        wait for a CPU taken out (:func:`without_wait`); both are scaled from
        ``bytes_per_second``, the figure of record.  Without a ``cpu_wait_share`` or CPU
        times, ``bytes_per_second`` and :attr:`slowest_round_bytes_per_second`.

        :func:`load` refuses a file in which either is not finite.
        """
        rounds = without_wait(self.rounds_s, self.cpu_s, self.cpu_wait_share)
        if rounds is None:
            return self.bytes_per_second, self.slowest_round_bytes_per_second
        median_raw = statistics.median(self.rounds_s)
        return (self.bytes_per_second * (median_raw / statistics.median(rounds)),
                self.bytes_per_second * (median_raw / max(rounds)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "algorithm": self.algorithm, "plugin": self.plugin,
            "canonical_plugin": self.canonical_plugin or self.plugin, "size": self.size,
            "direction": self.direction, "operation": self.operation, "count": self.count,
            "rounds_s": list(self.rounds_s), "cpu_s": list(self.cpu_s),
            "bytes_per_second": self.bytes_per_second, "jobs": self.jobs, "driver": self.driver,
            "hardware": self.hardware, "test": self.test,
            "cpu_wait_share": self.cpu_wait_share,
        }
        if self.tries:
            out["tries"] = list(self.tries)
        if self.workers:
            out["workers"] = [w.to_json() for w in self.workers]
        return out


@dataclass
class ResultsFile:
    """A whole results file: where it was measured, with what, and every result."""

    results: list[Result]
    machine: dict[str, Any] = field(default_factory=dict)
    plugins: dict[str, dict[str, Any]] = field(default_factory=dict)
    complete: bool = True
    created: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    tool: dict[str, Any] = field(default_factory=dict)
    machine_state: dict[str, Any] | None = None
    path: Path | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {
            "format": FORMAT,
            "schema_version": SCHEMA_VERSION,
            "complete": self.complete,
            "created": self.created or now_utc(),
            "tool": self.tool or {"name": "pytest-qcrypto", "version": __version__},
            "settings": self.settings,
            "machine": self.machine,
            "plugins": self.plugins,
            "results": [r.to_json() for r in self.results],
        }
        if self.machine_state is not None:
            doc["machine_state"] = self.machine_state
        return doc

    def plugin_entry(self, canonical: str) -> dict[str, Any] | None:
        """The ``plugins`` entry of a plugin by canonical name (typed names differ by alias)."""
        for typed, entry in self.plugins.items():
            if entry.get("canonical", typed) == canonical:
                return entry
        return None


def now_utc() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def plugin_entries(typed_names: Iterable[str], resolve: Callable[[str], Any],
                   measurements: Iterable[Measurement | Result] = ()
                   ) -> dict[str, dict[str, Any]]:
    """The ``plugins`` section: per typed name, canonical name, library, version, drivers seen,
    and ``implementations``: for each algorithm measured, the plugin's
    ``implementation(algorithm)`` (``CPython's _blake2``), followed by
    ``: driver X`` when the measurements name the kernel drivers that did the work.

    ``resolve(typed)`` returns the registry's ``Selection``; a plugin whose
    version (or an implementation) cannot be read gets ``"unknown (reason)"``.
    """
    drivers: dict[str, set[str]] = {}
    measured: dict[str, dict[str, set[str]]] = {}
    for m in measurements:
        if m.driver:
            drivers.setdefault(m.plugin, set()).add(m.driver)
        seen = measured.setdefault(m.plugin, {}).setdefault(m.algorithm, set())
        if m.driver:
            seen.add(m.driver)
    out: dict[str, dict[str, Any]] = {}
    for typed in typed_names:
        if typed in out:
            continue
        sel = None
        try:
            sel = resolve(typed)
            canonical, library = sel.canonical, sel.plugin.library
            version = limits.call_bounded(sel.plugin.version, "version()", limits.QUERY_TIMEOUT)
        except limits.CallTimeout as exc:  # a hung version() must not hang the save
            version = f"unknown ({exc})"
        except Exception as exc:  # a third-party plugin's version() must not lose the results
            canonical, library = typed, ""
            version = f"unknown ({type(exc).__name__}: {exc})"
        out[typed] = {"canonical": canonical, "library": library, "version": version,
                      "drivers": sorted(drivers.get(typed, ()))}
        if sel is not None and typed in measured:
            out[typed]["implementations"] = {
                name: _implementation(sel.plugin, name, seen)
                for name, seen in measured[typed].items()}
    return out


def _implementation(plugin: Any, name: str, drivers: set[str]) -> str:
    """``plugin.implementation`` of catalog algorithm ``name``, with the drivers that did it."""
    from pytest_qcrypto.backends import implementation_text

    text = implementation_text(plugin, name)
    return f"{text}: driver {', '.join(sorted(drivers))}" if drivers else text


# -- writing -----------------------------------------------------------------------------------


def partial_path(path: Path) -> Path:
    """Where an incomplete run's results go when ``path`` already holds a file."""
    return path.with_name(path.name + ".partial")


class NotARegularFile(OSError):
    """A path to write that exists and is not a regular file; ``str()`` says what it is."""

    def __init__(self, text: str) -> None:
        super().__init__(errno.EEXIST, text)

    def __str__(self) -> str:
        return str(self.strerror)


def _kind(mode: int) -> str:
    """``a FIFO``, ``a character device``, ...: what a file that is not a regular one is."""
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def real_target(path: Path) -> Path:
    """``path`` with every symbolic link resolved: the file a write must replace.

    Raises ``OSError`` when ``path`` exists but is not a regular file (a
    directory, a device, a FIFO, ...), or is a link that never ends (a loop).
    """
    path = Path(path)
    real = Path(os.path.realpath(path))
    try:
        mode = os.lstat(real).st_mode
    except FileNotFoundError:
        return real  # nothing there yet (or a link to a file not created yet)
    if not stat.S_ISREG(mode):
        if stat.S_ISLNK(mode):
            raise NotARegularFile(f"{path} is a symbolic link that does not resolve (a loop)")
        via = f" (a symbolic link to {real})" if os.path.islink(path) else ""
        raise NotARegularFile(f"{path}{via} is {_kind(mode)}, not a regular file")
    return real


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` (str as UTF-8, or bytes) to ``path`` through a temporary file and a rename.

    The file appears whole or not at all (``os.replace`` is atomic on POSIX
    and Windows); the temporary file is removed if anything fails, even
    KeyboardInterrupt.  An existing file's permission bits are kept.  A
    symbolic link is followed: the file it points to is replaced, the link
    stays.  A ``path`` that is not a regular file (a device, a FIFO, a
    directory) is never replaced.  Raises ``OSError``.
    """
    path = real_target(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    try:  # make the rename itself durable; not possible everywhere (Windows)
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def save(path: Path, results: ResultsFile) -> Path:
    """Write ``results`` to ``path`` atomically and return where it went.

    An incomplete run never replaces an existing file: it goes to
    ``PATH.partial`` (:func:`partial_path`) instead.  Raises ``OSError``.
    """
    path = Path(path)
    target = path if results.complete or not path.exists() else partial_path(path)
    write_atomic(target, json.dumps(results.to_json(), indent=1) + "\n")
    return target


def check_writable(path: Path) -> str | None:
    """Why ``path`` cannot receive a results file, or None (checked before a run starts).

    A symbolic link is judged by the file it points to.  Refused: a path that
    exists but is not a regular file (a directory, a device such as
    ``/dev/full``, a FIFO), a directory that does not exist, and a directory
    in which no file can be created (tried: a file is created and removed).
    """
    path = Path(path)
    try:
        real = real_target(path)
    except NotARegularFile as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot examine it: {exc.strerror or exc}"
    parent = real.parent
    shown = f"{parent} (where the symbolic link {path} points)" if os.path.islink(path) \
        else f"{parent}"
    if not parent.is_dir():
        return f"directory {shown} does not exist"
    try:  # access() says yes to root, and does not know /proc or a full file system
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{real.name}.", suffix=".probe")
    except OSError as exc:
        return f"cannot create a file in directory {shown}: {exc.strerror or exc}"
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return None


# -- reading -----------------------------------------------------------------------------------


def _is_number(v: object) -> bool:
    """A finite int or float (not a bool); an int beyond the float range is not one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _whole(low: int, high: int) -> Callable[[object], bool]:
    return lambda v: _is_int(v) and low <= v <= high  # type: ignore[operator]


def _seconds(low: float) -> Callable[[object], bool]:
    """A list of seconds, each finite and at least ``low``."""
    return lambda v: isinstance(v, list) and all(_is_number(x) and x >= low for x in v)


def _show(value: object) -> str:
    """A value of the file for a message: JSON, cut to 60 characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        return settings.shown_value(value)
    if isinstance(value, strictjson.Huge):
        return repr(value)
    try:
        return json.dumps(value)[:60]
    except (TypeError, ValueError):
        return f"{value!r:.60}"


class _Checker:
    """Type checks of one parsed file, each failure naming the field: ``results[3].size``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, problem: str) -> ResultsError:
        return ResultsError(f"{self.path}: {problem}")

    def get(self, obj: Mapping[str, Any], key: str, where: str, kind: str,
            test: Callable[[Any], bool], default: Any = ...) -> Any:
        if key not in obj:
            if default is ...:
                raise self.fail(f"{where}{key} is missing")
            return default
        value = obj[key]
        if not test(value):
            raise self.fail(f"{where}{key} must be {kind}, not {_show(value)}")
        return value


def _from_schema_1(doc: dict[str, Any], check: _Checker) -> dict[str, Any]:
    """Schema 1 (figures only: ``kib_per_s``) to schema 2."""
    results = check.get(doc, "results", "", "a list", lambda v: isinstance(v, list))
    out = []
    for i, r in enumerate(results):
        where = f"results[{i}]."
        if not isinstance(r, dict):
            raise check.fail(f"results[{i}] must be an object, not {_show(r)}")
        kib = check.get(r, "kib_per_s", where, "a positive number (of KiB/s, finite in bytes/s)",
                        lambda v: _is_number(v) and v > 0 and math.isfinite(v * KIB))
        algorithm = check.get(r, "algorithm", where, "a string", lambda v: isinstance(v, str))
        alg = catalog.lookup(algorithm)
        default_dir = alg.direction() if alg is not None else "encrypt"
        entry = {k: v for k, v in r.items() if k != "kib_per_s"}
        entry.setdefault("direction", default_dir)
        entry["bytes_per_second"] = kib * KIB
        entry.setdefault("count", 0)
        entry.setdefault("rounds_s", [])
        entry.setdefault("cpu_s", [])
        out.append(entry)
    migrated = dict(doc)
    migrated.update(schema_version=2, results=out, complete=doc.get("complete", True),
                    machine=doc.get("machine", {}), plugins=doc.get("plugins", {}))
    return migrated


#: schema_version -> function turning that version into the next one.
MIGRATIONS: dict[int, Callable[[dict[str, Any], _Checker], dict[str, Any]]] = {1: _from_schema_1}


def _result(r: object, i: int, check: _Checker) -> Result:
    if not isinstance(r, dict):
        raise check.fail(f"results[{i}] must be an object, not {_show(r)}")
    w = f"results[{i}]."
    g = check.get
    is_str = (lambda v: isinstance(v, str) and bool(v))
    opt_str = (lambda v: v is None or isinstance(v, str))
    seconds, cpu = _seconds(MIN_ROUND_S), _seconds(0.0)
    rounds_kind = f"a list of positive seconds (each at least {MIN_ROUND_S:g})"
    result = Result(
        algorithm=g(r, "algorithm", w, "a non-empty string", is_str),
        plugin=g(r, "plugin", w, "a non-empty string", is_str),
        size=g(r, "size", w, f"a whole number of bytes from 1 to {settings.MAX_SIZE}",
               _whole(1, settings.MAX_SIZE)),
        direction=g(r, "direction", w, f"one of {', '.join(DIRECTIONS)}",
                    lambda v: v in DIRECTIONS),
        bytes_per_second=float(g(r, "bytes_per_second", w, "a positive number",
                                 lambda v: _is_number(v) and v > 0)),
        count=g(r, "count", w, f"a whole number from 0 to {MAX_COUNT}", _whole(0, MAX_COUNT)),
        rounds_s=tuple(g(r, "rounds_s", w, rounds_kind, seconds)),
        cpu_s=tuple(g(r, "cpu_s", w, "a list of seconds", cpu, [])),
        canonical_plugin=g(r, "canonical_plugin", w, "a string",
                           lambda v: isinstance(v, str), ""),
        operation=g(r, "operation", w, "a string", lambda v: isinstance(v, str), ""),
        driver=g(r, "driver", w, "a string or null", opt_str, None),
        hardware=g(r, "hardware", w, "true, false or null",
                   lambda v: v is None or isinstance(v, bool), None),
        test=g(r, "test", w, "a string or null", opt_str, None),
        jobs=g(r, "jobs", w, "a whole number from 1", lambda v: _is_int(v) and v >= 1, 1),
        cpu_wait_share=g(r, "cpu_wait_share", w, "a number from 0 to 1 or null",
                         lambda v: v is None or (_is_number(v) and 0 <= v <= 1), None),
        tries=tuple(g(r, "tries", w, "a list of positive numbers",
                      lambda v: isinstance(v, list) and all(_is_number(x) and x > 0 for x in v),
                      [])),
    )
    raw = g(r, "workers", w, "a list of objects",
            lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v), [])
    workers = tuple(_worker(e, f"{w}workers[{k}].", check) for k, e in enumerate(raw))
    if workers and len(workers) != result.jobs:
        raise check.fail(f"{w}workers has {len(workers)} entries but jobs is {result.jobs}")
    if workers and sum(x.count for x in workers) != result.count:
        raise check.fail(f"{w}workers' counts add up to {sum(x.count for x in workers)}, "
                         f"not to count ({result.count})")
    problem = _wait_problem(result)
    if problem:
        raise check.fail(f"results[{i}]: {problem}")
    return replace(result, workers=workers)


def _wait_problem(r: Result) -> str | None:
    """Why the figures of ``r`` without its wait for a CPU (the gate judges those) are not
    finite, or None: the correction divides by the rounds without their wait."""
    rounds = without_wait(r.rounds_s, r.cpu_s, r.cpu_wait_share)
    if rounds is None:
        return None
    what = (f"bytes_per_second {r.bytes_per_second:.6g} without the wait for a CPU "
            f"(cpu_wait_share {r.cpu_wait_share:g} of each round's time beyond its cpu_s)")
    if min(rounds) <= 0:
        return f"{what} would be infinite: a round is left with no time"
    if not all(math.isfinite(f) for f in r.figures_without_wait()):
        return f"{what} is beyond the float range"
    return None


def _worker(e: Mapping[str, Any], where: str, check: _Checker) -> WorkerResult:
    g = check.get
    return WorkerResult(
        count=g(e, "count", where, f"a whole number from 0 to {MAX_COUNT}",
                _whole(0, MAX_COUNT)),
        rounds_s=tuple(g(e, "rounds_s", where,
                         f"a list of positive seconds (each at least {MIN_ROUND_S:g})",
                         _seconds(MIN_ROUND_S))),
        cpu_s=tuple(g(e, "cpu_s", where, "a list of seconds", _seconds(0.0), [])),
        bytes_per_second=float(g(e, "bytes_per_second", where, "a positive number",
                                 lambda v: _is_number(v) and v > 0)),
    )


#: Maps a plugin name as typed to the canonical name (``pyca`` -> ``openssl``).
Canonical = Callable[[str], str]


def parse(doc: object, path: Path, canonical: Canonical | None = None) -> ResultsFile:
    """Check and migrate a decoded results document; :class:`ResultsError` names the problem.

    A result without ``canonical_plugin`` (schema 1, or written by hand) gets
    ``canonical(plugin)``, and a ``plugins`` entry without ``canonical`` the same, so
    that an alias (``pyca``, ``python``, ``openssl-3``) meets the cells of its plugin as
    in a run; ``canonical`` defaults to the built-in plugins' names
    (:func:`pytest_qcrypto.registry.builtin_canonical`).  A name it does not know, or
    one that makes it raise, stays as it is.
    """
    check = _Checker(path)
    if not isinstance(doc, dict):
        raise check.fail(f"not a pytest-qcrypto results file (the top level is a "
                         f"{type(doc).__name__}, not an object)")
    if "schema_version" not in doc:
        raise check.fail("not a pytest-qcrypto results file (no schema_version field)")
    if "format" in doc and doc["format"] != FORMAT:
        raise check.fail(f"not a pytest-qcrypto results file (format {doc['format']!r})")
    version = doc["schema_version"]
    if not _is_int(version) or version < 1:
        raise check.fail(f"schema_version must be a whole number from 1, not {_show(version)}")
    if version > SCHEMA_VERSION:
        raise check.fail(f"schema_version {version} was written by a newer pytest-qcrypto; "
                         f"this one reads schema 1 to {SCHEMA_VERSION} (upgrade pytest-qcrypto)")
    while version < SCHEMA_VERSION:
        doc = MIGRATIONS[version](doc, check)
        version = doc["schema_version"]
    g = check.get
    complete = g(doc, "complete", "", "true or false", lambda v: isinstance(v, bool))
    machine = g(doc, "machine", "", "an object", lambda v: isinstance(v, dict))
    plugins = g(doc, "plugins", "", "an object of objects",
                lambda v: isinstance(v, dict) and all(isinstance(e, dict) for e in v.values()))
    for typed, entry in plugins.items():  # optional: files before it have none
        g(entry, "implementations", f"plugins.{typed}.", "an object of strings",
          lambda v: isinstance(v, dict) and all(isinstance(t, str) for t in v.values()), None)
    raw = g(doc, "results", "", "a list", lambda v: isinstance(v, list))
    name = _canonical_names(canonical or registry.builtin_canonical)
    entries = [_result(r, i, check) for i, r in enumerate(raw)]
    entries = [e if e.canonical_plugin else replace(e, canonical_plugin=name(e.plugin))
               for e in entries]
    plugins = {typed: e if "canonical" in e else {**e, "canonical": name(typed)}
               for typed, e in plugins.items()}
    first: dict[tuple[tuple[str, str, int, str], str | None], int] = {}
    for i, r in enumerate(entries):
        j = first.setdefault((r.key, r.test), i)
        if j != i:  # which of the two would a comparison use?
            alg, plugin, size, direction = r.key
            test = f" of test {r.test}" if r.test else ""
            typed = entries[j].plugin
            names = f" (as {typed} and {r.plugin})" if typed != r.plugin else ""
            raise check.fail(f"results[{i}] repeats results[{j}]: {alg} {plugin} {size} B "
                             f"{direction}{test} is in the file twice{names}; keep one of them")
    huge = strictjson.first_huge(doc)  # in a field no check above reads (machine, ...)
    if huge:
        raise check.fail(f"{huge[0] or 'the document'}: {_show(huge[1])} is out of range: a "
                         f"whole number in a results file has at most {strictjson.MAX_DIGITS} "
                         "digits")
    return ResultsFile(
        results=entries,
        machine=machine, plugins=plugins, complete=complete,
        created=str(doc.get("created", "")),
        settings=doc.get("settings") if isinstance(doc.get("settings"), dict) else {},
        schema_version=doc["schema_version"],
        tool=doc.get("tool") if isinstance(doc.get("tool"), dict) else {},
        machine_state=g(doc, "machine_state", "", "an object or null",
                        lambda v: v is None or isinstance(v, dict), None),
        path=path)


def _canonical_names(canonical: Canonical) -> Canonical:
    """``canonical`` asked once per name; a name it cannot map (it raises) stays as it is."""
    known: dict[str, str] = {}

    def name(typed: str) -> str:
        if typed not in known:
            try:
                found = canonical(typed)
            except Exception:
                found = typed
            known[typed] = found if isinstance(found, str) and found else typed
        return known[typed]

    return name


def load(path: Path, canonical: Canonical | None = None) -> ResultsFile:
    """Read a results file of any known schema.

    Raises :class:`ResultsError` naming the file and the problem: missing,
    unreadable, not JSON, a key given twice in one object, not ours, another
    schema, a field of the wrong type or out of range (``results[3].size``), figures
    that overflow once the wait for a CPU is taken out.  ``canonical`` maps plugin
    names as typed to canonical ones (see :func:`parse`).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ResultsError(f"{path}: is a directory, not a results file") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not raw.strip():
        raise ResultsError(f"{path}: not JSON (the file is empty)")
    try:
        doc = strictjson.loads(raw.decode("utf-8"))
    except strictjson.DuplicateKey as exc:
        raise ResultsError(f"{path}: the key {_show(exc.key)} is given twice in one object; "
                           "JSON readers differ on which counts, so keep one") from None
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{path}: not JSON (not UTF-8 text: {exc.reason} at byte "
                           f"{exc.start})") from None
    except json.JSONDecodeError as exc:
        # some of json's messages end in "at" ("Unterminated string starting at")
        where = f"{exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}"
        cut = exc.msg.startswith("Unterminated") or exc.pos >= len(exc.doc.rstrip())
        raise ResultsError(f"{path}: not JSON ({where})"
                           + ("; the file ends too early: was it cut off?" if cut else "")
                           ) from None
    except RecursionError:
        raise ResultsError(f"{path}: not a usable JSON document (nested too deeply)") from None
    except ValueError as exc:  # from a number, such as int()'s limit of 4300 digits
        raise ResultsError(f"{path}: not a usable JSON document ({str(exc)[:100]})") from None
    return parse(doc, path, canonical)
