"""Calls into a crypto plugin that never return, and a plugin that crashes while opening.

Every call into a crypto plugin has a limit: ``close()`` ``CLOSE_TIMEOUT`` (5 s),
``probe()``, ``supported()``, ``version()`` and ``details()`` ``QUERY_TIMEOUT``
(10 s).  The runs here set both to 1 s in their conftest (the pytest under test
reads them from ``pytest_qcrypto.measure.limits`` at each call) and run in a
subprocess with a time limit of its own, so that this suite cannot hang.
"""

import json
import signal
import time

import pytest

from conftest import FAST
from pytest_qcrypto.measure import limits as qtimeout
from pytest_qcrypto.backends import CryptoPlugin
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.measure.registry import Registry
from pytest_qcrypto.measure.limits import CallTimeout

#: Test-double crypto plugins for sha256 that never return from one call each, in an
#: endless pure-Python loop unless said otherwise, and two that crash in open().
UNRESPONSIVE = '''
import ctypes, hashlib, os, signal, time
import pytest_qcrypto.measure.limits
from pytest_qcrypto.backends import Context, CryptoPlugin

pytest_qcrypto.measure.limits.CLOSE_TIMEOUT = 1.0   # 5 s, shortened for the test
pytest_qcrypto.measure.limits.QUERY_TIMEOUT = 1.0   # 10 s, shortened for the test

def forever():
    while True:
        pass

class Sha256(Context):
    def __init__(self, algorithm, key, how):
        super().__init__(algorithm, key)
        self.how = how
        self.timed = False

    def digest(self, data):
        return hashlib.sha256(data).digest()

    def runner(self, work):
        self.timed = True   # the measured context, not a known-answer one
        def run(count):
            for _ in range(count):
                hashlib.sha256(work.data).digest()
        return run

    def close(self):
        if self.how == "stuckclose":
            forever()
        if self.how == "measuredclose" and self.timed:
            forever()
        if self.how == "deafclose" and self.timed:  # a hang in C code: no signal gets through
            signal.pthread_sigmask(signal.SIG_BLOCK,
                                   {signal.SIGALRM, signal.SIGINT, signal.SIGTERM})
            while True:
                time.sleep(3600)

class Plugin(CryptoPlugin):
    def __init__(self, how):
        self.name = how
        self.how = how
        self.library = "a test double: " + how

    def probe(self):
        if self.how == "stuckprobe":
            forever()

    def supported(self):
        if self.how == "stucksupported":
            forever()
        return frozenset({"sha256"})

    def version(self):
        if self.how == "stuckversion":
            forever()
        return "1.0"

    def details(self):
        if self.how == "stuckversion":
            forever()
        return []

    def open(self, algorithm, key, variant=None):
        if self.how == "crashopen":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.how == "nullopen":
            ctypes.string_at(0)   # reads address 0: a real segmentation fault
        return Sha256(algorithm, key, self.how)

def pytest_qcrypto_plugins():
    return [Plugin(h) for h in ("stuckclose", "measuredclose", "deafclose", "stuckprobe",
                                "stucksupported", "stuckversion", "crashopen", "nullopen")]
'''

SHA256 = "Benchmark results for 'sha256' digest (KiB/s):"


def run(pytester, plugins, *args, sizes="16,64"):
    """The sha256 matrix of ``plugins`` in a subprocess; (result, wall seconds)."""
    pytester.makeconftest(UNRESPONSIVE)
    started = time.monotonic()
    r = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:faulthandler", "--qcrypto-digest", "sha256",
        "--qcrypto-plugin", plugins, "--qcrypto-size", sizes, *FAST, *args, timeout=120)
    return r, time.monotonic() - started


def table(r):
    """The sha256 table's rows, split."""
    out = r.outlines
    start = out.index(SHA256) + 1
    # the table ends at a blank line, a note under it, or pytest's closing line (on a quiet
    # machine no "noisy figures" note follows it)
    end = next((i for i in range(start, len(out))
                if not out[i] or out[i].startswith((" ", "="))), len(out))
    return [line.split() for line in out[start:end]]


# -- close() ----------------------------------------------------------------------------


