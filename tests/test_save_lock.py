"""Two runs saving to one path (issue 24): the second waits for the lock, then fails naming the
first; the first run's results are never lost."""

import json
import os
import subprocess
import sys
import threading
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


def test_a_run_that_saved_while_this_one_waited_is_not_replaced(tmp_path):
    """Found trying issue 24's two concurrent runs: the second waited for the first, then ran
    and replaced the first run's file, both saying "saved"; it now fails naming that run."""
    path = tmp_path / "run.json"
    held = lock.acquire(path, wait=0)

    def first_run_saves():
        time.sleep(0.3)
        path.write_text('{"first": "run"}')
        held.release()

    threading.Thread(target=first_run_saves).start()
    with pytest.raises(lock.LockBusy) as info:
        lock.acquire(path, wait=5)
    assert str(info.value) == (f"{path} was saved by another run (pid {os.getpid()}, started "
                               f"{str(info.value).split('started ')[1].split(')')[0]}) while "
                               "this run waited for it; this run would replace those results: "
                               "save to another path, or run one after the other")
    assert path.read_text() == '{"first": "run"}' and not lock.lock_path(path).exists()


def test_a_run_that_ended_without_saving_leaves_the_path_to_the_waiting_one(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"older": "file"}')
    held = lock.acquire(path, wait=0)
    threading.Timer(0.3, held.release).start()  # a usage error, say: nothing written
    lock.acquire(path, wait=5).release()


#: The first run's test: it holds the lock until the second run has started, then 3 s more.
WAITS_FOR_SECOND = """
import os, time
import pytest

@pytest.mark.qcrypto("sha256", plugins=["hashlib"], sizes=[16])
def test_first(qcrypto_context):
    qcrypto_context.measure(16)
    for _ in range(1200):
        if os.path.exists("second-started"):
            break
        time.sleep(0.05)
    time.sleep(3)
"""
#: Both runs' conftest: the lock's wait outlasts the first run, whatever the load; the
#: second run says it started.
LONG_WAIT = """
import os
from pytest_qcrypto.results import lock

lock.WAIT = 120.0
if os.environ.get("QCRYPTO_TEST_SECOND"):
    open("second-started", "w").close()
"""


def test_two_concurrent_runs_never_lose_one(pytester, monkeypatch):
    """The second run starts while the first measures and waits for it: it used to run then
    and replace the first run's file; now it fails with exit 4."""
    pytester.makepyfile(test_slow=WAITS_FOR_SECOND)
    pytester.makeconftest(LONG_WAIT)
    saved = pytester.path / "run.json"
    first = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_slow.py",
         f"--qcrypto-save={saved}", *FAST], cwd=pytester.path,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(1200):  # until the first run holds the lock
            if (pytester.path / "run.json.lock").exists() and \
                    (pytester.path / "run.json.lock").read_text():
                break
            time.sleep(0.05)
        monkeypatch.setenv("QCRYPTO_TEST_SECOND", "1")
        second = pytester.runpytest_subprocess("--qcrypto-digest=md5", "--qcrypto-plugin=hashlib",
                                               "--qcrypto-size=16", f"--qcrypto-save={saved}",
                                               "-p", "no:cacheprovider", *FAST)
        out, _ = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 0, out
    assert second.ret == pytest.ExitCode.USAGE_ERROR, second.stdout.str()
    second.stderr.fnmatch_lines([f"ERROR: --qcrypto-save: {saved} was saved by another run "
                                 f"(pid {first.pid}, started *) while this run waited for it; *"])
    cells = [(r["algorithm"], r["size"]) for r in json.loads(saved.read_text())["results"]]
    assert cells == [("sha256", 16)]
