"""Saved results: the JSON file format, its migrations, loading and saving.

A results file is one JSON object.  Its field names are public (CI scripts and
dashboards read them) and only change with ``schema_version``::

    {
      "format": "pytest-qcrypto results",
      "schema_version": 2,
      "complete": true,                 # false: the run was interrupted or stopped early
      "created": "2026-11-29T21:30:00Z",  # UTC, ISO 8601
      "tool": {"name": "pytest-qcrypto", "version": "0.1.0"},
      "settings": {"min_time_s": 0.1, "rounds": 3},  # (+ "cycle_rate" under cpb: cycles.py)
      "machine": {                      # the fingerprint, see machine.fingerprint
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
      "machine_state": {"load": [0.1, 0.2, 0.2], ...},  # optional, see machine.py
      "source": {"git_commit": "4affb20...", "git_dirty": false}  # optional: source_tree.py
    }

``bytes_per_second`` is ``count * size`` over the median of ``rounds_s``
(seconds of wall time per round): the figure a regression gate compares.
:func:`load` recomputes it (and each worker's) from the rounds and refuses a
stored figure that differs by more than rounding (``FIGURE_RTOL``, ``FIGURE_ATOL``).
``count`` is iterations: for ``direction`` ``roundtrip`` (else ``digest``, ``encrypt``,
``decrypt``, ``mac``) two operations each, so ``2 * count * size`` as cryptotest counts.
``iv`` (optional): the hex cipher IV or first AEAD nonce (never the key).
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
``count``.  ``threads``, ``one_thread_bytes_per_second``: :mod:`pytest_qcrypto.measure.threads`.
A cell appears once per ``test`` (two tests may measure the same cell; a
test that measures it again replaces its entry): :func:`load` refuses a file
that repeats (algorithm, canonical plugin, size, direction) for the same test.
``reference_s`` (optional, one per round) are the CPU seconds of the reference workload
timed right after each round (:mod:`pytest_qcrypto.measure.reference`); the gate judges
rounds against them (:mod:`pytest_qcrypto.gate.drift`); a file without them loads and is
judged by the clock alone.
``spread_s`` (optional, seconds, default 0) is the time its rounds spanned when they were
taken in turn with the other cells of the run (:mod:`pytest_qcrypto.measure.spread`); the
gate judges two such sides by their slow phase (:mod:`pytest_qcrypto.gate.spread`).
``tries`` (optional) lists ``bytes_per_second`` of every try when the gate measured a
cell again; ``verdict`` (optional) its decision against a baseline and its statistic
(:meth:`.gate_stats.TestResult.record`).  ``outcome`` (optional): ``"failed"`` when
the test that measured it failed or errored afterwards; never used as a baseline.  ``machine_state`` (optional) is the load and
clock state when measuring started: it differs between identical runs (not fingerprint).

Schema 1 is the figures-only form: ``schema_version``, optional ``machine``,
and ``results`` whose entries carry ``algorithm``, ``plugin``, ``size``,
optional ``direction`` and ``kib_per_s`` (1 KiB = 1024 bytes), as one would
type in from a ``qcrypto speed`` table.  :func:`load` migrates it to schema 2.

:func:`load` refuses, naming the field (``results[3].size``), what no run
writes and what would break arithmetic downstream: a key given twice in one
object, a whole number of more than 20 digits anywhere
(:mod:`pytest_qcrypto.results.strictjson`), a ``size`` over 256 MiB, a ``count``
over 2**53, a round under a nanosecond, a figure that is not finite or
becomes infinite once the wait for a CPU is taken out.  A plugin written as
an alias (``pyca``) without ``canonical_plugin`` gets its canonical name.

The model (:class:`Result`, :class:`ResultsFile`) is in
:mod:`pytest_qcrypto.results.model`.  Files are written atomically
(:func:`pytest_qcrypto.results.files.write_atomic`): a reader sees the old file or the
whole new one, never a truncated one.  Nothing here imports pytest.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.results import files
from pytest_qcrypto.measure import registry
from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.results import source_tree, strictjson
from pytest_qcrypto.measure.harness import KIB
from pytest_qcrypto.results.model import (  # noqa: F401 (the model, re-exported)
    DIRECTIONS, FORMAT, MAX_COUNT, MAX_ROUND_S, MIN_ROUND_S, SCHEMA_VERSION, Result, ResultsError,
    ResultsFile, WorkerResult, now_utc, plugin_entries, without_wait)
# file safety and the fingerprint live in files.py and machine.py; re-exported for old callers
from pytest_qcrypto.results.files import (  # noqa: F401
    NotARegularFile, check_writable, partial_path, real_target, write_atomic)
from pytest_qcrypto.measure.machine import fingerprint, machine_differences  # noqa: F401
from pytest_qcrypto.results import counted
from pytest_qcrypto.results.check import (  # noqa: F401 (the checks of a file's fields)
    _Checker, _is_int, _is_number, _seconds, _show, _whole, created_of, settings_of)


# -- writing -----------------------------------------------------------------------------------


def save(path: Path, results: ResultsFile) -> Path:
    """Write ``results`` to ``path`` atomically and return where it went.

    An incomplete run never replaces an existing file: it goes to
    ``PATH.partial`` (:func:`partial_path`) instead.  Raises ``OSError``.
    """
    path = Path(path)
    target = path if results.complete or not path.exists() else partial_path(path)
    write_atomic(target, json.dumps(results.to_json(), indent=1) + "\n")
    return target


# -- reading -----------------------------------------------------------------------------------


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
    # a size-less algorithm (signature, KEM, KDF...): size 0, one of its operations, ops/s
    alg = catalog.lookup(r["algorithm"]) if isinstance(r.get("algorithm"), str) else None
    sizeless = alg is not None and not alg.rules.sized
    directions = [str(d) for d in alg.directions] if sizeless and alg else DIRECTIONS
    figure = "ops_per_s" if sizeless else "bytes_per_second"
    if sizeless:
        g(r, "unit", w, "ops/s", lambda v: v == "ops/s", "ops/s")
    fields = dict(
        algorithm=g(r, "algorithm", w, "a non-empty string", is_str),
        plugin=g(r, "plugin", w, "a non-empty string", is_str),
        size=g(r, "size", w, f"a whole number of bytes from 1 to {settings.MAX_SIZE}" + (
            ", or 0 for an algorithm without a buffer size" if sizeless else ""),
               _whole(0 if sizeless else 1, 0 if sizeless else settings.MAX_SIZE)),
        direction=g(r, "direction", w, f"one of {', '.join(directions)}",
                    lambda v: v in directions),
        bytes_per_second=float(g(r, figure, w, "a positive number",
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
        iv=g(r, "iv", w, "a string of hex digits", lambda v: isinstance(v, str)
             and len(v) <= 128 and len(v) % 2 == 0 and not v.strip("0123456789abcdef"), ""),
        verdict=g(r, "verdict", w, "an object", lambda v: isinstance(v, dict), None) or None,
        threads=g(r, "threads", w, "a whole number from 1", lambda v: _is_int(v) and v >= 1, 1),
        one_thread_bytes_per_second=g(r, "one_thread_bytes_per_second", w, "a positive number",
                                      lambda v: _is_number(v) and v > 0, None),
        reference_s=tuple(g(r, "reference_s", w, "a list of seconds, one per round", cpu, [])),
        spread_s=g(r, "spread_s", w, "a number of seconds from 0",
                   lambda v: _is_number(v) and v >= 0, 0.0),
        outcome=g(r, "outcome", w, '"passed" or "failed"', lambda v: v in ("passed", "failed"),
                  "").replace("passed", ""),
    )
    raw = g(r, "workers", w, "a list of objects",
            lambda v: isinstance(v, list) and all(isinstance(e, dict) for e in v), [])
    workers = tuple(_worker(e, f"{w}workers[{k}].", check) for k, e in enumerate(raw))
    count, jobs, threads = fields["count"], fields["jobs"], fields["threads"]
    if workers and len(workers) != jobs * threads:  # one of them is 1
        what = f"threads is {threads}" if threads > 1 else f"jobs is {jobs}"
        raise check.fail(f"{w}workers has {len(workers)} entries but {what}")
    if workers and sum(x.count for x in workers) != count:
        raise check.fail(f"{w}workers' counts add up to {sum(x.count for x in workers)}, "
                         f"not to count ({count})")
    rounds_s, reference_s = fields["rounds_s"], fields["reference_s"]
    if reference_s and len(reference_s) != len(rounds_s):
        raise check.fail(f"{w}reference_s has {len(reference_s)} entries, rounds_s "
                         f"{len(rounds_s)}: one reference time follows each round")
    if count and not rounds_s:
        raise check.fail(f"{w}rounds_s is empty, but count is {count}: a result "
                         "records the seconds of each round it timed")
    per_iteration = catalog.OPERATIONS_PER_ITERATION.get(fields["direction"], 1)
    size = fields["size"]
    # every figure is the one its rounds give (as report and the current side compute it);
    # the Result is built once, with them (a frozen dataclass's constructor is not cheap)
    fields["bytes_per_second"] = _recomputed(fields["bytes_per_second"], count * per_iteration,
                                             size, rounds_s, f"{w}{figure}", check)
    result = Result(**fields, workers=tuple(replace(x, bytes_per_second=_recomputed(
        x.bytes_per_second, x.count * per_iteration, size, x.rounds_s,
        f"{w}workers[{k}].bytes_per_second", check)) for k, x in enumerate(workers)),
        instructions=counted.parse(r, w, size, check))
    problem = result.wait_problem()
    if problem:
        raise check.fail(f"results[{i}]: {problem}")
    return result


#: How far a saved figure may be from the one its rounds give: rounding (a millionth, or
#: half the last of the two decimals the tables show, in KiB/s or ops/s).
FIGURE_RTOL, FIGURE_ATOL = 1e-6, 0.005


def _recomputed(stored: float, operations: int, size: int, rounds_s: tuple[float, ...],
                where: str, check: _Checker) -> float:
    """The figure of ``operations`` of ``size`` bytes (0: size-less, per operation) over the
    median of ``rounds_s``; ``stored`` when there are none (schema 1, figures only).  A
    ``stored`` figure further from it than rounding is refused, naming ``where``."""
    if not operations or not rounds_s:
        return stored
    figure = operations * (size or 1) / statistics.median(rounds_s)
    if not math.isclose(stored, figure, rel_tol=FIGURE_RTOL,
                        abs_tol=FIGURE_ATOL * (KIB if size else 1)):
        raise check.fail(f"{where} is {stored:.6g}, but count and rounds_s give {figure:.6g} "
                         "(the median round's); a saved figure must match its rounds: "
                         "remeasure the cell")
    return figure


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
    (:func:`pytest_qcrypto.measure.registry.builtin_canonical`).  A name it does not know, or
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
    _check_unique(entries, check)
    huge = strictjson.first_huge(doc)  # in a field no check above reads (machine, ...)
    if huge:
        raise check.fail(f"{huge[0] or 'the document'}: {_show(huge[1])} is out of range: a "
                         f"whole number in a results file has at most {strictjson.MAX_DIGITS} "
                         "digits")
    return ResultsFile(
        results=entries, machine=machine, plugins=plugins, complete=complete,
        created=created_of(doc, check), schema_version=doc["schema_version"],
        settings=settings_of(doc, check),
        tool=doc.get("tool") if isinstance(doc.get("tool"), dict) else {},
        machine_state=g(doc, "machine_state", "", "an object or null",
                        lambda v: v is None or isinstance(v, dict), None),
        source=g(doc, "source", "", source_tree.WHAT, source_tree.valid, None),
        path=path)


def _check_unique(entries: list[Result], check: _Checker) -> None:
    """Refuse a cell given twice for the same test: which would a comparison use?"""
    first: dict[tuple[tuple[str, str, int, str], str | None], int] = {}
    for i, r in enumerate(entries):
        j = first.setdefault((r.key, r.test), i)
        if j != i:
            alg, plugin, size, direction = r.key
            test = f" of test {r.test}" if r.test else ""
            typed = entries[j].plugin
            names = f" (as {typed} and {r.plugin})" if typed != r.plugin else ""
            raise check.fail(f"results[{i}] repeats results[{j}]: {alg} {plugin} {size} B "
                             f"{direction}{test} is in the file twice{names}; keep one of them")


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
        raw = files.read_regular(path)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file") from None
    except (IsADirectoryError, files.NotARegularFile, ValueError) as exc:
        raise ResultsError(f"{path}: not a results file: {exc}".replace(f": {path} ", ": ")) \
            from None
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
