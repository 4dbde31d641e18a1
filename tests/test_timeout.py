"""Per-measurement timeouts: the SIGALRM deadline, the isolate mode, and what a run does with them.

Runs that hang on purpose go through a subprocess with a timeout of its own,
so that this suite can never hang.
"""

import os
import signal
import threading
import time

import pytest

from conftest import FAST
from pytest_qcrypto.measure import bench, isolate, limits as qtimeout
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.measure.registry import Selection
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.measure.isolate import IsolatedError
from pytest_qcrypto.measure.limits import MeasurementTimeout

#: Test-double crypto plugins for sha256, each misbehaving in its own way.  Every one
#: writes its process id to the file ``started`` when it starts to misbehave.
MISBEHAVING_PLUGINS = '''
import hashlib, os, signal, time
from pathlib import Path
from pytest_qcrypto.backends import Context, CryptoPlugin

STARTED = Path(__file__).with_name("started")

def sleep_forever():
    while True:
        time.sleep(3600)

class Double(Context):
    def __init__(self, algorithm, key, how):
        super().__init__(algorithm, key)
        self.how = how
        self.r, self.w = os.pipe()

    def digest(self, data):
        if self.how == "sleepy":        # hangs in the known-answer check
            STARTED.write_text(str(os.getpid()))
            sleep_forever()
        if self.how == "stuck":         # stands in for an uninterruptible kernel wait
            STARTED.write_text(str(os.getpid()))
            signal.pthread_sigmask(signal.SIG_BLOCK,
                                   {signal.SIGALRM, signal.SIGINT, signal.SIGTERM})
            sleep_forever()
        return hashlib.sha256(data).digest()

    def runner(self, work):
        calls = [0]
        def run(count):
            calls[0] += 1
            if self.how == "blocked":   # a read on a pipe that never gets data
                STARTED.write_text(str(os.getpid()))
                os.read(self.r, 1)
            if self.how == "spinning":
                STARTED.write_text(str(os.getpid()))
                while True:
                    pass
            if self.how == "raising" and calls[0] > 2:
                raise RuntimeError("the device went away")
            if self.how == "crashing":
                os.kill(os.getpid(), signal.SIGSEGV)
            for _ in range(count):
                hashlib.sha256(work.data).digest()
        return run

    def close(self):
        for fd in (self.r, self.w):
            try:
                os.close(fd)
            except OSError:
                pass

def make(how):
    class Plugin(CryptoPlugin):
        name = how
        library = "a test double that is " + how
        def supported(self):
            return frozenset({"sha256"})
        def open(self, algorithm, key, variant=None):
            return Double(algorithm, key, how)
    return Plugin()

def pytest_qcrypto_plugins():
    return [make(h) for h in ("sleepy", "stuck", "blocked", "spinning", "raising", "crashing")]
'''

SHA256 = "Benchmark results for 'sha256' digest (KiB/s):"


def run_hanging(pytester, plugins, *args, limit=60):
    pytester.makeconftest(MISBEHAVING_PLUGINS)
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--qcrypto-digest", "sha256", "--qcrypto-plugin", plugins,
        "--qcrypto-size", "16", "--qcrypto-timeout", "1", *FAST, *args, timeout=limit)


def rows(result):
    """The sha256 table: header, then one row per plugin."""
    out = result.outlines
    start = out.index(SHA256) + 1
    # the table ends at a blank line, a note under it, or pytest's closing line (on a quiet
    # machine no "noisy figures" note follows it)
    end = next((i for i in range(start, len(out))
                if not out[i] or out[i].startswith((" ", "="))), len(out))
    return [line.split() for line in out[start:end]]


# -- the run, end to end -----------------------------------------------------------------


