"""A history of runs: results files in one folder, read back as one series per cell.

``--qcrypto-history=DIR`` adds each finished run's results file to ``DIR`` under
:func:`entry_name`, ``20261203T180122Z-4affb20c9e1d-dirty-3fa9c1.json``: the UTC time the
file was created (so that names sort by time), the first 12 hex digits of the git commit
measured (``nocommit`` outside a checkout), ``-dirty`` when tracked files had changes, and
6 random hex digits so that two runs in one second never collide.  The folder is the whole
history: commit it, or keep it as a CI artifact.

:func:`read` loads every ``*.json`` file of a folder (strictly, as
:func:`pytest_qcrypto.results.store.load`), oldest first, and lists the files it could not
read with the reason (:attr:`History.unreadable`): they are skipped, never dropped silently.
Each cell (algorithm, canonical plugin, size or operation, direction, jobs, threads) of each
machine is one :class:`Series` of :class:`Point` figures, one per run that measured it: the
median round's figure in KiB/s (1 KiB = 1024 bytes), or ops/s for a cell without a buffer
size, with the figures of its slowest and fastest rounds.  Runs from different machines
(:func:`machine_id`: CPU model, architecture, logical CPUs and crypto CPU flags) are never
mixed in one series; the kernel, libc, Python and library versions may change along a series
and are listed where they do (:func:`version_changes`).  Counted results
(``--qcrypto-measure=instructions``) and those of failed tests are left out, and counted; so
are the runs saved ``"complete": false`` (interrupted: :data:`INCOMPLETE`).
Nothing here imports pytest.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import statistics
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_qcrypto.results import files, store
from pytest_qcrypto.results.model import ResultsFile

#: A cell: (algorithm, canonical plugin, size in bytes (0: size-less), direction or
#: operation, jobs, threads).
CellKey = tuple[str, str, int, str, int, int]
#: The fingerprint fields that name a machine (the others are versions, see module doc).
MACHINE_FIELDS = ("cpu_model", "architecture", "cores", "cpu_flags")
#: The fingerprint fields that may change along a series, listed at a step.
VERSION_FIELDS = ("kernel", "libc", "python", "os")
#: Files at least this many are read by a pool of processes (one per CPU).
POOL_FROM = 64


def entry_name(doc: ResultsFile, created: str, token: str | None = None) -> str:
    """The file name of a run in a history folder (module doc); ``created`` is the file's
    ``created`` time (``2026-12-03T18:01:22Z``), ``token`` 6 hex digits (random when None)."""
    stamp = created.replace("-", "").replace(":", "")
    source = doc.source or {}
    commit = str(source.get("git_commit") or "")[:12] or "nocommit"
    dirty = "-dirty" if source.get("git_dirty") else ""
    return f"{stamp}-{commit}{dirty}-{token or secrets.token_hex(3)}.json"


def add(folder: Path, doc: ResultsFile) -> Path:
    """Write ``doc`` into the history ``folder`` (created if missing) under
    :func:`entry_name`, atomically (:func:`.files.write_atomic`); the path written.
    Raises ``OSError``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    created = doc.created or store.now_utc()
    doc.created = created
    path = folder / entry_name(doc, created)
    files.write_atomic(path, json.dumps(doc.to_json(), indent=1) + "\n")
    return path


