"""Benchmarks in your own test suite, with the qcrypto fixtures.

Run: ``pytest examples/own_tests -v``.  Every measurement lands in the same
"Benchmark results" tables as the built-in matrix.  The floors below are
deliberately low (any machine of this decade passes them); set yours from a
saved baseline of your own hardware.
"""

import pytest

# 1. A marker parametrizes a test over algorithm x plugin x size; the
#    qcrypto_context fixture is the open context of that (algorithm, plugin).
@pytest.mark.qcrypto(algorithms=["sha256", "aes-128-gcm"], plugins=["openssl"],
                     sizes=[64, 4096])
def test_throughput_floor(qcrypto_case, qcrypto_context):
    m = qcrypto_context.measure(qcrypto_case.size)
    assert m.count > 0
    assert m.kib_per_s > 1000, f"{m.algorithm} on {m.plugin}: {m.kib_per_s:.0f} KiB/s"


# 2. The qcrypto fixture opens any context by hand: compare two plugins.
def test_hashlib_and_openssl_both_measured(qcrypto):
    figures = {}
    for plugin in ("hashlib", "openssl"):
        ctx = qcrypto.open("sha256", plugin)
        figures[plugin] = ctx.measure(32768).kib_per_s
    assert all(f > 0 for f in figures.values())