def test_hanging_plugins_fail_after_the_timeout_and_the_run_goes_on(pytester):
    """Asleep in the known-answer check, blocked reading a pipe, spinning in the timed loop."""
    started = time.monotonic()
    r = run_hanging(pytester, "sleepy,blocked,spinning,hashlib")
    assert time.monotonic() - started < 40
    r.assert_outcomes(failed=3, passed=1)
    for plugin in ("sleepy", "blocked", "spinning"):
        r.stdout.fnmatch_lines([f"*_ qcrypto::sha256[[]{plugin}-16[]] _*",
                                f"timed out after 1 s in {plugin} sha256 at 16 bytes"])
    table = rows(r)
    assert table[1:4] == [["sleepy", "x"], ["blocked", "x"], ["spinning", "x"]]
    assert table[4][0] == "hashlib" and float(table[4][1]) > 0
    assert "Traceback" not in r.stdout.str()


def test_isolate_stops_what_the_alarm_cannot_and_survives_crashes(pytester):
    """SIGALRM blocked in the plugin (like a wait in the kernel): only a child process helps."""
    r = run_hanging(pytester, "stuck,blocked,crashing,hashlib", "--qcrypto-isolate")
    r.assert_outcomes(failed=3, passed=1)
    r.stdout.fnmatch_lines(["timed out after 1 s in stuck sha256 at 16 bytes",
                            "timed out after 1 s in blocked sha256 at 16 bytes",
                            "crashing sha256 at 16 bytes: the plugin crashed: the measurement "
                            "process was killed by SIGSEGV (signal 11) without a result"])
    assert rows(r)[4][0] == "hashlib"


def test_a_plugin_raising_mid_measurement_fails_only_its_items(pytester):
    pytester.makeconftest(MISBEHAVING_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "raising,hashlib",
                           "--qcrypto-size", "16,64", *FAST)
    r.assert_outcomes(failed=2, passed=2)
    r.stdout.fnmatch_lines(["*_ qcrypto::sha256[[]raising-16[]] _*",
                            "raising sha256 at 16 bytes failed: RuntimeError: the device went "
                            "away (*conftest.py:* in run)"])  # where, without a traceback
    assert rows(r)[1] == ["raising", "x", "x"]
    assert "Traceback" not in r.stdout.str()


def test_isolate_measures_and_reports_the_plugins_own_error(pytester):
    pytester.makeconftest(MISBEHAVING_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-cipher", "aes-128-gcm",
                           "--qcrypto-plugin", "raising,openssl", "--qcrypto-size", "64",
                           "--qcrypto-decrypt", "--qcrypto-isolate", *FAST)
    r.assert_outcomes(failed=1, passed=2, skipped=1)  # raising has no aes-128-gcm
    r.stdout.fnmatch_lines(["raising sha256 at 64 bytes failed: RuntimeError: the device went "
                            "away (*conftest.py:* in run)"])
    assert "Benchmark results for 'aes-128-gcm' AEAD, decrypt (KiB/s):" in r.outlines


@pytest.mark.parametrize("value, message", [
    ("0", "--qcrypto-timeout: 0 is out of range; give a number of seconds more than 0 and at "
          "most 86400, or 'off' for no limit"),
    ("-1", "--qcrypto-timeout: -1 is out of range"),
    ("abc", "--qcrypto-timeout: 'abc' is not a number of seconds; give a number of seconds"),
    ("nan", "is out of range"),
    ("inf", "is out of range"),
    ("", "--qcrypto-timeout: the value is empty; give a number of seconds more than 0 and at "
         "most 86400, or 'off' for no limit"),
    ("0.01", "--qcrypto-timeout: 0.01 s is shorter than a measurement needs at a min-time of "
             "0.1 s and 3 rounds (about 0.7 s); give at least 0.7, or lower the min-time or "
             "rounds"),
])
def test_bad_timeout_is_a_usage_error(pytester, value, message):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-timeout", value)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert message in r.stderr.str()
    assert "Traceback" not in r.stderr.str() + r.stdout.str()


def test_timeout_off_and_from_ini(pytester):
    pytester.makeini("[pytest]\nqcrypto_timeout = off\n")
    r = pytester.runpytest("--qcrypto-digest", "md5", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", *FAST)
    r.assert_outcomes(passed=1)
    pytester.makeini("[pytest]\nqcrypto_timeout = zero\n")
    r = pytester.runpytest("--qcrypto-digest", "md5")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    pytester.makeini("[pytest]\nqcrypto_timeout = 0.01\nqcrypto_rounds = 1\n")
    r = pytester.runpytest("--qcrypto-digest", "md5")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: qcrypto_timeout in tox.ini: 0.01 s is shorter than a "
                            "measurement needs at a min-time of 0.1 s and 1 round (about *"])


