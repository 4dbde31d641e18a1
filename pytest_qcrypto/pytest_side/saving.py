"""``--qcrypto-save``: writing the results file at the end of a run (pytest side).

:class:`PluginNames` asks each typed crypto plugin's canonical name and library version
once; :func:`save` writes the file atomically (see :func:`pytest_qcrypto.results.store.save`)
and says so in one line.  Called by the gate's plugin (:mod:`pytest_qcrypto.pytest_side.gate`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from pytest_qcrypto.algorithms import callable_names
from pytest_qcrypto.measure import cost_model
from pytest_qcrypto.pytest_side import quoting
from pytest_qcrypto.results import history, store as results, source_tree
from pytest_qcrypto.algorithms.catalog import plural
from pytest_qcrypto.results.store import ResultsFile


class PluginNames:
    """Canonical names and library versions of typed plugin names, each asked once.

    ``registry`` returns the run's crypto plugin registry (built only when needed).
    """

    def __init__(self, registry: Callable[[], Any]) -> None:
        self._registry = registry
        self._canonical: dict[str, str] = {}
        self._versions: dict[str, str] = {}
        #: ``--qcrypto-target``'s plugin (pytest_qcrypto.pytest_side.targets): the ``PLUGIN@NAME`` entries
        self.remote: Any = None

    def canonical(self, typed: str) -> str:
        """The canonical plugin name of a typed one (the typed name if it does not resolve)."""
        if typed not in self._canonical:
            try:
                self._canonical[typed] = self._registry().resolve(typed).canonical
            except Exception:
                self._canonical[typed] = typed
        return self._canonical[typed]

    def version(self, typed: str) -> str:
        if typed not in self._versions:
            self._versions[typed] = results.plugin_entries(
                [typed], self._registry().resolve)[typed]["version"]
        return self._versions[typed]

    def entries(self, saved: Sequence[results.Result]) -> dict[str, dict[str, Any]]:
        """The results file's ``plugins``: each typed plugin's entry and its drivers."""
        typed = list(dict.fromkeys(r.plugin for r in saved  # a callable's row is no plugin
                                   if r.plugin != callable_names.PLUGIN))
        if not typed:
            return {}
        entries = results.plugin_entries(typed, self._registry().resolve, saved)
        for entry_typed, entry in entries.items():
            entry["drivers"] = sorted({r.driver for r in saved
                                       if r.plugin == entry_typed and r.driver})
        if self.remote is not None:
            entries.update(self.remote.plugin_entries(typed, list(saved)))
        return entries


def save(config: pytest.Config, session: pytest.Session, exitstatus: int, ran_to_end: bool,
         path: Path | None, saved: Sequence[results.Result], names: PluginNames,
         run_state: Callable[[], tuple[dict[str, Any], dict[str, Any] | None]],
         history_dir: Path | None = None) -> str:
    """Save the results file (from ``pytest_sessionfinish``); the line that says so.

    A run that measured nothing writes nothing (an empty file would pass
    every later comparison); a file that cannot be written is an error
    line and exit status 1.  The file says ``"complete": true`` only when
    ``ran_to_end`` (every benchmark item finished, no interrupt was seen:
    see :mod:`pytest_qcrypto.measure.interrupts`) and the exit status and session
    agree; an incomplete run never replaces an existing file.  With ``history_dir``
    (``--qcrypto-history``) a finished run's file is also added to that folder
    (:func:`pytest_qcrypto.results.history.add`); ``path`` may then be None.
    """
    if not saved:
        xdist = getattr(config.option, "numprocesses", None)
        why = ("benchmarks are not measured under pytest-xdist: run them with -n 0"
               if xdist else "no benchmark item ran")
        return f"qcrypto: nothing was measured ({why}): {path or history_dir} not written"
    complete = (ran_to_end
                and exitstatus not in (pytest.ExitCode.INTERRUPTED,
                                       pytest.ExitCode.INTERNAL_ERROR,
                                       pytest.ExitCode.USAGE_ERROR)
                and not session.shouldstop and not session.shouldfail)
    target: Path | None = None
    try:
        run_settings, state = run_state()
        doc = ResultsFile(results=list(saved), machine=results.fingerprint(),
                          plugins=names.entries(saved), complete=complete,
                          settings=run_settings, machine_state=state,
                          cost_model=[f.to_json() for f in cost_model.fit_all(saved)],
                          source=source_tree.git_source(config.rootpath),
                          targets=names.remote.targets_entry() if names.remote else None)
        target = results.save(path, doc) if path is not None else None
        added = history.add(history_dir, doc) if history_dir is not None and complete else None
    except OSError as exc:
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        where = path if path is not None and target is None else history_dir
        return f"ERROR: qcrypto: could not save results to {where}: {exc.strerror or exc}"
    n = plural(len(saved), "result")
    also = (f"; added to the history as {added}" if added is not None else
            f"; not added to the history {history_dir}" if history_dir is not None else "")
    if target is None:
        return (f"qcrypto: {n} added to the history as {added}" if added is not None else
                f"qcrypto: the run did not finish: {n} not added to the history {history_dir}")
    if complete:
        return f"qcrypto: {n} saved to {target}{also}"
    if target != path:
        return (f"qcrypto: the run did not finish: {n} saved to {target} "
                f"(\"complete\": false); {path} left untouched{also}")
    return f"qcrypto: the run did not finish: {n} saved to {target} (\"complete\": false){also}"


def run_state(run: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """What a results file says of ``run`` (a :class:`~pytest_qcrypto.pytest_side.run.QcryptoRun`):
    its settings (min_time, rounds, a fixed count, how spread rounds were taken, the counting
    measure's) and the machine state when measuring started."""
    s, state, sp = run.settings, run.machine_state, getattr(run, "spread_cells", None)
    return ({"min_time_s": s.min_time, "rounds": s.rounds,
             **({"count": s.count} if s.count is not None else {}),
             **({"spread": asdict(sp.spread)} if sp and sp.all else {}),  # cells in turn
             **run.counting.settings(), **quoting.saved(run.output.unit, s)},
            state.as_dict() if state is not None else None)