def test_a_close_that_never_returns_fails_its_items_and_the_run_goes_on(pytester):
    r, seconds = run(pytester, "stuckclose,hashlib")
    assert seconds < 60
    message = "stuckclose sha256: close() did not return within 1 s; the context was abandoned"
    # each item: a known-answer context does not close (the call fails), then the
    # measured context does not either (an error at teardown)
    r.assert_outcomes(failed=2, errors=2, passed=2)
    assert r.outlines.count(message) == 4, r.stdout.str()
    assert table(r)[1] == ["stuckclose", "x", "x"]
    assert table(r)[2][0] == "hashlib"
    assert "Traceback" not in r.stdout.str()


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolate"])
def test_a_close_that_hangs_only_for_the_measured_context(pytester, isolate):
    """Not bounded by --qcrypto-timeout before: the run hung for good."""
    r, seconds = run(pytester, "measuredclose,hashlib", "--qcrypto-timeout", "3",
                     *(["--qcrypto-isolate"] if isolate else []), sizes="16")
    assert seconds < 60
    message = "measuredclose sha256: close() did not return within 1 s; the context was abandoned"
    if isolate:  # opened, measured and closed in the child: no figure comes back
        r.assert_outcomes(failed=1, passed=1)
        assert table(r)[1] == ["measuredclose", "x"]
    else:  # measured, then the close at teardown did not return
        r.assert_outcomes(errors=1, passed=2)
        assert table(r)[1][0] == "measuredclose" and float(table(r)[1][1]) > 0
    assert message in r.outlines, r.stdout.str()
    assert table(r)[2][0] == "hashlib"


def test_isolate_stops_a_close_hung_where_no_signal_gets_through(pytester):
    """A close() deaf to SIGALRM (as C code that never returns) is killed with its child."""
    r, seconds = run(pytester, "deafclose,hashlib", "--qcrypto-isolate", "--qcrypto-timeout",
                     "off", sizes="16")
    assert seconds < 60
    r.assert_outcomes(failed=1, passed=1)
    assert ("deafclose sha256: close() did not return within 1 s; the context was abandoned"
            in r.outlines), r.stdout.str()


# -- probe(), supported(), version() ------------------------------------------------------


def test_a_probe_that_never_returns_makes_the_plugin_unavailable(pytester):
    r, seconds = run(pytester, "stuckprobe,hashlib", "-rs")
    assert seconds < 60
    r.assert_outcomes(skipped=2, passed=2)
    r.stdout.fnmatch_lines(["SKIPPED [[]2[]] *stuckprobe: unavailable: probe() did not return "
                            "within 1 s"])
    assert table(r)[2][0] == "hashlib"


def test_a_supported_that_never_returns_makes_the_plugin_unavailable(pytester):
    r, seconds = run(pytester, "stucksupported,hashlib", "-rs")
    assert seconds < 60
    r.assert_outcomes(skipped=2, passed=2)
    r.stdout.fnmatch_lines(["SKIPPED [[]2[]] *stucksupported: unavailable: could not list its "
                            "algorithms: supported() did not return within 1 s"])


def test_all_with_a_supported_that_never_returns_is_a_usage_error(pytester):
    pytester.makeconftest(UNRESPONSIVE)
    started = time.monotonic()
    r = pytester.runpytest_subprocess("--qcrypto-digest", "all", "--qcrypto-plugin",
                                      "stucksupported", timeout=120)
    assert time.monotonic() - started < 60
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: --qcrypto-digest all: nothing to measure: stucksupported: "
                            "unavailable: could not list its algorithms: supported() did not "
                            "return within 1 s. *"])


def test_list_names_each_call_that_never_returned(pytester):
    pytester.makeconftest(UNRESPONSIVE)
    started = time.monotonic()
    r = pytester.runpytest_subprocess("--qcrypto-list", timeout=120)
    assert time.monotonic() - started < 60
    assert r.ret == 0
    r.stdout.fnmatch_lines([
        "stuckprobe: unavailable: probe() did not return within 1 s",
        "stucksupported: unavailable: could not list its algorithms: supported() did not "
        "return within 1 s",
        "stuckversion: available",
        "  library: a test double: stuckversion",
        "  version: unknown (version() did not return within 1 s)",
        "  digests: sha256",
        "  details unavailable: details() did not return within 1 s",
    ], consecutive=False)


def test_a_version_that_never_returns_does_not_hold_up_the_results(pytester):
    r, seconds = run(pytester, "stuckversion", "--qcrypto-save", "r.json", sizes="16")
    assert seconds < 60
    r.assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "r.json").read_text())
    assert doc["complete"] is True
    assert doc["plugins"]["stuckversion"]["version"] == (
        "unknown (version() did not return within 1 s)")
    assert doc["plugins"]["stuckversion"]["canonical"] == "stuckversion"


# -- a crash in open() ---------------------------------------------------------------------


@pytest.mark.parametrize("plugin", ["crashopen", "nullopen"])
def test_isolate_contains_a_crash_in_open(pytester, plugin):
    r, _ = run(pytester, f"{plugin},hashlib", "--qcrypto-isolate", "--qcrypto-save", "r.json")
    r.assert_outcomes(failed=2, passed=2)
    for size in (16, 64):
        assert (f"{plugin} sha256 at {size} bytes: the plugin crashed: the measurement process "
                f"was killed by SIGSEGV (signal 11) without a result") in r.outlines
    assert table(r)[1] == [plugin, "x", "x"]
    doc = json.loads((pytester.path / "r.json").read_text())
    assert [(m["plugin"], m["size"]) for m in doc["results"]] == [("hashlib", 16), ("hashlib", 64)]


# -- in this process ------------------------------------------------------------------------


