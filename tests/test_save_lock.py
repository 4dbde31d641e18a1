"""Two runs saving to one path (issue 24): the second waits for the lock, then fails naming the
first; the first run's results are never lost."""

import json
import os
import subprocess
import sys
import time

import pytest

from pytest_qcrypto.results import lock

from conftest import FAST

SLOW_TEST = """
import time
import pytest

@pytest.mark.qcrypto("sha256", plugins=["hashlib"], sizes=[16])
def test_first(qcrypto_context):
    qcrypto_context.measure(16)
    time.sleep(float(__import__("os").environ["HOLD"]))
"""


def test_a_second_run_fails_naming_the_first_and_the_first_keeps_its_cells(pytester,
                                                                          monkeypatch):
    monkeypatch.setattr(lock, "WAIT", 1.0)
    pytester.makepyfile(test_slow=SLOW_TEST)
    saved = pytester.path / "run.json"
    first = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_slow.py",
         f"--qcrypto-save={saved}", *FAST], cwd=pytester.path, env={**os.environ, "HOLD": "4"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(200):  # until the first run holds the lock
            if (pytester.path / "run.json.lock").exists() and \
                    (pytester.path / "run.json.lock").read_text():
                break
            time.sleep(0.05)
        second = pytester.runpytest("--qcrypto-digest=md5", "--qcrypto-plugin=hashlib",
                                    "--qcrypto-size=16", f"--qcrypto-save={saved}", *FAST)
        out, _ = first.communicate(timeout=120)
    finally:
        first.kill()
    assert second.ret == pytest.ExitCode.USAGE_ERROR
    second.stderr.fnmatch_lines([f"ERROR: --qcrypto-save: {saved} is being saved by another run "
                                 f"(pid {first.pid}, started *); waited 1 s: save to another "
                                 "path, or run one after the other"])
    assert first.returncode == 0, out
    cells = [(r["algorithm"], r["size"]) for r in json.loads(saved.read_text())["results"]]
    assert cells == [("sha256", 16)]
    assert not (pytester.path / "run.json.lock").exists()


def test_the_lock_waits_for_a_run_that_finishes(tmp_path):
    path = tmp_path / "run.json"
    held = lock.acquire(path, wait=0)
    with pytest.raises(lock.LockBusy, match=rf"pid {os.getpid()}, started "):
        lock.acquire(path, wait=0.2)
    held.release()
    again = lock.acquire(path, wait=0)  # released: taken at once
    again.release()
    assert not lock.lock_path(path).exists()
