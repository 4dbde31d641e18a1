"""Benchmarks in your own test suite, with the qcrypto fixtures.

Run: ``pytest examples/own_tests -v``.  Every measurement lands in the same
"Benchmark results" tables as the built-in matrix.  The floor below is
deliberately low (a machine of this decade passes it even when busy); set
yours from a saved baseline of your own hardware.  The environment variable
lets this repository's test suite run the example without asserting any speed.
"""

import os

import pytest

#: KiB/s; a measurement below it fails its test (the regression gate's floor).
FLOOR_KIB_PER_S = float(os.environ.get("EXAMPLE_FLOOR_KIB_PER_S", "100"))


# 1. A marker parametrizes a test over algorithm x plugin x size; the
#    qcrypto_context fixture is the open context of that (algorithm, plugin).
@pytest.mark.qcrypto(algorithms=["sha256", "aes-128-gcm"], plugins=["openssl"],
                     sizes=[64, 4096], floor=FLOOR_KIB_PER_S)
def test_throughput_floor(qcrypto_case, qcrypto_context):
    m = qcrypto_context.measure(qcrypto_case.size)  # checks known answers, times, checks the floor
    assert m.size == qcrypto_case.size and m.count > 0


# 2. The qcrypto fixture opens any context by hand: compare two plugins.
def test_hashlib_and_openssl_both_measured(qcrypto):
    figures = {}
    for plugin in ("hashlib", "openssl"):
        ctx = qcrypto.open("sha256", plugin)
        figures[plugin] = ctx.measure(32768).kib_per_s
    assert all(f > 0 for f in figures.values())