# -- the option's parser -----------------------------------------------------------------


def test_parse_timeout():
    assert qtimeout.parse_timeout(None, 0.1, 3) == 60
    assert qtimeout.parse_timeout(None, 20, 3) == 280   # twice what the measurement needs
    assert qtimeout.parse_timeout(" 2.5 ", 0.1, 3) == 2.5
    assert qtimeout.parse_timeout("OFF", 0.1, 3) is None
    for bad in ("", " ", "0", "-1", "abc", "nan", "inf", "1e9", "1s"):
        with pytest.raises(SettingsError, match="^--qcrypto-timeout: "):
            qtimeout.parse_timeout(bad, 0.1, 3)


# -- the deadline, in this process ---------------------------------------------------------


def test_deadline_stops_a_python_loop():
    started = time.monotonic()
    with pytest.raises(MeasurementTimeout, match="timed out after 0.2 s"):
        with qtimeout.deadline(0.2):
            while True:
                pass
    assert 0.15 < time.monotonic() - started < 2


def test_deadline_stops_a_blocking_read():
    r, w = os.pipe()
    try:
        with pytest.raises(MeasurementTimeout):
            with qtimeout.deadline(0.2):
                os.read(r, 1)
    finally:
        os.close(r)
        os.close(w)


def test_deadline_is_not_swallowed_by_except_exception():
    def plugin_code():
        while True:
            try:
                time.sleep(10)
            except Exception:
                pass

    with pytest.raises(MeasurementTimeout):
        qtimeout.call_with_deadline(plugin_code, 0.1)


def test_deadline_restores_the_earlier_handler_and_timer():
    fired = []

    def handler(*_):
        fired.append(time.monotonic())

    earlier = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with qtimeout.deadline(0.1):
            pass
        assert signal.getsignal(signal.SIGALRM) is handler
        delay, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0.3 < delay <= 0.5
        time.sleep(0.7)
        assert len(fired) == 1
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, earlier)


def test_an_earlier_timer_due_first_still_fires_inside_the_deadline():
    fired = []
    earlier = signal.signal(signal.SIGALRM, lambda *_: fired.append(time.monotonic()))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with qtimeout.deadline(5):
            time.sleep(0.3)       # the earlier timer fires here, on its own handler
        assert len(fired) == 1
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, earlier)


def test_deadline_none_and_other_threads_set_no_limit():
    with qtimeout.deadline(None):
        assert signal.getitimer(signal.ITIMER_REAL)[0] == 0
    seen = []

    def elsewhere():
        seen.append(qtimeout.can_interrupt())
        with qtimeout.deadline(0.01):
            time.sleep(0.05)
        seen.append("finished")

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join(5)
    assert seen == [False, "finished"]


def test_bench_context_is_abandoned_after_a_timeout_and_closed_safely():
    closed = []

    class Hanging(HashlibPlugin):
        def open(self, algorithm, key, variant=None):
            ctx = super().open(algorithm, key, variant)
            ctx.runner = lambda work: (lambda count: time.sleep(3600))
            ctx.close = lambda: closed.append(True)
            return ctx

    ctx = bench.open_context(Selection("hanging", Hanging()), "sha256")
    with pytest.raises(MeasurementTimeout):
        ctx.measure(16, min_time=0.001, rounds=1, timeout=0.2)
    assert ctx.abandoned
    with pytest.raises(RuntimeError, match="abandoned after a timeout"):
        ctx.measure(16, min_time=0.001, rounds=1, timeout=0.2)
    before = len(closed)  # the known-answer contexts were closed already
    ctx.close()
    assert len(closed) == before + 1


# -- the isolate mode ------------------------------------------------------------------------


