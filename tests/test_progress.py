"""The progress line of the ``qcrypto`` and ``cryptotest`` commands, and how an interrupt
ends them (pytest_qcrypto.pytest_side.progress), and the interrupted table's ``-`` cells."""

import itertools
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

from conftest import FAST
from pytest_qcrypto.pytest_side import progress
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.tables import Cell, Table, table_lines, with_every_cell

MATRIX = ("-p", "no:cacheprovider", "--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
          "--qcrypto-size", "16,64,256", *FAST)
QCRYPTO = [sys.executable, "-m", "pytest_qcrypto.commands.qcrypto"]
CRYPTOTEST = [sys.executable, "-m", "pytest_qcrypto.commands.cryptotest"]
SPEED = [*QCRYPTO, "speed", "-P", "hashlib", "-D", "sha256", "--qcrypto-size=16,64,256",
         "--qcrypto-min-time=0.001", "--qcrypto-rounds=1"]
ESC = b"\x1b"


# -- the text -------------------------------------------------------------------------------

@pytest.mark.parametrize("seconds, text", [
    (0.2, "about 1 s left"), (40.4, "about 40 s left"), (59.4, "about 59 s left"),
    (59.6, "about 1 min left"), (95, "about 2 min left"), (3599, "about 1 h left"),
    (3600 + 5 * 60, "about 1 h 5 min left")])
def test_time_left_reads_in_seconds_minutes_or_hours(seconds, text):
    assert progress.left_text(seconds) == text


def test_the_line_counts_items_and_estimates_from_their_mean_duration():
    p = progress.Progress()
    p.total = 210
    assert p.line("sha3-224 openssl 4096 B") == "[1/210] sha3-224 openssl 4096 B"
    p.done, p.spent = 36, 36 * 0.4  # 0.4 s per item so far: 174 left take 69.6 s
    assert p.line("sha3-224 openssl 4096 B") == "[37/210] sha3-224 openssl 4096 B ... about 1 min left"


@pytest.mark.parametrize("args, line", [
    ((59, 210, "r.json"), "interrupted: 59 of 210 cells measured, results saved to r.json"),
    ((0, 3, None), "interrupted: 0 of 3 cells measured, nothing saved"),
    ((2, 3, None, "SIGTERM"), "interrupted by SIGTERM: 2 of 3 cells measured, nothing saved"),
    ((2, 3, None, "SIGINT"), "interrupted: 2 of 3 cells measured, nothing saved"),
    ((7, 7, "r.json", None, 7),
     "interrupted: 7 of 7 cells measured (7 with fewer rounds than planned), results saved "
     "to r.json")])
def test_the_interrupted_line(args, line):
    assert progress.interrupted_line(*args) == line


# -- in a pytest run (fake clock) -----------------------------------------------------------

def test_plain_lines_come_at_the_first_item_then_every_interval(pytester):
    clock = itertools.count(0.0, 5.0).__next__  # each item: starts, 5 s later ends
    result = pytester.runpytest(*MATRIX, "-qq", plugins=[
        progress.Progress(clock=clock, every=10.0, live=False)])
    assert result.ret == 0
    shown = [line for line in result.outlines if line.startswith("[")]
    # item 1 at 0 s (the first line), item 2 at 10 s, item 3 at 20 s: 10 s apart each time
    assert shown == ["[1/3] sha256 hashlib 16 B",
                     "[2/3] sha256 hashlib 64 B ... about 10 s left",
                     "[3/3] sha256 hashlib 256 B ... about 5 s left"]
    assert "\r" not in result.stdout.str()
    assert not any(set(line) == {"."} for line in result.outlines)  # no pytest dots


def test_plain_lines_skip_items_inside_the_interval(pytester):
    clock = itertools.count(0.0, 1.0).__next__
    result = pytester.runpytest(*MATRIX, "-qq", plugins=[
        progress.Progress(clock=clock, every=10.0, live=False)])
    assert [line for line in result.outlines if line.startswith("[")] == [
        "[1/3] sha256 hashlib 16 B"]


def test_live_line_is_rewritten_in_place_and_erased(pytester):
    clock = itertools.count(0.0, 5.0).__next__
    result = pytester.runpytest(*MATRIX, "-qq", plugins=[
        progress.Progress(clock=clock, live=True)])
    # (pytester splits its captured output at each carriage return, as at each newline)
    lines = [line.rstrip() for line in result.outlines]
    first = lines.index("[1/3] sha256 hashlib 16 B")
    assert lines[first:first + 4] == ["[1/3] sha256 hashlib 16 B",
                                      "[2/3] sha256 hashlib 64 B ... about 10 s left",
                                      "[3/3] sha256 hashlib 256 B ... about 5 s left",
                                      ""]  # erased before the summary
    # each rewrite fills the rest of the terminal line with spaces, to wipe a longer one
    assert len(result.outlines[first + 1]) > len(lines[first + 2])
    assert not any(set(line) == {"."} for line in lines)


