"""Time limits on calls into crypto plugins: a SIGALRM deadline (the child process: isolate.py).

(This module was ``pytest_qcrypto.timeout``; the options themselves are declared in
:mod:`pytest_qcrypto.pytest_side.options`.)

A crypto plugin can hang: a Python loop that never ends, a ``read`` on a
socket or pipe that never gets data, an ``ioctl`` on a kernel driver that
waits for hardware.  ``--qcrypto-timeout SECONDS`` bounds each measurement
(the known-answer check, the round trip and the timed rounds together); when
it expires the item fails with ``timed out after N s in PLUGIN ALGORITHM at
SIZE bytes`` and the run goes on.  Two ways to enforce it:

* In the process (the default), :func:`deadline`: a one-shot ``ITIMER_REAL``
  timer whose ``SIGALRM`` handler raises :class:`MeasurementTimeout`.  The
  signal interrupts a blocking system call (``read``, ``recv``, ``ioctl``,
  ``sleep``: they fail with EINTR and Python runs the handler) as well as a
  Python loop.  It cannot stop C code that retries on EINTR or never returns
  to Python, nor a call stuck in an uninterruptible kernel wait (state ``D``):
  the handler only runs once control is back in Python.  It works in the main
  thread only (elsewhere the measurement runs without a limit), and restores
  any ``SIGALRM`` handler and timer that was there before, so it nests with
  other users of the alarm (pytest-timeout's signal method).
* In a child process (``--qcrypto-isolate``),
  :func:`pytest_qcrypto.measure.isolate.run_isolated`: each measurement, opening the
  context included, runs in a forked child that is killed on timeout (and left
  behind if it cannot die, so the run still ends); a crash costs one item.

Every other call into a crypto plugin has a limit of its own, whatever
``--qcrypto-timeout`` says, enforced by the same alarm (:func:`call_bounded`):
each ``close()`` of a context :data:`CLOSE_TIMEOUT` seconds (past it the item
fails with ``PLUGIN ALGORITHM: close() did not return within 5 s; the context
was abandoned``); ``probe()``, ``supported()``, ``version()`` and ``details()``
:data:`QUERY_TIMEOUT` seconds (past it the plugin is unavailable, with that
reason, or its version reads ``unknown (...)``).

Nothing here imports pytest; :func:`parse_timeout` and :func:`check_isolate`
raise :class:`~pytest_qcrypto.algorithms.settings.SettingsError` for a usage error.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

from pytest_qcrypto.algorithms.settings import SettingsError, decimal_number, shown

T = TypeVar("T")

#: ``--qcrypto-timeout`` when not given, seconds (longer when the run's
#: ``--qcrypto-min-time`` and ``--qcrypto-rounds`` need it, see :func:`default_timeout`).
DEFAULT_TIMEOUT = 60.0
#: The longest timeout accepted, seconds (one day).
MAX_TIMEOUT = 86400.0
#: What ``--qcrypto-timeout`` takes to mean no limit at all.
OFF = "off"
#: Seconds each ``close()`` of a crypto plugin's context gets (interruptible waits only, like
#: the deadline; with ``--qcrypto-isolate`` also a hang in C code of the measured context).
CLOSE_TIMEOUT = 5.0
#: Seconds each of a crypto plugin's ``probe()``, ``supported()``, ``version()`` and
#: ``details()`` gets, while collecting, listing (``--qcrypto-list``) or saving results.
QUERY_TIMEOUT = 10.0

class MeasurementTimeout(BaseException):
    """A measurement did not finish within its time limit.

    A ``BaseException`` (like ``KeyboardInterrupt``), so that a plugin's own
    ``except Exception`` cannot swallow it and carry on hanging.  ``seconds``
    is the limit that expired.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


class CallTimeout(RuntimeError):
    """One call into a crypto plugin (``close()``, ``probe()``...) did not return in time.

    ``str()`` is ``close() did not return within 5 s``; ``call`` names the
    call, ``seconds`` is its limit.  An ordinary exception: it is raised once
    the plugin's code has been left (see :func:`call_bounded`).
    """

    def __init__(self, call: str, seconds: float) -> None:
        super().__init__(f"{call} did not return within {seconds:g} s")
        self.call = call
        self.seconds = seconds

    def __reduce__(self) -> tuple[Any, ...]:  # sent back from an isolated child
        return (type(self), (self.call, self.seconds))


