"""A target whose gateway never answers (issue 24): the run waits --qcrypto-timeout, not 60 s,
and every process the target started is gone when the run ends."""

import os
import time

import pytest

from pytest_qcrypto.measure import procs

from conftest import FAST


def _alive(pid: int) -> bool:
    return procs._stat(pid) is not None


def test_a_gateway_that_never_opens_costs_the_timeout_and_leaves_no_process(pytester):
    script = pytester.path / "sleeper.sh"
    script.write_text(f"#!/bin/sh\necho $$ > {pytester.path}/shell.pid\n"
                      f"sleep 300 &\necho $! > {pytester.path}/sleep.pid\nwait\n")
    script.chmod(0o755)
    started = time.monotonic()
    r = pytester.runpytest("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                           "--qcrypto-size=16", f"--qcrypto-target=h=popen//python={script}",
                           "--qcrypto-timeout=2", *FAST)
    took = time.monotonic() - started
    assert took < 10, f"ran {took:.0f} s"
    r.stdout.fnmatch_lines(["*no answer within 2 s (--qcrypto-timeout) while opening the "
                            "gateway popen//python=*sleeper.sh; its processes were killed*"])
    pids = [int((pytester.path / name).read_text()) for name in ("shell.pid", "sleep.pid")]
    assert not [pid for pid in pids if _alive(pid)], "a target's process outlived the run"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_a_process_tree_is_found_and_killed():
    import subprocess
    shell = subprocess.Popen(["sh", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE,
                             text=True)
    sleeper = int(shell.stdout.readline())
    found = procs.tree([shell.pid])
    assert set(found) == {shell.pid, sleeper}
    procs.kill_tree(found)
    assert not _alive(shell.pid) and not _alive(sleeper)
    shell.wait()


def test_a_target_no_test_used_opens_within_the_run_s_timeout_too(tmp_path):
    from pytest_qcrypto.targets.link import Link

    script = tmp_path / "sleeper.sh"
    script.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/shell.pid\nexec sleep 300\n")
    script.chmod(0o755)
    link = Link("h", f"popen//python={script}", 1.0)  # as the summary's hello() finds it
    started = time.monotonic()
    assert link.hello() == {}
    assert time.monotonic() - started < 5
    assert link.problem.startswith("no answer within 1 s (--qcrypto-timeout)")
    assert not _alive(int((tmp_path / "shell.pid").read_text()))
