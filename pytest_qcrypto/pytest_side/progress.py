"""What the ``qcrypto`` and ``cryptotest`` commands show while they run, and how they end.

Both commands run pytest with ``-qq --qcrypto-bare`` (pytest's lines on standard
error, the tables alone on standard output) and hand :func:`command_plugins` to
:func:`pytest.main`; plain ``pytest`` never registers these, and keeps its own
progress.

* :class:`Progress`: while the benchmark items run, a line such as
  ``[37/210] sha3-224 openssl 4096 B ... about 1 min left`` on standard error,
  the item about to run and the time left estimated from the mean duration of
  the items that finished (their own wall time, setup to teardown).  When
  standard error is a terminal the line is rewritten in place (pytest's own
  ``TerminalReporter.rewrite``: a carriage return, never an escape code) and
  erased before the summary; otherwise a plain line is written for the first
  item, then at most every :data:`PLAIN_EVERY_S` seconds.  pytest's dots are left out meanwhile.  With
  ``-v`` pytest already names each item as it runs: this adds nothing.
* :class:`Ending`: an interrupted run (Ctrl-C, SIGTERM) ends with one line,
  :func:`interrupted_line`, instead of pytest's ``KeyboardInterrupt`` banner with
  the file and line where the signal found the run.
* :class:`Streaming`: each table (``qcrypto speed``) or line (``cryptotest``) on standard
  output as soon as its cells are measured, not all of them at the end; the summary then
  writes the rest (an interrupted run: what was measured, ``-`` for the rest).
* :class:`StderrTerminal`: what ``--qcrypto-bare`` registers: pytest's own lines on standard
  error, so that standard output carries the tables alone.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any

import pytest

from pytest_qcrypto.pytest_side.matrix import case_of

#: Seconds between two plain progress lines when standard error is not a terminal.
PLAIN_EVERY_S = 10.0
#: The exit code of an interrupted pytest run.
INTERRUPTED = int(pytest.ExitCode.INTERRUPTED)


def left_text(seconds: float) -> str:
    """``about 40 s left``, ``about 3 min left``, ``about 1 h 5 min left`` (``seconds``
    rounded to whole seconds, then minutes)."""
    if seconds < 59.5:
        return f"about {max(1, round(seconds))} s left"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"about {minutes} min left"
    hours, minutes = divmod(minutes, 60)
    return f"about {hours} h {minutes} min left" if minutes else f"about {hours} h left"


def item_label(item: pytest.Item) -> str:
    """``sha3-224 openssl 4096 B`` (``, decrypt`` / ``, roundtrip`` for those directions),
    ``ed25519 openssl sign`` for a cell without a buffer size; an item without a qcrypto
    case: its name."""
    case = case_of(item)
    if case is None:
        return item.name
    if case.operation:  # a size-less cell (size 0): its operation is its column
        return f"{case.algorithm} {case.plugin} {case.operation}"
    how = ", decrypt" if case.decrypt else ", roundtrip" if case.roundtrip else ""
    return f"{case.algorithm} {case.plugin} {case.size} B{how}"


class Progress:
    """A pytest plugin: the progress line of the commands (see the module docstring).

    ``clock`` gives seconds (a fake one in tests); ``every`` the seconds between plain
    lines; ``live`` True or False forces the terminal or the plain mode (None: live when
    pytest's terminal reporter writes to a terminal).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 every: float = PLAIN_EVERY_S, live: bool | None = None) -> None:
        self.clock = clock
        self.every = every
        self.live = live
        self.total = 0
        self.done = 0
        self.spent = 0.0  # seconds of the finished items
        self._reporter: Any = None
        self._running = False
        self._last_plain: float | None = None
        self._shown = False

    # -- the text ----------------------------------------------------------------------

    def line(self, label: str) -> str:
        """``[37/210] sha3-224 openssl 4096 B ... about 1 min left`` for the item about to
        run (no estimate before one item finished)."""
        text = f"[{min(self.done + 1, self.total)}/{self.total}] {label}"
        if self.done:
            text += f" ... {left_text(self.spent / self.done * (self.total - self.done))}"
        return text

    # -- pytest's hooks ----------------------------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)
        config = session.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or config.get_verbosity() > 0:
            return  # no terminal output, or pytest names each item itself (-v)
        self._reporter = reporter  # (on standard error: --qcrypto-bare moved it there)
        if self.live is None:
            self.live = bool(reporter.isatty)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        self._running = self._reporter is not None
        self._last_plain = None  # the first item's line at once, then every `every` s
        try:
            return (yield)
        finally:
            self._running = False
            self.erase()

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> Generator[None, Any, Any]:
        """While the line is shown, pytest's letters (dots) are left out; the category (the
        counts of the summary) stays."""
        outcome = yield
        if self._running and outcome:
            return (outcome[0], "", "")
        return outcome

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        start = self.clock()
        if self._running:
            self.show(self.line(item_label(item)), start)
        try:
            return (yield)
        finally:
            self.done += 1
            self.spent += self.clock() - start

    # -- writing -----------------------------------------------------------------------

    def show(self, text: str, now: float) -> None:
        """Rewrite the live line, or write a plain line when ``every`` seconds have passed."""
        reporter = self._reporter
        if self.live:
            width = reporter._tw.fullwidth - 1  # the terminal's width, less the cursor
            reporter.rewrite(text[:max(width, 1)], erase=True)
            reporter.flush()
            self._shown = True
        elif self._last_plain is None or now - self._last_plain >= self.every:
            reporter.write_line(text)
            reporter.flush()
            self._last_plain = now

    def erase(self) -> None:
        """Blank the live line, so that what follows starts at the left margin."""
        if self._shown:
            self._reporter.rewrite("", erase=True)
            self._reporter.rewrite("")
            self._reporter.flush()
            self._shown = False


def interrupted_line(measured: int, total: int, saved_to: str | None,
                     signal_name: str | None = None, short: int = 0) -> str:
    """``interrupted: 59 of 210 cells measured, results saved to r.json`` (``..., nothing
    saved`` without a results file; ``interrupted by SIGTERM: ...`` for that signal, and
    for SIGHUP); ``short``: how many of the measured cells, taken in turn, had fewer rounds
    than planned when the interrupt came."""
    how = f" by {signal_name}" if signal_name in ("SIGTERM", "SIGHUP") else ""
    where = f"results saved to {saved_to}" if saved_to else "nothing saved"
    cut = f" ({short} with fewer rounds than planned)" if short else ""
    return f"interrupted{how}: {measured} of {total} cells measured{cut}, {where}"


class Ending:
    """A pytest plugin: an interrupted run ends with :func:`interrupted_line` (what it
    measured and saved) where pytest would print its ``KeyboardInterrupt`` banner."""

    def __init__(self) -> None:
        self.line: str | None = None
        self._items: list[pytest.Item] = []
        self._config: Any = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._items = list(session.items)

    @pytest.hookimpl(trylast=True)  # after the terminal reporter kept the exception
    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        """pytest's reporter prints its banner (``!!! KeyboardInterrupt !!!``, the file and
        line the signal found, a hint) through ``_report_keyboardinterrupt`` after the
        summary; this reporter's copy prints :attr:`line` there instead (the banner when
        there is no line).  A private method of pytest's: tests/test_progress.py checks."""
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        banner = getattr(reporter, "_report_keyboardinterrupt", None)
        if banner is None:
            return

        def one_line() -> None:
            if self.line is None:
                banner()
            else:
                reporter.write_line(self.line)
                self.line = None  # said (pytest_unconfigure may call this again)

        reporter._report_keyboardinterrupt = one_line

    @pytest.hookimpl(trylast=True)  # the gate saved its file first (tryfirst)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if int(exitstatus) != INTERRUPTED:
            return
        manager = session.config.pluginmanager
        run = manager.get_plugin("qcrypto-run")
        guard = manager.get_plugin("qcrypto-guard")
        cells = run.ledger.cells if run is not None else {}
        ms = [c.measurement for c in cells.values() if c.measurement is not None]
        total = sum(1 for i in self._items if case_of(i) is not None) or len(self._items)
        gate = run.gate if run is not None else None
        seen = guard.interrupts.seen if guard is not None else None
        sp = getattr(run, "spread_cells", None)  # cells taken in turn: rounds planned each
        planned = sp.spread.rounds if sp and sp.all else 0  # False: not in turn
        short = sum(1 for m in ms if m.spread_s and len(m.rounds_s) < planned)
        self.line = interrupted_line(len(ms), max(total, len(ms)), _saved_to(gate), seen, short)

def _saved_to(gate: Any) -> str | None:
    """Where the results file went, from the gate's line (``... saved to PATH ...``), shown
    relative to the current directory when it is under it; None when nothing was saved."""
    said = getattr(gate, "saved", "") or ""
    if said.startswith("ERROR") or " saved to " not in said:
        return None
    path = said.split(" saved to ", 1)[1].split(' ("complete"', 1)[0]
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


class Streaming:
    """A pytest plugin: after each test, the lines of the results that no test still to run
    can change (:func:`pytest_qcrypto.output.render.streamed`) go to standard output, those
    not written yet; the run keeps them (``QcryptoRun.streamed``) so that its summary
    writes only what follows.  Only a run with ``--qcrypto-bare`` and a layout that
    streams (``qcrypto``, ``cryptotest``) writing to standard output does this.

    ``progress`` is the command's :class:`Progress`, whose live line on standard error is
    erased before the lines are written; ``stdout`` where they go (default ``sys.stdout``).
    """

    def __init__(self, progress: Progress | None = None, stdout: Any = None) -> None:
        self.progress = progress
        self.stdout = stdout
        self.finished: set[tuple[str, str, str, Any]] = set()
        self._pending: dict[tuple[str, str], int] = {}  # cells to run, per table
        self._config: Any = None

    def pytest_configure(self, config: pytest.Config) -> None:
        self._config = config

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for key in filter(None, map(cell_key, session.items)):
            self._pending[key[:2]] = self._pending.get(key[:2], 0) + 1

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        try:
            return (yield)
        finally:
            key = cell_key(item)
            if key is not None:
                self.finished.add(key)
                self._pending[key[:2]] = left = self._pending.get(key[:2], 1) - 1
                self.flush(table_done=left <= 0)

    def done(self, table: Any, plugin: str, column: Any) -> bool:
        """Whether the test of that cell of ``table`` finished."""
        return (table.algorithm, table.direction, plugin, column) in self.finished

    def flush(self, table_done: bool = True) -> None:
        """Write what is ready; ``table_done``: the test that just finished was its table's
        last (a layout that streams whole tables has nothing new to write otherwise)."""
        from pytest_qcrypto.output import render

        run = self._config.pluginmanager.get_plugin("qcrypto-run") if self._config else None
        how = render.streams(run.output) if run is not None and run.requested else ""
        if not how or how == "tables" and not table_done:
            return

        gate = run.gate
        lines = render.streamed(run.tables(), run.output, self._config.get_verbosity() > 0,
                                self.done, gate.after_table if gate is not None else None)
        shown = run.streamed
        if len(lines) <= len(shown) or lines[:len(shown)] != shown:
            return
        if self.progress is not None:
            self.progress.erase()
        out = self.stdout or sys.stdout
        out.write("".join(f"{line}\n" for line in lines[len(shown):]))
        out.flush()
        run.streamed = lines


def cell_key(item: pytest.Item) -> tuple[str, str, str, Any] | None:
    """``(algorithm, table direction, plugin, column)`` of a matrix item's cell, as the
    tables key it (:func:`pytest_qcrypto.output.tables.slot`); None for another item."""
    from pytest_qcrypto.algorithms import callable_names
    from pytest_qcrypto.output.tables import slot

    case = case_of(item)
    alg = callable_names.lookup(case.algorithm) if case is not None else None
    if case is None or alg is None:
        return None
    direction = case.operation or alg.direction(case.decrypt, case.roundtrip).value
    where, column = slot(case.size, str(direction))
    return alg.name, where, case.plugin, column


def command_plugins() -> tuple[Progress, Ending, Streaming]:
    """The plugins the commands hand to :func:`pytest.main`."""
    shown = Progress()
    return shown, Ending(), Streaming(shown)


class Outcomes:
    """A pytest plugin that counts the items of a run that measured, and keeps the reasons
    of those skipped: a run that measured nothing is a failure, said in one line
    (:meth:`exit_code`; ``cryptotest`` and ``qcrypto speed``)."""

    def __init__(self) -> None:
        self.measured = 0
        self.skipped: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" and report.passed:
            self.measured += 1
        elif report.skipped:
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            reason = reason.removeprefix("Skipped: ")
            if reason not in self.skipped:
                self.skipped.append(reason)

    def exit_code(self, code: int, command: str) -> int:
        """``code``, or 1 (tests failed) with one line on standard error saying why when the
        run ended well (0) but measured nothing."""
        if code != 0 or self.measured:
            return code
        sys.stderr.write(f"{command}: nothing was measured: "
                         f"{'; '.join(self.skipped[:3]) or 'no test ran'}\n")
        return int(pytest.ExitCode.TESTS_FAILED)


def run(args: Sequence[str], plugins: Sequence[object] = ()) -> int:
    """:func:`pytest.main` with :func:`command_plugins` (and ``plugins``): the exit code.

    A signal after the results were saved is the run's (:mod:`pytest_qcrypto.measure.interrupts`:
    one line, the status kept); one in the last moment, after the run put the handlers back,
    ends it with the same word, not a traceback.
    """
    try:
        return int(pytest.main(list(args), plugins=[*plugins, *command_plugins()]))
    except KeyboardInterrupt:
        sys.stdout.flush()
        sys.stderr.write("\ninterrupted\n")
        return INTERRUPTED


class StderrTerminal:
    """Registered by the pytest plugin under ``--qcrypto-bare``: pytest's own output to stderr.

    After pytest's terminal plugin has made its reporter (on standard output),
    this replaces it with one on standard error, before any line is written;
    the results tables then have standard output to themselves.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        manager = config.pluginmanager
        old = manager.get_plugin("terminalreporter")
        if old is None:
            return
        manager.unregister(old)
        manager.register(pytest.TerminalReporter(config, sys.stderr), "terminalreporter")
