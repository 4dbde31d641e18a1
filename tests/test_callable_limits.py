"""measure_callable's timeout takes what --qcrypto-timeout takes: seconds more than 0 and
at most a day, or None; anything else is a one-line ValueError before anything runs.  A
callable that turns the timeout's alarm off is told so, and the alarm is set again."""

import math
import signal
import time

import pytest

import pytest_qcrypto
from pytest_qcrypto.measure import limits


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, True, "5", 86401])
def test_a_bad_timeout_is_refused_before_anything_runs(timeout):
    calls = []
    with pytest.raises(ValueError) as info:
        pytest_qcrypto.measure_callable(calls.append, 16, timeout=timeout)
    assert str(info.value) == ("timeout must be a number of seconds more than 0 and at most "
                               f"86400, or None for no limit, not {timeout!r}")
    assert calls == []


def test_a_good_timeout_measures():
    m = pytest_qcrypto.measure_callable(len, 16, timeout=30, min_time=0.001, rounds=1)
    assert m.count >= 1 and m.size == 16


# -- a callable that turns the timeout's alarm off (issue 24) --------------------------------


@pytest.fixture
def alarm_left_alone():
    """SIGALRM's handler and timer as found; put back whatever the test did."""
    handler = signal.getsignal(signal.SIGALRM)
    yield handler
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, handler)


def alarm_off(data):
    signal.setitimer(signal.ITIMER_REAL, 0)  # what signal.alarm(0) does


def own_handler(data):
    signal.signal(signal.SIGALRM, signal.SIG_IGN)


@pytest.mark.parametrize("fn, what", [(alarm_off, "turned off the alarm"),
                                      (own_handler, "put its own SIGALRM handler")])
def test_a_callable_that_turns_off_the_alarm_is_told_so(alarm_left_alone, fn, what):
    """It used to disable --qcrypto-timeout in silence."""
    with pytest.raises(limits.AlarmTampered) as info:
        pytest_qcrypto.measure_callable(fn, 16, timeout=30, min_time=0.001, rounds=2)
    assert str(info.value).startswith(f"the measured code {what}")
    assert str(info.value).endswith("leave SIGALRM and ITIMER_REAL alone in measured code, or "
                                    "measure it with --qcrypto-isolate")
    assert signal.getsignal(signal.SIGALRM) is alarm_left_alone  # put back
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_the_alarm_is_set_again_after_each_round_so_the_timeout_still_ends_it(
        alarm_left_alone):
    """10 ms a call, 10 calls a round, 1000 rounds: 100 s without its alarm; re-armed after
    each round, the 0.3 s timeout still ends it."""
    def slow_and_rogue(data):
        alarm_off(data)
        time.sleep(0.01)

    started = time.monotonic()
    with pytest.raises(limits.MeasurementTimeout):
        pytest_qcrypto.measure_callable(slow_and_rogue, 16, timeout=0.3, count=10, rounds=1000)
    assert time.monotonic() - started < 5


def test_a_callable_that_leaves_the_alarm_alone_is_measured(alarm_left_alone):
    m = pytest_qcrypto.measure_callable(len, 16, timeout=30, min_time=0.001, rounds=3)
    assert m.count >= 1 and len(m.rounds_s) == 3
