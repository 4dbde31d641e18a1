"""Interrupted runs (Ctrl-C, a CI runner's SIGTERM) keep what they measured.

Each test starts pytest as a subprocess, waits until a test-double plugin is
stuck in the middle of the matrix, signals it, and checks the summary and the
saved results.  Every wait has a limit, so this suite cannot hang.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import FAST
from pytest_qcrypto import results
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