def test_run_isolated_returns_and_raises_what_the_child_did():
    assert isolate.run_isolated(lambda: {"kib_per_s": 1.5}, 5) == {"kib_per_s": 1.5}
    with pytest.raises(ZeroDivisionError):
        isolate.run_isolated(lambda: 1 / 0, 5)

    class Odd(Exception):
        def __init__(self, a, b):  # pickles, but cannot be rebuilt from its args
            super().__init__(f"{a}-{b}")

    def odd():
        raise Odd(1, 2)

    with pytest.raises(IsolatedError, match="Odd: 1-2"):
        isolate.run_isolated(odd, 5)
    with pytest.raises(IsolatedError, match="SystemExit"):
        isolate.run_isolated(lambda: exit(3), 5)
    with pytest.raises(IsolatedError, match="exited with code 7 without a result"):
        isolate.run_isolated(lambda: os._exit(7), 5)
    assert isolate.abandoned_children() == frozenset()


def test_run_isolated_kills_the_child_on_timeout(tmp_path):
    pid_file = tmp_path / "pid"

    def hang():
        pid_file.write_text(str(os.getpid()))
        time.sleep(3600)

    started = time.monotonic()
    with pytest.raises(MeasurementTimeout, match="after 0.3 s"):
        isolate.run_isolated(hang, 0.3)
    assert time.monotonic() - started < 3
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)   # killed and reaped


def test_run_isolated_abandons_a_child_that_cannot_be_killed(monkeypatch):
    """SIGKILL cannot end a process in an uninterruptible kernel wait: the run must go on."""
    real_kill = os.kill
    monkeypatch.setattr(isolate.os, "kill", lambda pid, sig: None)
    monkeypatch.setattr(isolate, "REAP_WAIT", 0.1)
    started = time.monotonic()
    with pytest.raises(MeasurementTimeout):
        isolate.run_isolated(lambda: time.sleep(3600), 0.2)
    assert time.monotonic() - started < 2
    stuck = isolate.abandoned_children()
    assert len(stuck) == 1
    monkeypatch.undo()
    pid = next(iter(stuck))
    real_kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert isolate.abandoned_children() == frozenset()


def test_interrupting_the_parent_kills_the_child(tmp_path):
    pid_file = tmp_path / "pid"

    def hang():
        pid_file.write_text(str(os.getpid()))
        time.sleep(3600)

    def interrupt(*_):
        raise KeyboardInterrupt

    earlier = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            isolate.run_isolated(hang, None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, earlier)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


# -- the isolated close ----------------------------------------------------------------------


def test_run_isolated_closes_in_the_child_within_the_close_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(qtimeout, "CLOSE_TIMEOUT", 0.3)
    closed = tmp_path / "closed"

    def close():
        closed.write_text(str(os.getpid()))

    assert isolate.run_isolated(lambda: 5, 5, close=close) == 5
    assert int(closed.read_text()) != os.getpid()  # closed in the child
    closed.unlink()
    with pytest.raises(ZeroDivisionError):  # fn's own error wins; close ran all the same
        isolate.run_isolated(lambda: 1 / 0, 5, close=close)
    assert closed.exists()

    def raising():
        raise OSError(9, "Bad file descriptor")

    with pytest.raises(OSError, match="Bad file descriptor"):
        isolate.run_isolated(lambda: 5, 5, close=raising)


@pytest.mark.parametrize("deaf", [False, True], ids=["sleeping", "deaf-to-signals"])
def test_run_isolated_stops_a_close_that_never_returns(monkeypatch, deaf):
    """In the child, the alarm stops a sleeping close(); one deaf to it (C code that
    never returns) is killed by the parent REAP_WAIT seconds after the close limit."""
    monkeypatch.setattr(qtimeout, "CLOSE_TIMEOUT", 0.3)

    def close():
        if deaf:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(3600)

    started = time.monotonic()
    with pytest.raises(qtimeout.CallTimeout, match=r"^close\(\) did not return within 0\.3 s$"):
        isolate.run_isolated(lambda: 5, None, close=close)  # no measurement limit: still ends
    assert time.monotonic() - started < 5
    assert isolate.abandoned_children() == frozenset()
