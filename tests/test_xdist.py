"""pytest-xdist: benchmarks never share the machine; everything else still runs in parallel.

The policy: under ``-n N`` with N > 0, every benchmark item (matrix cell, test
with ``@pytest.mark.qcrypto`` or the ``qcrypto`` fixture) is skipped on the
workers, the other tests run, and the controller prints one notice saying to
run benchmarks with ``-n 0``; no notice when no benchmark item was collected.
"""

import pytest

from conftest import FAST

NOTICE = ("qcrypto: {n} benchmark items skipped: pytest-xdist ran 2 workers, and a measurement "
          "must not share the machine with other work; run benchmarks with -n 0")
SKIP_REASON = ("not measured under pytest-xdist: a measurement must not share the machine with "
               "other tests; run benchmarks with -n 0")

PLAIN_TESTS = '''
def test_one():
    pass

def test_two():
    pass
'''

OWN_BENCHMARKS = '''
import pytest

@pytest.mark.qcrypto("md5", plugins=["hashlib"], sizes=[16])
def test_marked(qcrypto_case, qcrypto_context):
    qcrypto_context.measure(qcrypto_case.size)

def test_with_fixture(qcrypto):
    qcrypto.open("md5", "hashlib").measure(16)
'''

MATRIX = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16,64")


def notices(result):
    return [line for line in result.outlines if line.startswith("qcrypto: ") and "skipped" in line]


def test_n2_skips_every_benchmark_with_one_notice_and_runs_other_tests(pytester):
    """The matrix (explicit paths run beside it), a marked test and a fixture test."""
    pytester.makepyfile(test_plain=PLAIN_TESTS, test_own=OWN_BENCHMARKS)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", ".", *MATRIX, *FAST,
                                      "-rs", timeout=120)
    r.assert_outcomes(passed=2, skipped=4)
    assert notices(r) == [NOTICE.format(n=4)]
    skips = [line for line in r.outlines if line.startswith("SKIPPED [")]
    assert all(line.endswith(f": {SKIP_REASON}") for line in skips), skips
    assert sum(int(line.split("[")[1].split("]")[0]) for line in skips) == 4
    assert "Benchmark results" not in r.stdout.str()


def test_n2_without_benchmark_items_prints_no_notice(pytester):
    pytester.makepyfile(test_plain=PLAIN_TESTS)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", timeout=120)
    r.assert_outcomes(passed=2)
    assert notices(r) == []
    assert "-n 0" not in r.stdout.str()


def test_n0_measures_as_usual(pytester):
    r = pytester.runpytest("-n", "0", *MATRIX, *FAST)
    r.assert_outcomes(passed=2)
    assert notices(r) == []
    assert "Benchmark results for 'sha256' digest (KiB/s):" in r.outlines


def test_usage_errors_still_come_from_the_controller(pytester):
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--qcrypto-digest",
                                      "sha265", timeout=120)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "unknown digest 'sha265'" in r.stderr.str()
