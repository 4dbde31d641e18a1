"""The ``qcrypto`` fixture in a user's own tests: arguments that are no size at all fail the test."""

import pytest

from pytest_qcrypto.measure import bench

BAD_CALLS = '''
import pytest

@pytest.mark.parametrize("kwargs", [
    dict(size=-5), dict(size=0), dict(size=16.0), dict(size="16"), dict(size=True),
    dict(size=16, min_time=0), dict(size=16, min_time=float("nan")), dict(size=16, rounds=0),
    dict(size=16, rounds=2.5),
], ids=["size-5", "size0", "size16.0", "size-str", "size-True", "min_time0", "min_time-nan",
        "rounds0", "rounds2.5"])
def test_bad(qcrypto, kwargs):
    qcrypto.open("sha256", "hashlib").measure(**kwargs)

def test_over_the_limit(qcrypto):
    qcrypto.open("sha256", "hashlib").measure(10**12)

def test_closed(qcrypto):
    c = qcrypto.open("sha256", "hashlib")
    c.bench.close()
    c.measure(16, min_time=0.001, rounds=1)

def test_unsuited_size_is_skipped(qcrypto):
    qcrypto.open("aes-128-cbc", "openssl").measure(17, min_time=0.001, rounds=1)
'''


def test_a_size_that_is_no_size_fails_and_one_the_algorithm_cannot_take_skips(pytester):
    pytester.makepyfile(BAD_CALLS)
    r = pytester.runpytest("-rfs")
    r.assert_outcomes(failed=11, skipped=1)
    lines = r.outlines
    for failure in [
        "hashlib sha256: measure(): size must be a whole number of bytes from 1, not -5",
        "hashlib sha256: measure(): size must be a whole number of bytes from 1, not '16'",
        "hashlib sha256: measure(): size must be a whole number of bytes from 1, not True",
        "hashlib sha256: measure(): min_time must be more than 0 and at most 3600 seconds, "
        "not nan",
        "hashlib sha256: measure(): rounds must be a whole number from 1 to 1000, not 2.5",
        "hashlib sha256: measure(): size 1000000000000 bytes is over the limit of 268435456 "
        "(256 MiB)",
        "hashlib sha256 at 16 bytes: not measured, the context is closed",
    ]:
        assert failure in lines
    r.stdout.fnmatch_lines(["SKIPPED * openssl aes-128-cbc: aes-128-cbc is a 128-bit block "
                            "cipher in CBC mode without padding: the buffer size must be a "
                            "multiple of its 16-byte block, not 17"])
    assert "Traceback" not in r.stdout.str()


@pytest.mark.parametrize("size, min_time, rounds, problem", [
    (16, 0.1, 3, None),
    (1, 1e-9, 1, None),
    (0, 0.1, 3, "size must be a whole number of bytes from 1, not 0"),
    (16, float("inf"), 3, "min_time must be more than 0 and at most 3600 seconds, not inf"),
    (16, True, 3, "min_time must be more than 0 and at most 3600 seconds, not True"),
    (16, 0.1, False, "rounds must be a whole number from 1 to 1000, not False"),
])
def test_argument_problem(size, min_time, rounds, problem):
    assert bench.argument_problem(size, min_time, rounds) == problem


def test_a_cell_no_test_measured_is_not_called_skipped(pytester):
    pytester.makepyfile('''
def test_small(qcrypto):
    qcrypto.open("sha256", "hashlib").measure(16, min_time=0.001, rounds=1)

def test_large(qcrypto):
    qcrypto.open("sha256", "openssl").measure(64, min_time=0.001, rounds=1)
''')
    r = pytester.runpytest()
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines(["plugin *16 *64", "hashlib * -", "openssl * - *",
                            "  - hashlib (size 64): not measured in this run",
                            "  - openssl (size 16): not measured in this run"])



def test_an_unknown_algorithm_fails_with_the_nearest_names(pytester):
    pytester.makepyfile('''
def test_typo(qcrypto):
    qcrypto.open("sha265", "hashlib")
''')
    r = pytester.runpytest()
    r.assert_outcomes(failed=1)
    assert ("unknown algorithm 'sha265'; did you mean sha256, sha3-256, sha512? (see qcrypto "
            "list)") in r.outlines
    assert bench.resolve_algorithm("sha256").name == "sha256"
