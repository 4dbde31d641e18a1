"""measure_callable's timeout takes what --qcrypto-timeout takes: seconds more than 0 and
at most a day, or None; anything else is a one-line ValueError before anything runs."""

import math

import pytest

import pytest_qcrypto


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, True, "5", 86401])
def test_a_bad_timeout_is_refused_before_anything_runs(timeout):
    calls = []
    with pytest.raises(ValueError) as info:
        pytest_qcrypto.measure_callable(calls.append, 16, timeout=timeout)
    assert str(info.value) == ("timeout must be a number of seconds more than 0 and at most "
                               f"86400, or None for no limit, not {timeout!r}")
    assert calls == []


def test_a_good_timeout_measures():
    m = pytest_qcrypto.measure_callable(len, 16, timeout=30, min_time=0.001, rounds=1)
    assert m.count >= 1 and m.size == 16
