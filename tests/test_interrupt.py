"""Interrupted runs (Ctrl-C, a CI runner's SIGTERM) keep what they measured.

Each test starts pytest as a subprocess, waits until a test-double plugin is
stuck in the middle of the matrix, signals it, and checks the summary and the
saved results.  Every wait has a limit, so this suite cannot hang.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import FAST
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure.interrupts import Interrupts, late_line
from test_timeout import MISBEHAVING_PLUGINS

SHA256 = "Benchmark results for 'sha256' digest (KiB/s):"


def interrupted_run(pytester, sig, *args):
    """Run hashlib, then a plugin that hangs; send ``sig`` once it hangs. (exit code, output)."""
    pytester.makeconftest(MISBEHAVING_PLUGINS)
    started = pytester.path / "started"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--qcrypto-digest", "sha256",
           "--qcrypto-plugin", "hashlib,sleepy", "--qcrypto-size", "16,64",
           "--qcrypto-timeout", "60", "--qcrypto-save", "results.json", *FAST, *args]
    # SIGINT as a terminal would deliver it, even when this suite runs with it ignored
    proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        give_up = time.monotonic() + 60
        while not started.exists() and proc.poll() is None and time.monotonic() < give_up:
            time.sleep(0.05)
        assert started.exists(), proc.communicate(timeout=30)[0]
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_prints_the_summary_and_saves_incomplete_results(pytester, sig):
    code, out = interrupted_run(pytester, sig)
    assert code == pytest.ExitCode.INTERRUPTED, out
    lines = out.splitlines()
    table = lines[lines.index(SHA256) + 1:lines.index(SHA256) + 3]
    assert table[0].split() == ["plugin", "16", "64"]
    assert table[1].split()[0] == "hashlib" and all(float(c) > 0 for c in table[1].split()[1:])
    assert "KeyboardInterrupt" in out
    path = pytester.path / "results.json"
    doc = json.loads(path.read_text())
    assert doc["complete"] is False
    saved = results.load(path)
    assert saved.complete is False
    assert sorted((r.plugin, r.size) for r in saved.results) == [("hashlib", 16), ("hashlib", 64)]
    assert 'results saved to' in out and '("complete": false)' in out


def test_interrupt_leaves_an_existing_results_file_untouched(pytester):
    (pytester.path / "results.json").write_text('{"earlier": "run"}')
    code, out = interrupted_run(pytester, signal.SIGTERM)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert (pytester.path / "results.json").read_text() == '{"earlier": "run"}'
    partial = results.load(pytester.path / "results.json.partial")
    assert partial.complete is False and len(partial.results) == 2


def test_interrupt_in_isolate_mode_kills_the_measurement_process(pytester):
    code, out = interrupted_run(pytester, signal.SIGINT, "--qcrypto-isolate")
    assert code == pytest.ExitCode.INTERRUPTED, out
    child = int((pytester.path / "started").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert results.load(pytester.path / "results.json").complete is False


# -- a second signal, and an interrupt while a context closes ------------------------------

#: A conftest hook that takes its time over an interrupt, as a slow plugin would: it notes
#: when pytest is handling the first interrupt, so that the second arrives right then.
SLOW_INTERRUPT_HOOK = '''

def pytest_keyboard_interrupt(excinfo):
    Path(__file__).with_name("handling").write_text("")
    time.sleep(2)
'''

#: The first line a results file of this suite starts with; what a baseline looks like
#: does not matter here, only that not one byte of it changes.
BASELINE = b'{\n "schema_version": 2,\n "complete": true,\n "results": []\n}\n'


def run_signalled(pytester, conftest, plugins, signals, *args):
    """Run pytest and send ``signals``, each ``(signal, wait)``: ``wait`` is a file to wait for
    (relative to the test folder) or seconds to sleep first.  (exit code, output)."""
    pytester.makeconftest(conftest)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--qcrypto-digest", "sha256",
           "--qcrypto-plugin", plugins, "--qcrypto-size", "16,64", "--qcrypto-timeout", "60",
           "--qcrypto-save", "r.json", *FAST, *args]
    proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for sig, wait in signals:
            if isinstance(wait, str):
                give_up = time.monotonic() + 60
                while (not (pytester.path / wait).exists() and proc.poll() is None
                       and time.monotonic() < give_up):
                    time.sleep(0.005)
                assert (pytester.path / wait).exists(), proc.communicate(timeout=30)[0]
            else:
                time.sleep(wait)
            proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out


def assert_baseline_kept(pytester, out):
    assert (pytester.path / "r.json").read_bytes() == BASELINE, out
    partial = results.load(pytester.path / "r.json.partial")
    assert partial.complete is False
    assert [(r.plugin, r.size) for r in partial.results] == [("hashlib", 16), ("hashlib", 64)]


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_second_signal_while_pytest_handles_the_first_keeps_the_baseline(pytester, second):
    """The second signal arrives while pytest handles the first, when its exit status still
    reads OK: the run must still count as interrupted, and the results still be saved."""
    (pytester.path / "r.json").write_bytes(BASELINE)
    code, out = run_signalled(pytester, MISBEHAVING_PLUGINS + SLOW_INTERRUPT_HOOK,
                              "hashlib,sleepy", [(signal.SIGINT, "started"), (second, "handling")])
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert_baseline_kept(pytester, out)
    assert re.search(r'the run did not finish: 2 results saved to \S*/r\.json\.partial '
                     r'\("complete": false\); \S*/r\.json left untouched', out), out
    # where the signal found the run, not the handler that turned it into KeyboardInterrupt
    assert re.search(r"^\S.*:\d+: KeyboardInterrupt$", out, re.MULTILINE), out
    assert "interrupts.py" not in out
    assert SHA256 in out  # the tables of what was measured, all the same


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_two_signals_10_ms_apart_keep_the_baseline(pytester, second):
    (pytester.path / "r.json").write_bytes(BASELINE)
    code, out = run_signalled(pytester, MISBEHAVING_PLUGINS, "hashlib,sleepy",
                              [(signal.SIGINT, "started"), (second, 0.01)])
    assert code != pytest.ExitCode.OK, out
    assert_baseline_kept(pytester, out)


def test_a_third_signal_takes_effect_at_once(pytester):
    """While the results are saved, one more signal waits; a third ends the run as it would
    without the plugin (here SIGTERM's default action), and still no baseline is replaced."""
    (pytester.path / "r.json").write_bytes(BASELINE)
    code, out = run_signalled(pytester, MISBEHAVING_PLUGINS + SLOW_INTERRUPT_HOOK,
                              "hashlib,sleepy", [(signal.SIGINT, "started"),
                                                 (signal.SIGINT, "handling"),
                                                 (signal.SIGTERM, 0.05)])
    assert code == -signal.SIGTERM, out
    assert (pytester.path / "r.json").read_bytes() == BASELINE


#: A plugin whose close() sleeps for good: it notes when a context starts closing.
SLEEPY_CLOSE = '''
import hashlib, os, time
from pathlib import Path
from pytest_qcrypto.backends import Context, CryptoPlugin
import pytest_qcrypto.measure.limits

pytest_qcrypto.measure.limits.CLOSE_TIMEOUT = 1.0  # 5 s, shortened for the test

class Sha256(Context):
    def digest(self, data):
        return hashlib.sha256(data).digest()
    def runner(self, work):
        return lambda count: [hashlib.sha256(work.data).digest() for _ in range(count)]
    def close(self):
        Path(__file__).with_name("closing").write_text(str(os.getpid()))
        while True:
            time.sleep(3600)

class SleepyClose(CryptoPlugin):
    name = "sleepyclose"
    library = "a test double whose close() never returns"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return Sha256(algorithm, key)

def pytest_qcrypto_plugins():
    return [SleepyClose()]
'''


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_while_a_known_answer_context_closes_ends_the_run(pytester, sig):
    """The interrupted context is abandoned: teardown closes it within the close limit."""
    started = time.monotonic()
    code, out = run_signalled(pytester, SLEEPY_CLOSE, "hashlib,sleepyclose",
                              [(sig, "closing")])
    assert time.monotonic() - started < 60
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert SHA256 in out
    saved = results.load(pytester.path / "r.json")
    assert saved.complete is False
    assert [(r.plugin, r.size) for r in saved.results] == [("hashlib", 16), ("hashlib", 64)]


# -- the watch itself, in this process ---------------------------------------------------------


def test_a_run_ran_to_its_end_only_when_every_item_finished_and_nothing_interrupted():
    watch = Interrupts()
    assert watch.ran_to_end  # nothing expected, nothing seen
    watch.expect(["qcrypto::sha256[hashlib-16]", "qcrypto::sha256[hashlib-64]"])
    watch.finished("qcrypto::sha256[hashlib-16]")
    assert not watch.ran_to_end
    watch.finished("qcrypto::sha256[hashlib-64]")
    assert watch.ran_to_end
    watch.note("KeyboardInterrupt")
    watch.note("SIGTERM")
    assert not watch.ran_to_end and watch.seen == "KeyboardInterrupt"


@pytest.fixture
def default_handlers():
    """SIGINT and SIGTERM as Python starts with them; the handlers found are put back."""
    earlier = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    for sig, handler in earlier.items():
        signal.signal(sig, handler)


def deliver(sig):
    os.kill(os.getpid(), sig)
    time.sleep(0.05)  # the handler runs in the main thread, between bytecodes


def test_the_second_signal_is_held_until_the_results_are_saved(default_handlers):
    watch = Interrupts()
    watch.catch()
    with pytest.raises(KeyboardInterrupt, match="^received SIGTERM$"):
        deliver(signal.SIGTERM)
    deliver(signal.SIGINT)  # held: no KeyboardInterrupt while the results are saved
    assert (watch.seen, watch.signals) == ("SIGTERM", 2)
    watch.release()  # saved: a signal now is late, noted, and changes nothing
    deliver(signal.SIGINT)
    assert (watch.seen, watch.signals, watch.late) == ("SIGTERM", 2, "SIGINT")
    watch.restore()  # the end of the run: each signal does what it would without the plugin
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    with pytest.raises(KeyboardInterrupt):
        deliver(signal.SIGINT)


def test_a_third_signal_is_not_held(default_handlers):
    watch = Interrupts()
    watch.catch()
    with pytest.raises(KeyboardInterrupt):
        deliver(signal.SIGINT)
    deliver(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        deliver(signal.SIGINT)  # the user insists: Python's own handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert watch.signals == 3


def test_signals_handled_by_someone_else_are_left_alone(default_handlers):
    def theirs(signum, frame):
        pass

    signal.signal(signal.SIGTERM, theirs)
    watch = Interrupts()
    watch.catch()
    assert signal.getsignal(signal.SIGTERM) is theirs
    assert signal.getsignal(signal.SIGINT) == watch._on_signal
    watch.restore()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_after_the_save_two_signals_are_late_and_a_third_acts(default_handlers):
    """Issue 24: a signal after the save raised KeyboardInterrupt out of interrupts.py (a
    traceback, exit 2, though the file was complete); now it is late: noted, held, the run's
    status kept.  A third takes effect at once."""
    watch = Interrupts()
    watch.catch()
    watch.release()  # the results were saved before any interrupt
    deliver(signal.SIGTERM)
    deliver(signal.SIGINT)
    assert (watch.late, watch.seen, watch.signals) == ("SIGTERM", None, 0)
    with pytest.raises(KeyboardInterrupt):
        deliver(signal.SIGINT)  # the user insists: Python's own handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_sighup_is_handled_like_sigterm(default_handlers):
    earlier = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        watch = Interrupts()
        watch.catch()
        with pytest.raises(KeyboardInterrupt, match="^received SIGHUP$"):
            deliver(signal.SIGHUP)
        assert watch.seen == "SIGHUP" and not watch.ran_to_end
        watch.restore()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGHUP, earlier)


def test_the_late_line_says_what_was_saved():
    assert late_line("SIGTERM", "qcrypto: 2 results saved to /t/r.json; added to the history "
                     "as h.json", 0) == ("qcrypto: SIGTERM after the run had ended, which it "
                                         "did not change: its results were complete and "
                                         "saved to /t/r.json; exit status 0")
    assert late_line("SIGINT", 'qcrypto: the run did not finish: 1 result saved to r.json '
                     '("complete": false)', 2) == (
        "qcrypto: SIGINT after the run had ended, which it did not change: its results were "
        "saved as said above; exit status 2")
    assert late_line("SIGHUP", None, 1) == ("qcrypto: SIGHUP after the run had ended, which "
                                            "it did not change: exit status 1")


def test_a_first_signal_after_every_item_ran_is_held_until_the_results_are_saved(
        default_handlers):
    watch = Interrupts()
    watch.catch()
    watch.expect(["qcrypto::sha256[hashlib-16]"])
    watch.finished("qcrypto::sha256[hashlib-16]")
    deliver(signal.SIGTERM)  # held: it would only cut the save short
    deliver(signal.SIGINT)
    assert (watch.seen, watch.signals) == ("SIGTERM", 2)
    with pytest.raises(KeyboardInterrupt):
        deliver(signal.SIGINT)  # a third: the user insists
    watch.release()


#: A conftest that makes saving slow (fsync of the results file) and says when it saves.
SLOW_SAVE = '''
import os, time
from pathlib import Path

_fsync = os.fsync

def slow_fsync(fd):
    Path(__file__).with_name("saving").write_text("")
    time.sleep(2)
    return _fsync(fd)

os.fsync = slow_fsync
'''


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_a_finished_run_saves_loses_nothing(pytester, sig):
    """Found by a user trial: one Ctrl-C during the save of a run that measured every item
    printed a traceback, no tables, and saved nothing."""
    code, out = run_signalled(pytester, SLOW_SAVE, "hashlib", [(sig, "saving")])
    assert "Traceback" not in out and SHA256 in out, out
    saved = results.load(pytester.path / "r.json")
    assert saved.complete is True, out
    assert [(r.plugin, r.size) for r in saved.results] == [("hashlib", 16), ("hashlib", 64)]
    assert code == pytest.ExitCode.OK, out


def test_an_interrupt_traceback_without_line_numbers_can_be_drawn():
    """Seen in CI (pytest 8.4, Python 3.11): a signal landed where CPython records no line
    (tb_lineno None), pytest's drawing of the interrupt raised TypeError, and the run exited 1
    instead of 2.  Such entries get their frame's line before pytest draws them."""
    from types import SimpleNamespace

    from pytest_qcrypto.pytest_side.matrix import lines_filled, with_line_numbers

    def interrupted():
        raise KeyboardInterrupt()

    try:
        interrupted()
    except KeyboardInterrupt:
        excinfo = pytest.ExceptionInfo.from_current()
    real = excinfo.tb
    lineless = SimpleNamespace(tb_frame=real.tb_frame, tb_lasti=real.tb_lasti, tb_lineno=None,
                               tb_next=real.tb_next)
    filled = lines_filled(lineless)
    assert isinstance(filled.tb_lineno, int) and filled.tb_frame is real.tb_frame
    assert filled.tb_next.tb_lineno == real.tb_next.tb_lineno  # lines it had are kept
    excinfo._excinfo = (excinfo.type, excinfo.value, lineless)  # as the signal left it
    excinfo._traceback = None
    with pytest.raises(TypeError):
        excinfo.getrepr(funcargs=True)  # what pytest's terminal reporter does
    with_line_numbers(excinfo)
    assert "KeyboardInterrupt" in str(excinfo.getrepr(funcargs=True))


#: A conftest whose terminal summary (after the results are saved) says so and takes 2 s.
SLOW_SUMMARY = '''
import time
from pathlib import Path

def pytest_terminal_summary(terminalreporter):
    Path(__file__).with_name("summary").write_text("")
    time.sleep(2)
'''


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_after_the_results_were_saved_keeps_the_status_and_says_so(pytester, sig):
    """Issue 24: in the second after "results saved" a signal gave a traceback from
    interrupts.py and exit 130 (SIGTERM too), though the file was complete."""
    code, out = run_signalled(pytester, SLOW_SUMMARY, "hashlib", [(sig, "summary")])
    assert code == pytest.ExitCode.OK, out
    assert "Traceback" not in out and "interrupts.py" not in out and "KeyboardInterrupt" not in out
    assert results.load(pytester.path / "r.json").complete is True
    late = [line for line in out.splitlines() if "after the run had ended" in line]
    assert late == [f"qcrypto: {signal.Signals(sig).name} after the run had ended, which it did "
                    f"not change: its results were complete and saved to "
                    f"{pytester.path / 'r.json'}; exit status 0"], out


def test_sighup_stops_a_run_as_sigterm_does(pytester):
    """Issue 24: SIGHUP (a closed terminal) ended the process: nothing saved, no tables."""
    code, out = interrupted_run(pytester, signal.SIGHUP)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert SHA256 in out and "received SIGHUP" in out
    saved = results.load(pytester.path / "results.json")
    assert saved.complete is False
    assert sorted((r.plugin, r.size) for r in saved.results) == [("hashlib", 16), ("hashlib", 64)]


def test_a_late_signal_under_qcrypto_speed_keeps_exit_0(pytester):
    """Issue 24: qcrypto speed said "interrupted" and exit 2 (the docs: file untouched) after
    it had replaced the file."""
    pytester.makeconftest(SLOW_SUMMARY)
    cmd = [sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "speed", "-P", "hashlib",
           "-D", "sha256", "--qcrypto-size=16", "--qcrypto-save=r.json", *FAST]
    proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        give_up = time.monotonic() + 60
        while not (pytester.path / "summary").exists() and proc.poll() is None \
                and time.monotonic() < give_up:
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "interrupted" not in err and "Traceback" not in err, err
    assert err.splitlines()[-1] == ("qcrypto: SIGINT after the run had ended, which it did not "
                                    "change: its results were complete and saved to "
                                    f"{pytester.path / 'r.json'}; exit status 0"), err
    assert results.load(pytester.path / "r.json").complete is True


def test_an_interrupted_compare_says_its_baseline_cells_were_not_judged(pytester):
    # the spread rounds measured hashlib's cells before sleepy hung, but their items never
    # ran: "not measured in this run" beside their figures in the table contradicted it
    pytester.makeconftest(MISBEHAVING_PLUGINS)
    saved = pytester.runpytest_subprocess("--qcrypto-digest", "sha256", "--qcrypto-plugin",
                                          "hashlib", "--qcrypto-size", "16,64",
                                          "--qcrypto-save", "base.json", *FAST)
    assert saved.ret == 0
    code, out = interrupted_run(pytester, signal.SIGINT, "--qcrypto-compare=base.json")
    assert code == pytest.ExitCode.INTERRUPTED, out
    lines = out.splitlines()
    start = lines.index("in the baseline, not judged: the run was interrupted before their "
                        "items:")
    assert lines[start + 1] == "  sha256 hashlib digest, size 64: not judged"  # 16 was judged
    assert "in the baseline but not measured in this run:" not in out