def check_folder(folder: Path) -> str | None:
    """Why ``folder`` cannot take a history entry, or None (checked before a run starts):
    it exists and is not a directory, or no file can be created in it or in the nearest
    folder above it that exists."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return "it exists and is not a directory"
    probe = folder
    while not probe.exists():
        probe = probe.parent
    problem = files.check_writable(probe / ".qcrypto-history-probe")
    return problem


def machine_id(machine: dict[str, Any]) -> str:
    """12 hex digits naming the machine of a fingerprint by :data:`MACHINE_FIELDS` (SHA-256
    of their JSON); files without a fingerprint share one id."""
    picked = {k: machine.get(k) for k in MACHINE_FIELDS}
    return hashlib.sha256(json.dumps(picked, sort_keys=True).encode()).hexdigest()[:12]


def machine_label(machine: dict[str, Any]) -> str:
    """``Intel(R) Xeon(R) ... x86_64, 2 CPUs`` (``unknown machine`` without a fingerprint)."""
    model = machine.get("cpu_model")
    if not model:
        return "unknown machine"
    return f"{model} {machine.get('architecture', '')}, {machine.get('cores', '?')} CPUs"


@dataclass(frozen=True)
class Run:
    """One results file of a history: its file name, ``created`` time (UTC, ISO 8601), git
    commit (full hash, "" unknown) and dirty flag (None unknown), tool version, each
    canonical plugin's library version, the machine's fingerprint and id."""

    name: str
    created: str
    commit: str
    dirty: bool | None
    tool: str
    versions: dict[str, str]
    machine: dict[str, Any]
    machine_id: str

    @property
    def short(self) -> str:
        """``4affb20c9e1d`` (``+dirty``), or the file name without a commit."""
        if not self.commit:
            return self.name
        return self.commit[:12] + ("+dirty" if self.dirty else "")


@dataclass(frozen=True, slots=True)  # a history holds one per run and cell: 300,000
class Point:
    """One run's figure of a cell: ``run`` indexes :attr:`History.runs`; ``figure`` the
    median round's, ``low`` and ``high`` its slowest and fastest round's (KiB/s, or ops/s
    for a size-less cell); ``log_se`` the standard error of the mean of the rounds' natural
    logarithms (0 with one round): the point's own spread."""

    run: int
    figure: float
    low: float
    high: float
    log_se: float


@dataclass
class Series:
    """A cell's figures over the runs of one machine, oldest first."""

    key: CellKey
    machine: str
    machine_label: str
    points: list[Point] = field(default_factory=list)

    @property
    def unit(self) -> str:
        return "KiB/s" if self.key[2] > 0 else "ops/s"

    @property
    def label(self) -> str:
        """``sha256 openssl 4096 B digest`` (``ed25519 openssl sign``; ``, 4 jobs``)."""
        algorithm, plugin, size, direction, jobs, threads = self.key
        words = [algorithm, plugin] + ([f"{size} B"] if size else []) + [direction]
        extra = ([f"{jobs} jobs"] if jobs > 1 else []) + ([f"{threads} threads"]
                                                         if threads > 1 else [])
        return " ".join(words) + (f", {', '.join(extra)}" if extra else "")


@dataclass
class History:
    """The runs of a folder (oldest first), the series of every cell, and the files left out
    (``unreadable``: path and why; ``left_out``: what was not taken and how many)."""

    runs: list[Run] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)


def _point(r: store.Result, run: int) -> Point:
    rounds = [x for x in r.rounds_s if x > 0]
    figure = r.figure
    if not rounds:
        return Point(run, figure, figure, figure, 0.0)
    median = statistics.median(rounds)
    logs = [math.log(median / x) for x in rounds]
    se = statistics.stdev(logs) / math.sqrt(len(logs)) if len(logs) > 1 else 0.0
    return Point(run, figure, figure * median / max(rounds), figure * median / min(rounds), se)


#: The status of a results file saved ``"complete": false`` (an interrupted run): left out,
#: and counted in :attr:`History.left_out` under this name.
INCOMPLETE = 'incomplete runs ("complete": false: interrupted, their cells not all measured)'


def _extract(path: str) -> tuple[str, Any]:
    """One file as ``("ok", (run fields, cells, left out))``, ``("bad", why)`` or
    ``(INCOMPLETE, None)``: what a pool process sends back (small: no :class:`ResultsFile`)."""
    try:
        doc = store.load(Path(path))
    except store.ResultsError as exc:
        return "bad", str(exc).removeprefix(f"{path}: ")
    except Exception as exc:  # a file must never stop the others from being read
        return "bad", f"{type(exc).__name__}: {exc}"
    if not doc.complete:  # an interrupted run: its cells were never all measured
        return INCOMPLETE, None
    source = doc.source or {}
    versions = {str(e.get("canonical", typed)): str(e.get("version", ""))
                for typed, e in doc.plugins.items()}
    run = (Path(path).name, doc.created, str(source.get("git_commit") or ""),
           source.get("git_dirty"), str(doc.tool.get("version", "")), versions,
           dict(doc.machine))
    cells: dict[CellKey, tuple[float, float, float, float]] = {}
    left: dict[str, int] = {}
    for r in doc.results:
        if r.instructions is not None:
            left["counted results (instructions, not times)"] = left.get(
                "counted results (instructions, not times)", 0) + 1
            continue
        if r.outcome:
            left["results of failed tests"] = left.get("results of failed tests", 0) + 1
            continue
        key = (r.algorithm, r.canonical_plugin or r.plugin, r.size, r.direction, r.jobs,
               r.threads)
        if key not in cells:  # two tests of one cell: the first
            p = _point(r, 0)
            cells[key] = (p.figure, p.low, p.high, p.log_se)
    return "ok", (run, cells, left)