def test_verbose_keeps_pytests_own_lines(pytester):
    result = pytester.runpytest(*MATRIX, "-v", plugins=[progress.Progress(live=False)])
    assert not any(line.startswith("[1/3]") for line in result.outlines)
    assert any("PASSED" in line for line in result.outlines)


# -- the commands ---------------------------------------------------------------------------

def run_in_pty(cmd, cwd, timeout=120):
    """Run ``cmd`` with standard error on a pseudo-terminal: (exit code, stdout, stderr)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    err = b""
    give_up = time.monotonic() + timeout
    try:
        while time.monotonic() < give_up:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # the child closed its end (Linux: EIO)
                    break
                if not data:
                    break
                err += data
            elif proc.poll() is not None:
                break
        out = proc.stdout.read()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, out, err


def test_qcrypto_speed_shows_a_live_line_on_a_terminal(tmp_path):
    code, out, err = run_in_pty(SPEED, tmp_path)
    assert code == 0, err
    assert b"\r[1/3] sha256 hashlib 16 B" in err
    assert b"\r[2/3] sha256 hashlib 64 B ... about " in err
    assert b"\r[3/3] sha256 hashlib 256 B ... about " in err
    # the tables alone on standard output, untouched by the line
    assert out.decode().splitlines()[:2] == ["Benchmark results for 'sha256' digest (KiB/s):",
                                             out.decode().splitlines()[1]]
    assert out.decode().splitlines()[1].split() == ["plugin", "16", "64", "256"]
    assert b"\r" not in out and ESC not in out and b"[1/3]" not in out


def test_piped_the_commands_write_plain_lines_without_escape_codes(tmp_path):
    proc = subprocess.run(SPEED, cwd=tmp_path, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ESC not in proc.stdout and ESC not in proc.stderr
    assert b"\r" not in proc.stderr and b"\r" not in proc.stdout
    assert proc.stderr.decode().splitlines()[0] == "[1/3] sha256 hashlib 16 B"
    assert proc.stdout.decode().splitlines()[1].split() == ["plugin", "16", "64", "256"]
    assert b"[1/3]" not in proc.stdout


def test_cryptotest_shows_the_line_too(tmp_path):
    proc = subprocess.run([*CRYPTOTEST, "-P", "openssl", "-a", "aes", "4", "16", "32"],
                          cwd=tmp_path, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode().splitlines()[0] == "[1/2] aes-128-cbc openssl 16 B, roundtrip"
    assert len(proc.stdout.decode().splitlines()) == 2 and b"[1/2]" not in proc.stdout


def test_plain_pytest_keeps_its_own_progress(pytester):
    result = pytester.runpytest_subprocess(*MATRIX)
    assert result.ret == 0
    assert not any(line.startswith("[1/3]") for line in result.outlines)
    assert any(line.startswith("qcrypto ...") and "[100%]" in line for line in result.outlines)


# -- an interrupt ---------------------------------------------------------------------------

#: A crypto plugin that measures 16 bytes and hangs from 64 bytes on, saying so in a file.
HALFWAY = '''
import os, time
from pathlib import Path
from pytest_qcrypto.backends.hashlib import HashlibPlugin

STARTED = Path(__file__).with_name("started")

class Halfway(HashlibPlugin):
    name = "halfway"
    aliases = ()
    default_rank = 90
    library = "hashlib, hanging from 64 bytes on"

    def open(self, algorithm, key, variant=None):
        context = super().open(algorithm, key, variant)
        inner = context.runner

        def runner(work):
            if len(work.data) >= 64:
                STARTED.write_text(str(os.getpid()))
                while True:
                    time.sleep(3600)
            return inner(work)

        context.runner = runner
        return context

def pytest_qcrypto_plugins():
    return [Halfway()]
'''


def interrupt(pytester, cmd, sig=signal.SIGINT):
    """Run ``cmd`` in the pytester directory with the halfway plugin; signal it once it
    hangs at 64 bytes.  (exit code, stdout, stderr)"""
    pytester.makeconftest(HALFWAY)
    started = pytester.path / "started"
    proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        give_up = time.monotonic() + 120
        while not started.exists() and proc.poll() is None and time.monotonic() < give_up:
            time.sleep(0.05)
        assert started.exists(), proc.communicate(timeout=30)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


HALF_SPEED = [*QCRYPTO, "speed", "-P", "halfway", "-D", "sha256", "--qcrypto-size=16,64,256",
              "--qcrypto-min-time=0.001", "--qcrypto-rounds=1", "--qcrypto-timeout=120"]


def test_an_interrupted_qcrypto_speed_ends_with_one_line(pytester):
    code, out, err = interrupt(pytester, [*HALF_SPEED, "--qcrypto-save=r.json"])
    assert code == pytest.ExitCode.INTERRUPTED, err
    assert err.splitlines()[-1] == "interrupted: 1 of 3 cells measured, results saved to r.json"
    assert "KeyboardInterrupt" not in err and "!!!" not in err and ".py:" not in err
    # the table: every size asked, '-' where the interrupt left the cell
    lines = out.splitlines()
    assert lines[1].split() == ["plugin", "16", "64", "256"]
    row = lines[2].split()
    assert row[0] == "halfway" and float(row[1]) > 0 and row[2:] == ["-", "-"]
    assert lines[3] == "  - halfway (size 64, 256): not measured in this run"


def test_an_interrupted_run_without_a_results_file_says_nothing_saved(pytester):
    code, out, err = interrupt(pytester, HALF_SPEED, signal.SIGTERM)
    assert code == pytest.ExitCode.INTERRUPTED, err
    assert err.splitlines()[-1] == ("interrupted by SIGTERM: 1 of 3 cells measured, "
                                    "nothing saved")
    assert "KeyboardInterrupt" not in err and "Traceback" not in err


def test_an_interrupted_cryptotest_ends_with_one_line(pytester):
    code, out, err = interrupt(pytester, [*CRYPTOTEST, "-P", "halfway", "-a", "sha256", "1",
                                          "16", "64", "256"])
    assert code == pytest.ExitCode.INTERRUPTED, err
    assert err.splitlines()[-1] == "interrupted: 1 of 3 cells measured, nothing saved"
    assert "KeyboardInterrupt" not in err and "!!!" not in err
    assert out.splitlines()[0].split()[-6:-4] == ["16", "bytes,"]


# -- the table ------------------------------------------------------------------------------

def _measured(size):
    return Measurement(algorithm="sha256", plugin="hashlib", size=size, direction="digest",
                       count=1000, rounds_s=(0.001,))


def test_every_requested_size_and_plugin_is_a_column_and_a_row():
    table = Table("sha256", "digest", "digest", ("hashlib",), (16,),
                  {("hashlib", 16): Cell(_measured(16))})
    other = Table("md5", "digest", "digest", ("hashlib",), (16,),
                  {("hashlib", 16): Cell(_measured(16))})
    full, untouched = with_every_cell([table, other], {"sha256"}, ["hashlib", "openssl"],
                                      [16, 64])
    assert untouched is other
    lines = table_lines(full)
    assert lines[1].split() == ["plugin", "16", "64"]
    assert lines[2].split()[0] == "hashlib" and lines[2].split()[2] == "-"
    assert lines[3].split() == ["openssl", "-", "-"]
    assert lines[4:] == ["  - hashlib (size 64): not measured in this run",
                         "  - openssl (all sizes): not measured in this run"]


# -- exit codes -----------------------------------------------------------------------------

def test_qcrypto_help_lists_every_exit_code(capsys):
    from pytest_qcrypto.commands import qcrypto as cli

    assert cli.main(["-h"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for said in ("0 done", "1 a cell failed", "2 interrupted", "3 an internal error",
                 "4 a usage error"):
        assert f" {said}" in text


def test_cryptotest_help_lists_every_exit_code(capsys):
    from pytest_qcrypto.commands import cryptotest

    assert cryptotest.main(["-h"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ("Exit codes: 0 all measured, 1 a failure or /dev/crypto missing, 2 interrupted "
            "(one line says what was measured), 3 an internal error (a bug), 4 a bad command "
            "line.") in text


def test_a_size_less_cell_is_named_by_its_operation(pytester):
    clock = itertools.count(0.0, 20.0).__next__
    result = pytester.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=openssl",
                                "--qcrypto-min-time=0.01", "--qcrypto-rounds=1", "-qq",
                                plugins=[progress.Progress(clock=clock, every=10.0, live=False)])
    assert result.ret == 0
    assert [line for line in result.outlines if line.startswith("[")] == [
        "[1/3] ed25519 openssl sign",
        "[2/3] ed25519 openssl verify ... about 40 s left",
        "[3/3] ed25519 openssl keygen ... about 20 s left"]  # openssl generates signature keys


def test_an_interrupted_run_leaves_no_partial_output_file(pytester):
    """Found by a fresh user: Ctrl-C with --qcrypto-format=bencher --qcrypto-output=F left F
    with the cells so far and no mark that it was partial.  Now F is not written (one line
    says so) and what was measured goes to standard output, as without the option."""
    code, out, err = interrupt(pytester, [*HALF_SPEED, "--qcrypto-format=bencher",
                                          "--qcrypto-output=bmf.json"])
    assert code == pytest.ExitCode.INTERRUPTED, err
    assert not (pytester.path / "bmf.json").exists()
    path = pytester.path / "bmf.json"
    assert err.splitlines()[-2:] == [
        f"qcrypto: interrupted: {path} not written (left as it was), as it would read as a "
        "whole run; the tables shown are what was measured",
        "interrupted: 1 of 3 cells measured, nothing saved"]
    assert list(json.loads(out)) == ["sha256 halfway 16 B digest"]
