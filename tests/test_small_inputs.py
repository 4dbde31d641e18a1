"""The smaller input checks of issue 24: huge counts in the jobs' waits, generator and async
callables, seeds, empty sizes, a bad marker that fails only its own test."""

import threading

import pytest

from pytest_qcrypto.measure import callables, jobs
from pytest_qcrypto.measure.randomness import Randomness


def test_a_huge_count_does_not_overflow_the_workers_wait():
    seen = {}

    def start(run, n, count, rounds, timeout_s, clocks):
        seen["timeout"] = timeout_s
        threading.Barrier(1).wait(timeout_s)  # OverflowError: timeout is too large, before
        return [[jobs.WorkerRound(count, 0, 10**9, 10**9)] for _ in range(n)]

    jobs._fixed_jobs(lambda count: None, 2, 10_000_000_000, 1, start,
                     (lambda: 0, lambda: 0))
    assert seen["timeout"] <= jobs.MAX_WAIT_S
    assert jobs.workers_timeout(2, 1e300) == jobs.MAX_WAIT_S


def gen(data):
    yield data


async def coro(data):
    return data


@pytest.mark.parametrize("fn, what, instead", [
    (gen, "a generator function (gen)", "lambda data: list(fn(data))"),
    (coro, "an async function (coro)", "lambda data: asyncio.run(fn(data))")])
def test_generator_and_async_functions_are_refused_with_what_to_pass(fn, what, instead):
    with pytest.raises(ValueError, match="fn is ") as info:
        callables.measure_callable(fn, 16, min_time=0.001, rounds=1)
    assert what in str(info.value) and instead in str(info.value)


@pytest.mark.parametrize("seed", ["abc", 1.5, 2**10000, True], ids=["abc", "1.5", "2**10000", "True"])
def test_a_seed_goes_through_the_one_parser(seed):
    with pytest.raises(ValueError, match="seed: "):
        callables.measure_callable(len, 16, min_time=0.001, rounds=1, seed=seed)
    with pytest.raises(ValueError, match="seed: "):
        Randomness(seed)


def test_a_bad_marker_fails_its_test_by_name_and_the_module_runs(pytester):
    pytester.makepyfile(test_m="""
import pytest

def gen(data):
    yield data

@pytest.mark.qcrypto("sha256", plugins=["hashlib"], sizes=[])
def test_no_sizes(qcrypto_case, qcrypto_context):
    pass

@pytest.mark.qcrypto(callable=gen, sizes=[16])
def test_generator(qcrypto_case, qcrypto_context):
    pass

def test_other():
    pass
""")
    r = pytester.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(passed=1, errors=2)
    r.stdout.fnmatch_lines_random([
        "test_no_sizes: @pytest.mark.qcrypto: sizes=[]: give at least one size, or leave sizes "
        "out for the run's sizes",
        "test_generator: @pytest.mark.qcrypto: callable=: fn is a generator function (gen)*"])