def _parse_since(since: str | None) -> str:
    """``--since`` as the ``created`` text it is compared with (``2026-12-01T00:00:00Z``);
    ``ValueError`` naming the forms it takes."""
    if not since:
        return ""
    try:
        when = datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"--since: {since!r} is not a date (write 2026-12-01 or "
                         "2026-12-01T08:00:00Z, UTC)") from None
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc).replace(tzinfo=None)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def read(folder: Path, since: str | None = None, processes: int | None = None) -> History:
    """Every results file of ``folder`` as a :class:`History` (module doc), oldest first by
    ``created`` (:func:`assemble`); ``since`` (ISO 8601 date or time, UTC) leaves older runs out.

    Raises ``ValueError`` for a bad ``since`` and ``OSError`` when ``folder`` cannot be
    listed (``NotADirectoryError``, ``FileNotFoundError``).  From :data:`POOL_FROM` files
    they are read by ``processes`` processes (default: one per CPU).
    """
    after = _parse_since(since)
    folder = Path(folder)
    names = sorted(p for p in os.listdir(folder) if p.endswith(".json"))
    paths = [str(folder / n) for n in names]
    workers = processes or os.cpu_count() or 1
    if len(paths) >= POOL_FROM and workers > 1:
        with ProcessPoolExecutor(workers) as pool:  # taken in as they come, in order
            return assemble(zip(paths, pool.map(_extract, paths, chunksize=8)), after)
    return assemble(zip(paths, map(_extract, paths)), after)


def assemble(extracted: Iterable[tuple[str, tuple[str, Any]]], after: str = "") -> History:
    """The :class:`History` of files already read (:func:`_extract`), oldest first by their
    ``created`` time (file name for equal times: a file copied in under another name still
    takes its place by time)."""
    out = History()
    by_cell: dict[tuple[CellKey, str], Series] = {}

    def created_of(item: tuple[str, tuple[str, Any]]) -> tuple[str, str]:
        path, (status, value) = item
        return ((value[0][1] or "") if status == "ok" else "", path)
    for path, (status, value) in sorted(extracted, key=created_of):
        if status == "bad":
            out.unreadable.append((path, value))
            continue
        if status == INCOMPLETE:
            out.left_out[INCOMPLETE] = out.left_out.get(INCOMPLETE, 0) + 1
            continue
        fields_, cells, left = value
        name, created, commit, dirty, tool, versions, machine = fields_
        if after and created and created < after:
            out.left_out["runs before --since"] = out.left_out.get("runs before --since", 0) + 1
            continue
        ident = machine_id(machine)
        out.runs.append(Run(name, created, commit, dirty, tool, versions, machine, ident))
        index = len(out.runs) - 1
        for what, n in left.items():
            out.left_out[what] = out.left_out.get(what, 0) + n
        for key, (figure, low, high, se) in cells.items():
            series = by_cell.get((key, ident))
            if series is None:
                series = by_cell[(key, ident)] = Series(key, ident, machine_label(machine))
                out.series.append(series)
            series.points.append(Point(index, figure, low, high, se))
    return out


def version_changes(before: Run, after: Run, plugin: str) -> list[str]:
    """What changed between two runs of a series besides the commit: the plugin's library
    version, the tool's, and :data:`VERSION_FIELDS` of the fingerprint, as
    ``openssl: OpenSSL 3.0.2 -> OpenSSL 3.0.13``."""
    out = []
    old, new = before.versions.get(plugin), after.versions.get(plugin)
    if old != new and (old or new):
        out.append(f"{plugin}: {old or '?'} -> {new or '?'}")
    if before.tool != after.tool:
        out.append(f"pytest-qcrypto: {before.tool or '?'} -> {after.tool or '?'}")
    for name in VERSION_FIELDS:
        a, b = before.machine.get(name), after.machine.get(name)
        if a != b:
            out.append(f"{name}: {a or '?'} -> {b or '?'}")
    return out


def runs_of(history: History, series: Series) -> Sequence[Run]:
    """The runs of ``series``' points, in order."""
    return [history.runs[p.run] for p in series.points]
