"""Interrupts (Ctrl-C, a CI runner's SIGTERM) and whether a run got to its end.

A results file may say ``"complete": true`` only when every benchmark item
that was collected ran to its end and no interrupt was seen.  The exit status
alone cannot tell: a second Ctrl-C that arrives while pytest handles the first
leaves the status at OK.  :class:`Interrupts` therefore notes an interrupt the
moment its signal arrives, and counts the benchmark items that finished.

The signals, in a run with benchmark items (main thread, and only where
nobody else handles them: ``SIGINT`` with Python's default handler,
``SIGTERM`` and ``SIGHUP`` (a closed terminal) with the default action):

* The first ``SIGINT``, ``SIGTERM`` or ``SIGHUP`` raises ``KeyboardInterrupt``, so
  that pytest's interrupt path runs: the tables of what was measured, the results
  saved marked incomplete, exit status 2.
* Once every benchmark item has run, until the results are saved, a signal is
  noted and held back (two at most), so that it cannot lose the results.
* Until the results are saved (:meth:`Interrupts.release`), one more signal is
  noted and otherwise held back, so that it cannot stop the saving half-way;
  a third takes effect at once, as it would without this plugin.
* After that, until the handlers are put back at the end of the run
  (:meth:`Interrupts.restore`), a signal changes nothing: the run is over and
  its exit status stands; :attr:`Interrupts.late` names it, and the run ends
  with one line that says so (:func:`late_line`).  A third one then takes effect
  at once.

Nothing here imports pytest; :class:`pytest_qcrypto.plugin.RunGuard` calls it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable
from types import FrameType
from typing import Any

from pytest_qcrypto.measure.limits import can_interrupt

#: Signals noted, counting the first: after this many (while the results are being
#: saved), a further one takes effect at once.
HELD_AT_MOST = 2


class Interrupts:
    """What a run saw of interrupts, and which benchmark items have not finished."""

    def __init__(self) -> None:
        #: the first interrupt seen: ``"SIGINT"``, ``"SIGTERM"`` or ``"KeyboardInterrupt"``
        self.seen: str | None = None
        self.signals = 0
        self._unfinished: set[str] = set()
        #: the handlers found when ours were installed, by signal
        self._earlier: dict[int, Any] = {}
        self._holding = False
        self._saved = False
        self._expected = False
        #: the first signal that came after the results were saved (the run was over)
        self.late: str | None = None
        self._late = 0

    # -- what the run did --------------------------------------------------------------

    def note(self, what: str) -> None:
        """An interrupt was seen (a signal's name, or ``KeyboardInterrupt``)."""
        if self.seen is None:
            self.seen = what

    def expect(self, node_ids: Iterable[str]) -> None:
        """The benchmark items collected to run (their node ids)."""
        self._unfinished = set(node_ids)
        self._expected = bool(self._unfinished)

    def finished(self, node_id: str) -> None:
        """An item ran to its end (setup, call and teardown)."""
        self._unfinished.discard(node_id)

    @property
    def _ending(self) -> bool:
        """Every expected benchmark item ran and the results are not saved yet: a signal now
        would only cut the save short (and lose what was measured), so it is held back."""
        return bool(self._expected) and not self._unfinished and not self._saved

    @property
    def ran_to_end(self) -> bool:
        """No interrupt was seen, and every expected benchmark item finished."""
        return self.seen is None and not self._unfinished

    # -- the signals -------------------------------------------------------------------

    def catch(self) -> None:
        """Install the handlers (see the module docstring); a no-op outside the main
        thread, for a signal someone else handles, and when already installed."""
        if self._earlier or not can_interrupt():
            return
        for sig, default in ((signal.SIGINT, signal.default_int_handler),
                             (signal.SIGTERM, signal.SIG_DFL), (signal.SIGHUP, signal.SIG_DFL)):
            if signal.getsignal(sig) == default:
                self._earlier[sig] = signal.signal(sig, self._on_signal)

    def release(self) -> None:
        """The results are saved: signals held back so far are done with; from now on a
        signal is :attr:`late` (noted, the run's status kept) until :meth:`restore`."""
        self._saved = True
        self._holding = False

    def restore(self) -> None:
        """Put back the handlers found by :meth:`catch` (unless replaced since)."""
        for sig, earlier in self._earlier.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, earlier)
        self._earlier = {}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True  # pytest shows where the signal found the run, not this
        name = signal.Signals(signum).name
        if self._saved:  # the run is over: its status and its saved results stand
            self.late = self.late or name
            self._late += 1
            if self._late <= HELD_AT_MOST:
                return
            return self._act(signum, frame)
        self.note(name)
        self.signals += 1
        if self._ending and self.signals <= HELD_AT_MOST:
            return  # every item ran: the results are being saved and shown; held back
        if self.signals == 1:
            self._holding = not self._saved
            raise KeyboardInterrupt() if signum == signal.SIGINT else KeyboardInterrupt(
                f"received {name}")
        if self._holding and self.signals <= HELD_AT_MOST:
            return  # the run is already stopping; it saves its results first
        self._holding = False
        self._act(signum, frame)

    def _act(self, signum: int, frame: FrameType | None) -> None:
        """What ``signum`` does without this plugin: the handler found, or the default."""
        earlier = self._earlier.get(signum, signal.SIG_DFL)
        self.restore()
        if callable(earlier):
            earlier(signum, frame)  # Python's SIGINT handler: KeyboardInterrupt
        else:
            signal.raise_signal(signum)  # the default action: the process ends


def late_line(signal_name: str, saved: str | None, status: int) -> str:
    """The one line of a run that a signal reached after it was over: ``qcrypto: SIGTERM
    after the run had ended, which it did not change: its results were complete and saved to
    r.json; exit status 0``.

    ``saved``: the gate's line about the file (``qcrypto: 2 results saved to PATH``, or one
    of an incomplete run), None or empty when the run saved nothing; ``status``: the run's
    exit status, which the signal did not change.
    """
    said = saved or ""
    if said.startswith("qcrypto: ") and " saved to " in said and "did not finish" not in said:
        where = said.split(" saved to ", 1)[1].split("; ", 1)[0]
        what = f"its results were complete and saved to {where}; "
    elif said.startswith("qcrypto: "):
        what = "its results were saved as said above; "
    else:
        what = ""
    return f"qcrypto: {signal_name} after the run had ended, which it did not change: " \
           f"{what}exit status {status}"