class AlarmTampered(RuntimeError):
    """The measured code turned off or took over the alarm that bounds it (``signal.alarm(0)``,
    ``setitimer``, its own ``SIGALRM`` handler).  :func:`rearm` set it again once the code
    returned; the measurement then fails with this, since a call that never returned could
    not have been stopped."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"the measured code {what}, which bounds it (--qcrypto-timeout); it was set again "
            "when the call returned, but one that never returns could not be stopped: leave "
            "SIGALRM and ITIMER_REAL alone in measured code, or measure it with "
            "--qcrypto-isolate")

    def __reduce__(self) -> tuple[Any, ...]:  # sent back from an isolated child
        return (_tampered, (str(self),))


def _tampered(text: str) -> AlarmTampered:
    exc = AlarmTampered("")
    exc.args = (text,)
    return exc


class _CallExpired(BaseException):
    """Raised by the alarm inside a bounded call: a ``BaseException``, like
    :class:`MeasurementTimeout`, so the plugin's ``except Exception`` cannot swallow it."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def origin(exc: BaseException) -> str | None:
    """Where ``exc`` was raised, ``file:line in function``, or None when unknown.

    Also for an exception raised in an isolated child: tracebacks do not pickle,
    so the child records this before sending the exception back.
    """
    recorded = getattr(exc, "qcrypto_origin", None)
    if isinstance(recorded, str):
        return recorded
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else None


# -- the options' values ------------------------------------------------------------


def needed_seconds(min_time: float, rounds: int) -> float:
    """About the longest a fast operation's measurement takes: calibration up to
    ``2 * min_time``, ``min_time`` before it, then ``rounds - 1`` rounds of up to
    ``2 * min_time`` each (seconds)."""
    return min_time * (2 * rounds + 1)


def default_timeout(min_time: float, rounds: int) -> float:
    """:data:`DEFAULT_TIMEOUT`, or twice :func:`needed_seconds` when that is longer."""
    return max(DEFAULT_TIMEOUT, 2 * needed_seconds(min_time, rounds))


def parse_timeout(text: object, min_time: float, rounds: int,
                  option: str = "--qcrypto-timeout") -> float | None:
    """Seconds from ``text``, or None for :data:`OFF`; the default when ``text`` is None
    (an empty text is an error: ``--qcrypto-timeout=``).

    Valid: a number of seconds more than 0 and at most :data:`MAX_TIMEOUT`, no
    shorter than :func:`needed_seconds` of the run's ``min_time`` and ``rounds``.
    """
    if text is None:
        return default_timeout(min_time, rounds)
    value = str(text).strip()
    if value.lower() == OFF:
        return None
    valid = (f"give a number of seconds more than 0 and at most {MAX_TIMEOUT:g}, "
             f"or '{OFF}' for no limit")
    if not value:  # --qcrypto-timeout= : a value forgotten, not the default
        raise SettingsError(f"{option}: the value is empty; {valid}")
    try:
        seconds = decimal_number(value)
    except ValueError:
        raise SettingsError(f"{option}: {shown(value)} is not a number of seconds; "
                            f"{valid}") from None
    if not 0 < seconds <= MAX_TIMEOUT:  # also false for NaN
        raise SettingsError(f"{option}: {value} is out of range; {valid}")
    need = needed_seconds(min_time, rounds)
    if seconds < need:
        raise SettingsError(
            f"{option}: {seconds:g} s is shorter than a measurement needs at a min-time of "
            f"{min_time:g} s and {rounds} round{'s' if rounds != 1 else ''} (about {need:g} s); "
            f"give at least {need:g}, or lower the min-time or rounds")
    return seconds


def check_isolate(isolate: bool) -> None:
    """``--qcrypto-isolate`` needs ``os.fork``; raises ``SettingsError`` where there is none."""
    if isolate and not hasattr(os, "fork"):
        raise SettingsError("--qcrypto-isolate needs os.fork, which this platform lacks; "
                            "run without it (the in-process timeout still applies)")


# -- in the process: the SIGALRM deadline -------------------------------------------


