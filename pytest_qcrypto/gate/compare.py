"""Baselines joined from several files, and the line of a comparison that judged nothing.

``--qcrypto-compare`` may be given once per sharded CI job's file: :func:`join` makes one
baseline of them (:class:`Baselines`), in which each cell remembers the file it came
from (:meth:`Baselines.origin`), so that it is judged against its own file's machine
and library versions.  The same cell and test in two files is refused: which figure
would count?  :func:`nothing_judged` is the line that fails a comparison in which no
measured cell had a baseline entry (a typo in the algorithms asked for, a renamed
plugin, ``-k``): a gate that judged nothing must not pass.

Plain Python: never measures, never imports pytest.  Used by
:mod:`pytest_qcrypto.pytest_side.gate` (a pytest run) and :mod:`pytest_qcrypto.commands.compare`
(``qcrypto compare``, two saved files).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.results import store as results
from pytest_qcrypto.algorithms.catalog import plural
from pytest_qcrypto.gate.verdicts import BaselineIndex, CellKey, Verdict
from pytest_qcrypto.results.store import Result, ResultsFile
from pytest_qcrypto.algorithms.settings import SettingsError

#: How many of the baseline's cells :func:`nothing_judged` names.
NEAREST = 3


class Baselines(BaselineIndex):
    """One baseline made of the results of ``files`` (in order), as :class:`BaselineIndex`.

    :attr:`file` is their join (the results of every file; the first file's machine,
    creation time and path; every file's plugins); :attr:`files` the files themselves.
    ``now`` is the machine fingerprint judged (default: this machine's,
    :func:`results.fingerprint`).
    """

    def __init__(self, files: Sequence[ResultsFile],
                 now: Mapping[str, Any] | None = None) -> None:
        if not files:
            raise ValueError("Baselines: no files")
        self.files = list(files)
        first = self.files[0]
        plugins: dict[str, dict] = {}
        for f in self.files:
            for typed, entry in f.plugins.items():
                plugins.setdefault(typed, entry)
        every = [r for f in self.files for r in f.results]
        #: results whose test failed (or errored) after measuring: never used as a baseline
        self.failed = [r for r in every if r.outcome]
        joined = ResultsFile([r for r in every if not r.outcome], machine=first.machine,
                             plugins=plugins, complete=all(f.complete for f in self.files),
                             created=first.created, settings=first.settings, path=first.path)
        super().__init__(joined)
        self._origin = {id(r): f for f in self.files for r in f.results}
        self._machines: dict[int, list[str]] = {}
        self._now = now

    def origin(self, result: Result) -> ResultsFile:
        """The file a baseline result came from."""
        return self._origin.get(id(result), self.files[0])

    # -- how this machine differs from each file's ---------------------------------------

    def machine_of(self, f: ResultsFile) -> list[str]:
        """How the machine judged (``now``) differs from the one that wrote
        baseline file ``f``: ``cores: 2 (baseline) vs 8 (now)`` per field."""
        if id(f) not in self._machines:
            if self._now is None:
                self._now = results.fingerprint()
            self._machines[id(f)] = results.machine_differences(f.machine, self._now)
        return self._machines[id(f)]

    def machine_differences(self) -> list[str]:
        """Each field of this machine that differs from the baseline's; with several files
        whose differences are not the same, each file's, followed by its path."""
        each = [self.machine_of(f) for f in self.files]
        if all(diffs == each[0] for diffs in each):
            return list(each[0])
        return [f"{d} ({f.path})" for f, diffs in zip(self.files, each) for d in diffs]

    def library_of(self, f: ResultsFile, typed: str, canonical: str,
                   version: Callable[[str], str | None], named: bool = False) -> str:
        """``openssl: 'OpenSSL 3.0.2 ...' (baseline) vs '...' (now)`` when the version of
        ``canonical`` in file ``f`` is not ``version(typed)`` (the one judged; None: not
        known, no difference), else empty;
        ``named``: the file is named (``(baseline b.json)``)."""
        entry = f.plugin_entry(canonical)
        if entry is None or "version" not in entry:
            return ""
        now = version(typed)
        where = f"baseline {f.path}" if named else "baseline"
        return "" if now is None or entry["version"] == now else \
            f"{typed}: {entry['version']!r} ({where}) vs {now!r} (now)"

    def library_difference(self, typed: str, canonical: str,
                           version: Callable[[str], str | None]) -> str:
        """:meth:`library_of` for each file (named when there are several), joined by ``; ``."""
        named = len(self.files) > 1
        return "; ".join(text for f in self.files
                         if (text := self.library_of(f, typed, canonical, version, named)))

    def differences(self, base: Result, typed: str, canonical: str,
                    version: Callable[[str], str | None]) -> list[str]:
        """How the machine and the library judged differ from those of the file ``base``
        came from, by field: ``["cpu_model", "openssl version"]`` (for
        ``--qcrypto-require-same-machine``)."""
        f = self.origin(base)
        diffs = [d.partition(":")[0] for d in self.machine_of(f)]
        if self.library_of(f, typed, canonical, version):
            diffs.append(f"{typed} version")
        return diffs

    @property
    def label(self) -> str:
        """The files' paths, for the change grid's title: ``base.json`` or ``a.json, b.json``."""
        return ", ".join(str(f.path) for f in self.files)


def unusable(doc: ResultsFile) -> str:
    """Why a results file cannot be judged or judged against (empty: it can): a run that
    did not finish, or one that measured nothing (every item would pass)."""
    if not doc.complete:
        return ("the run that wrote it did not finish (\"complete\": false); save a complete "
                "run to compare against")
    if not doc.results:
        return ("no results (the run that wrote it measured nothing, so every item would "
                "pass); save a run that measured the cells to compare")
    return ""


def join(files: Sequence[ResultsFile], names: Sequence[str]) -> Baselines:
    """:class:`Baselines` of ``files`` (``names`` as the user typed them, for messages).

    Raises :class:`SettingsError` (``--qcrypto-compare: a.json and b.json both have
    sha256 openssl 16 B digest of test ...``) when two files have the same cell for
    the same test.
    """
    first: dict[tuple[CellKey, str | None], int] = {}
    for i, f in enumerate(files):
        for r in f.results:
            j = first.setdefault((r.key, r.test), i)
            if j != i:
                alg, plugin, size, direction = r.key
                test = f" of test {r.test}" if r.test else ""
                raise SettingsError(
                    f"--qcrypto-compare: {names[j]} and {names[i]} both have {alg} {plugin} "
                    f"{size} B {direction}{test}: which would count? Give each cell of a "
                    "test in one baseline file only (leave one file out, or save the "
                    "shards with different cells)")
    return Baselines(files)


def cell_text(key: CellKey) -> str:
    """``sha256 openssl 16 B digest``: a cell key in words; a size-less cell (size 0) by its
    operation alone: ``argon2id-m1024-t1-p1 openssl derive``."""
    alg, plugin, size, direction = key
    return f"{alg} {plugin} {size} B {direction}" if size else f"{alg} {plugin} {direction}"


def nearest(measured: Iterable[CellKey], baseline: Sequence[CellKey],
            n: int = NEAREST) -> list[CellKey]:
    """The ``n`` cells of ``baseline`` most like any ``measured`` cell (difflib's ratio of
    ``algorithm plugin size direction``), best first; the first ``n`` without any."""
    texts = [cell_text(k) for k in measured]
    cells = list(dict.fromkeys(baseline))
    if not texts:
        return cells[:n]

    def likeness(cell: CellKey) -> float:
        matcher = difflib.SequenceMatcher(b=cell_text(cell), autojunk=False)
        best = 0.0
        for text in texts:
            matcher.set_seq1(text)
            best = max(best, matcher.ratio())
        return best

    return sorted(cells, key=likeness, reverse=True)[:n]


def nothing_judged(baselines: Baselines | BaselineIndex, measured: Sequence[CellKey],
                   why_none: str = "") -> str:
    """The line that fails a comparison in which none of the ``measured`` cells (plugin as
    typed) had a baseline entry; ``why_none`` says why nothing was measured (if so)."""
    files = getattr(baselines, "files", [baselines.file])
    named = ", ".join(str(f.path) for f in files)
    where = f"the baseline{'s' if len(files) > 1 else ''} {named}"
    cells = [(r.algorithm, r.plugin, r.size, r.direction) for r in baselines.file.results]
    near = "; ".join(cell_text(k) for k in nearest(measured, cells))
    if measured:
        what = (f"none of the {plural(len(measured), 'cell')} measured has an entry in "
                f"{where}; nearest baseline cells: {near}")
    else:
        what = (f"no cell was measured{' (' + why_none + ')' if why_none else ''}, so "
                f"nothing was compared with {where}; it has: {near}")
    return (f"ERROR: qcrypto: nothing was judged: {what}; a comparison that judges nothing "
            "fails (check the algorithms, plugins and sizes asked for, or save a new baseline)")


def all_missing(verdicts: Mapping[CellKey, Verdict], gone: Mapping[CellKey, str],
                allowed: bool) -> str | None:
    """The line that fails a comparison in which every cell with a baseline entry was skipped
    now (``gone``: cell -> reason; ``allowed``: by ``--qcrypto-allow-missing``), so none was
    judged; None when a cell was judged or none was skipped."""
    if not gone or any(v.status not in (gate.NOT_JUDGED, gate.NEW) for v in verdicts.values()):
        return None
    n = len(gone)
    why = "; ".join(sorted(set(gone.values())))
    with_entry = f"the {n} cell{'s' if n > 1 else ''} with a baseline entry"
    verb = "were" if n > 1 else "was"
    return (f"ERROR: qcrypto: nothing was judged: {with_entry} {verb} skipped now ("
            f"{'allowed by --qcrypto-allow-missing: ' if allowed else ''}{why}); a comparison "
            "that judges nothing fails (install what the skip names, or save a new baseline)")


def none_judged(verdicts: Mapping[CellKey, Verdict]) -> str | None:
    """The line that fails a comparison whose cells had baseline entries of which none could
    be judged (another machine under ``--qcrypto-require-same-machine``, other
    ``--qcrypto-jobs``); None when one was judged, or when no cell had an entry."""
    statuses = {v.status for v in verdicts.values()}
    if gate.CANNOT_TELL in statuses and not statuses - {gate.CANNOT_TELL, gate.NOT_JUDGED,
                                                         gate.NEW}:
        n = sum(v.status == gate.CANNOT_TELL for v in verdicts.values())
        return (f"ERROR: qcrypto: nothing could be told: for each of the {plural(n, 'cell')} "
                "judged the noise band on this machine is wider than the threshold, or the "
                "cell's peers moved with it, which is not a pass (more --qcrypto-rounds, a quieter runner, "
                "--qcrypto-measure=instructions, or an A/B run with --qcrypto-target)")
    if gate.NOT_JUDGED not in statuses or statuses - {gate.NOT_JUDGED, gate.NEW}:
        return None
    why = "; ".join(sorted({v.not_judged for v in verdicts.values() if v.not_judged}))
    n = sum(v.status == gate.NOT_JUDGED for v in verdicts.values())
    return (f"ERROR: qcrypto: nothing was judged: {plural(n, 'cell')} had a baseline entry, "
            f"but none could be judged ({why}); a comparison that judges nothing fails "
            "(compare with a baseline of the same machine, --qcrypto-jobs and --qcrypto-threads, "
            "or save a new one)")