class Hanging(CryptoPlugin):
    """A plugin whose ``how`` call sleeps (an interruptible wait, as a read on a device)."""

    library = "a test double"

    def __init__(self, how):
        self.name = how
        self.how = how

    def probe(self):
        if self.how == "probe":
            time.sleep(3600)

    def supported(self):
        if self.how == "supported":
            time.sleep(3600)
        return frozenset({"sha256"})

    def version(self):
        if self.how == "version":
            time.sleep(3600)
        return "1.0"


def test_the_registry_bounds_each_query(monkeypatch):
    monkeypatch.setattr(qtimeout, "QUERY_TIMEOUT", 0.2)
    alarm_handler = signal.getsignal(signal.SIGALRM)
    plugins = {how: Hanging(how) for how in ("probe", "supported", "version")}
    registry = Registry(plugins.values())
    started = time.monotonic()
    assert registry.unavailable(plugins["probe"]) == "probe() did not return within 0.2 s"
    assert registry.supported(plugins["probe"]) == frozenset()
    assert registry.supported(plugins["supported"]) == frozenset()
    assert registry.unavailable(plugins["supported"]) == (
        "could not list its algorithms: supported() did not return within 0.2 s")
    assert registry.version(plugins["version"]) == (
        "unknown (version() did not return within 0.2 s)")
    assert registry.supported(plugins["version"]) == frozenset({"sha256"})
    assert time.monotonic() - started < 5  # three limits, each asked once
    assert registry.unavailable(plugins["probe"]) == "probe() did not return within 0.2 s"
    assert signal.getsignal(signal.SIGALRM) == alarm_handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_call_bounded_names_the_call_and_passes_errors_through():
    with pytest.raises(CallTimeout, match=r"^close\(\) did not return within 0\.2 s$") as exc:
        qtimeout.call_bounded(lambda: time.sleep(3600), "close()", 0.2)
    assert exc.value.seconds == 0.2 and exc.value.call == "close()"
    with pytest.raises(ZeroDivisionError):
        qtimeout.call_bounded(lambda: 1 / 0, "close()", 5)
    assert qtimeout.call_bounded(lambda: 7, "version()", 5) == 7


def test_a_measurement_deadline_around_a_bounded_call_still_wins():
    with pytest.raises(qtimeout.MeasurementTimeout):
        with qtimeout.deadline(0.2):
            qtimeout.call_bounded(lambda: time.sleep(3600), "close()", 5)


def test_an_interrupted_measurement_abandons_its_context(monkeypatch):
    """Ctrl-C mid-call: the context is never used again, and is closed within the limit."""
    from pytest_qcrypto.measure import bench
    from pytest_qcrypto.measure.registry import Selection

    closes = []

    class Interrupted(HashlibPlugin):
        def open(self, algorithm, key, variant=None):
            ctx = super().open(algorithm, key, variant)
            ctx.runner = lambda work: (lambda count: (_ for _ in ()).throw(KeyboardInterrupt))
            return ctx

    ctx = bench.open_context(Selection("interrupted", Interrupted()), "sha256")
    ctx.context.close = lambda: closes.append("closed") or time.sleep(3600)
    with pytest.raises(KeyboardInterrupt):
        ctx.measure(16, min_time=0.001, rounds=1)
    assert ctx.abandoned
    monkeypatch.setattr(qtimeout, "CLOSE_TIMEOUT", 0.2)
    started = time.monotonic()
    ctx.close()  # an abandoned context's close: bounded, errors ignored
    assert time.monotonic() - started < 3
    assert closes == ["closed"]


def test_a_crash_under_isolate_prints_no_stack_dump_of_the_child(pytester):
    """pytest enables faulthandler, which the forked child inherited: a crash printed a
    40-line stack before the one-line failure (found by a user trial)."""
    pytester.makeconftest(UNRESPONSIVE)
    r = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--qcrypto-digest", "sha256", "--qcrypto-plugin", "crashopen",
        "--qcrypto-size", "16", *FAST, "--qcrypto-isolate", timeout=120)
    r.assert_outcomes(failed=1)
    assert "the plugin crashed" in r.stdout.str()
    assert "Fatal Python error" not in r.stdout.str() + r.stderr.str()


@pytest.mark.parametrize("answer", ["sha256", None, 42])
def test_a_supported_answer_of_the_wrong_type_is_named(answer):
    """Found by a user trial: supported() returning the string "sha256" was read as its
    characters, and the item said only that the plugin did not support sha256."""
    class WrongAnswer(CryptoPlugin):
        name = "wronganswer"

        def supported(self):
            return answer

    plugin = WrongAnswer()
    registry = Registry([plugin])
    assert registry.supported(plugin) == frozenset()
    kind = type(answer).__name__
    assert registry.unavailable(plugin) == (
        f"could not list its algorithms: TypeError: supported() returned {kind}, expected a "
        "set of algorithm names")