def can_interrupt() -> bool:
    """Whether :func:`deadline` can enforce a limit here (SIGALRM, in the main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None,
             error: Callable[[float], BaseException] = MeasurementTimeout) -> Iterator[None]:
    """Raise :class:`MeasurementTimeout` (or ``error(seconds)``) in the body once
    ``seconds`` have passed.

    ``None`` (or where :func:`can_interrupt` is false) sets no limit.  The
    ``SIGALRM`` handler and ``ITIMER_REAL`` timer found on entry are put back
    on exit; an earlier timer that is due sooner than ours still fires first,
    on its own handler, and one that came due meanwhile fires right after.
    """
    if seconds is None or not can_interrupt():
        yield
        return
    ends = time.monotonic() + seconds
    armed = True
    earlier_due: float | None = None
    earlier_interval = 0.0

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        nonlocal earlier_due
        if not armed:
            return
        now = time.monotonic()
        if now >= ends - 0.001:
            raise error(seconds)
        # the earlier timer is due first: hand it its alarm, then wait for the next one
        earlier_due = earlier_due + earlier_interval if earlier_interval > 0 else None
        _call_handler(earlier_handler, signum, frame)
        _arm(ends if earlier_due is None else min(ends, earlier_due))

    def check() -> str:
        """Set the alarm again if the code just called turned it off; what it did, or ''."""
        handler = signal.getsignal(signal.SIGALRM)
        if handler is on_alarm and signal.getitimer(signal.ITIMER_REAL)[0] > 0:
            return ""
        if handler is on_alarm and time.monotonic() >= ends - 0.01:
            raise error(seconds)  # (the alarm is due: not turned off)
        signal.signal(signal.SIGALRM, on_alarm)
        _arm(ends if earlier_due is None else min(ends, earlier_due))
        return ("put its own SIGALRM handler in place of the alarm" if handler is not on_alarm
                else "turned off the alarm (signal.alarm(0) or setitimer)")

    earlier_handler = signal.signal(signal.SIGALRM, on_alarm)
    earlier_delay, earlier_interval = signal.setitimer(signal.ITIMER_REAL, 0)
    earlier_due = time.monotonic() + earlier_delay if earlier_delay > 0 else None
    _arm(ends if earlier_due is None else min(ends, earlier_due))
    guard = _Guard(check)
    _GUARDS.append(guard)
    try:
        yield
        if guard.tampered:
            raise AlarmTampered(guard.tampered)
    finally:
        try:
            armed = False
            _GUARDS.remove(guard)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, earlier_handler)
            if earlier_due is not None:  # it fires at once if it came due meanwhile
                _arm(earlier_due, earlier_interval)


class _Guard:
    """One :func:`deadline` in force: its check, in which process, what was done to it."""

    def __init__(self, check: Callable[[], str]) -> None:
        self.check, self.pid, self.tampered = check, os.getpid(), ""


#: The deadlines in force, innermost last.
_GUARDS: list[_Guard] = []


def rearm() -> None:
    """After a call into measured code (the harness calls it after every timed batch): if
    the code turned off the innermost deadline's alarm or replaced its handler, set it again
    and note it, so that the deadline raises :class:`AlarmTampered` when it ends.  Costs two
    system calls; does nothing without a deadline in this process and thread."""
    if _GUARDS and _GUARDS[-1].pid == os.getpid() and can_interrupt():
        guard = _GUARDS[-1]
        guard.tampered = guard.check() or guard.tampered


def _arm(due: float, interval: float = 0.0) -> None:
    """Set ``ITIMER_REAL`` to fire at ``due`` (``time.monotonic()`` seconds), or right away."""
    signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 0.001), interval)


def _call_handler(handler: Any, signum: int, frame: FrameType | None) -> None:
    """Deliver a signal to a handler as ``signal.signal`` returned it."""
    if callable(handler):
        handler(signum, frame)
    elif handler == signal.SIG_DFL:
        # SIGALRM's default action ends the process: do what would have happened
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)
    # SIG_IGN, or None (set from C): nothing to do


def call_with_deadline(fn: Callable[[], T], seconds: float | None) -> T:
    """``fn()`` under :func:`deadline`."""
    with deadline(seconds):
        return fn()


def call_bounded(fn: Callable[[], T], call: str, seconds: float | None) -> T:
    """``fn()``, a call into a crypto plugin named ``call`` (``"close()"``), within ``seconds``.

    Raises :class:`CallTimeout` past the limit (what :func:`deadline` can stop:
    Python code and blocking system calls, in the main thread); what ``fn``
    raises goes through.  A measurement deadline around it that expires first
    still raises :class:`MeasurementTimeout`.
    """
    try:
        with deadline(seconds, _CallExpired):
            return fn()
    except _CallExpired as exc:
        raise CallTimeout(call, exc.seconds) from None


def errno_text(exc: OSError) -> str:
    """``[EACCES] Permission denied``: an ``OSError`` in one line, its errno by name."""
    name = errno.errorcode.get(exc.errno or 0, "")
    return f"[{name or exc.errno}] {exc.strerror or exc}" if exc.errno else str(exc)


def plugin_error(exc: BaseException) -> str:
    """``Type: message (file:line in function)``, where the plugin raised it (:func:`origin`)."""
    where = origin(exc)
    return f"{type(exc).__name__}: {exc}" + (f" ({where})" if where else "")
