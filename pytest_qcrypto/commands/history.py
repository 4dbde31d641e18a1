"""``qcrypto history DIR``: the series of a history folder, their steps, a page.

``DIR`` holds results files (``--qcrypto-history=DIR`` adds one per run:
:mod:`pytest_qcrypto.results.history`).  Every cell of every machine is a series; its steps
are found (:mod:`pytest_qcrypto.gate.steps`) and judged by the gate's rules read from the
ini file a pytest run here would read, as ``qcrypto compare`` reads them (``-c FILE``,
``-o KEY=VALUE``, ``--qcrypto-threshold``): :mod:`pytest_qcrypto.gate.history`.  Standard
output gets the list of steps; standard error the files that could not be read (each
skipped, with the reason) and what was left out.  ``--html=PATH`` also writes the page
(:mod:`pytest_qcrypto.output.history_page`), atomically.

Exit status: 1 when the latest step of a cell is a regression beyond its threshold or a
cell's level is below its floor, or the page could not be written; otherwise 4 when a file
could not be read (it was skipped), when ``DIR`` has no run or a bad option; 0 otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.commands.compare import _rules
from pytest_qcrypto.gate import history as judge
from pytest_qcrypto.output import history_page
from pytest_qcrypto.results import files, history as series

OK, FAILED, USAGE_ERROR = 0, 1, 4
COMMAND = "qcrypto history"


def run(folder: str, since: str | None = None, cells: Sequence[str] = (),
        html: str | None = None, threshold: str | None = None,
        pytest_args: Sequence[str] = (), stdout: Any = None) -> int:
    """``qcrypto history``: returns the exit status (module doc)."""
    args = ["-p", "no:cacheprovider", *pytest_args]
    if threshold is not None:
        args.append(f"--qcrypto-threshold={threshold}")
    return int(pytest.main(args, plugins=[_Command(folder, since, cells, html, stdout)]))


class _Command:
    """The pytest plugin of :func:`run`: once pytest has read the ini file, it reads the
    history instead of running a session."""

    def __init__(self, folder: str, since: str | None, cells: Sequence[str],
                 html: str | None, stdout: Any) -> None:
        self.folder, self.since, self.cells, self.html = folder, since, cells, html
        self.stdout = stdout or sys.stdout

    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config: pytest.Config) -> int:
        try:
            rules = _rules(config)
            wanted = judge.patterns(self.cells)
            if self.html is not None:
                problem = files.check_writable(Path(self.html)) if self.html else "no path"
                if problem:
                    raise SettingsError(f"--html: cannot write {self.html}: {problem}")
            found = series.read(Path(self.folder), self.since)
        except (SettingsError, ValueError) as exc:
            return _usage(str(exc))
        except OSError as exc:
            return _usage(f"{self.folder}: cannot read the folder: {exc.strerror or exc}")
        for path, why in found.unreadable:
            sys.stderr.write(f"ERROR: {COMMAND}: {path}: skipped: {why}\n")
        for what, n in found.left_out.items():
            sys.stderr.write(f"{COMMAND}: left out {what}: {n}\n")
        if not found.runs:
            return _usage(f"{self.folder}: no results file to read (add runs with "
                          "--qcrypto-history=DIR)")
        reports = judge.analyse(found, rules, wanted)
        if not reports:
            return _usage(f"-k {','.join(self.cells)}: no cell of the history matches")
        self.stdout.write("".join(f"{line}\n" for line in judge.lines(found, reports,
                                                                        self.folder)))
        self.stdout.flush()
        status = FAILED if any(r.verdict in judge.FAILING for r in reports) else (
            USAGE_ERROR if found.unreadable else OK)
        if self.html:
            n = len(found.runs)
            notes = [f"{n} run{'' if n == 1 else 's'} read from {self.folder}"] + [
                f"skipped {path}: {why}" for path, why in found.unreadable]
            text = history_page.page(judge.charts(found, reports),
                                     f"qcrypto history: {self.folder}", notes)
            try:
                files.write_atomic(Path(self.html), text)
            except OSError as exc:
                sys.stderr.write(f"ERROR: {COMMAND}: cannot write {self.html}: "
                                 f"{exc.strerror or exc}\n")
                return FAILED
            sys.stderr.write(f"{COMMAND}: page written to {self.html}\n")
        return status


def _usage(message: str) -> int:
    sys.stderr.write(f"ERROR: {COMMAND}: {message.removeprefix('--qcrypto-compare: ')}\n")
    return USAGE_ERROR
