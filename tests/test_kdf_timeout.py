"""A KDF derivation is one long call into C code that the alarm cannot interrupt: it runs in a
child process that is killed at --qcrypto-timeout (issue 24)."""

import time

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import bench


def test_kdfs_are_measured_in_a_child():
    assert bench.in_child(catalog.lookup("pbkdf2-sha256"))
    assert not bench.in_child(catalog.lookup("sha256"))


def test_a_long_derivation_ends_at_the_timeout(pytester):
    started = time.monotonic()
    r = pytester.runpytest("--qcrypto-kdf=pbkdf2-sha256-i100000000", "--qcrypto-timeout=3",
                           "--qcrypto-plugin=openssl", "--qcrypto-rounds=1")
    took = time.monotonic() - started
    assert took < 8, f"ran {took:.0f} s"
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*timed out after 3 s in openssl pbkdf2-sha256-i100000000 derive*"])
