"""--qcrypto-jobs: exact aggregation with fake workers, real forked workers, usage errors."""

import json
import os
from itertools import repeat

import pytest

from conftest import FAST
from pytest_qcrypto import jobs, results
from pytest_qcrypto.harness import KIB, Measurement, TimerError
from pytest_qcrypto.jobs import JobsError, WorkerRound, aggregate, time_jobs


def test_total_bytes_over_the_common_window_is_exact():
    # worker 1: 1000 ops from 0.0 s to 1.0 s; worker 2: 1000 ops from 0.1 s to 1.25 s
    workers = [[WorkerRound(1000, 0, 1_000_000_000, 900_000_000)],
               [WorkerRound(1000, 100_000_000, 1_250_000_000, 1_100_000_000)]]
    count, windows, cpus = aggregate(workers)
    assert count == 2000
    assert windows == (1.25,)
    assert cpus == (2.0,)
    m = Measurement("sha256", "fake", 1024, "digest", count, windows, cpus)
    assert m.kib_per_s == 2000 * 1024 / 1.25 / KIB == 1600.0
    # never the sum of per-worker rates (1000 + 869.57 KiB/s here)
    assert m.kib_per_s != pytest.approx(1000 + 1000 / 1.15)


def test_saved_results_keep_each_worker_exactly(tmp_path):
    # the two workers above, as they reach the saved results: exact figures per worker
    workers = [[WorkerRound(1000, 0, 1_000_000_000, 900_000_000)],
               [WorkerRound(1000, 100_000_000, 1_250_000_000, 1_100_000_000)]]
    count, windows, cpus = aggregate(workers)
    m = Measurement("sha256", "fake", 1024, "digest", count, windows, cpus,
                    extra={"jobs": 2, "workers": jobs.worker_record(workers, 1024)})
    saved = results.Result.from_measurement(m, "t::x")
    assert saved.bytes_per_second == 2000 * 1024 / 1.25
    assert [(w.count, w.rounds_s, w.cpu_s, w.bytes_per_second) for w in saved.workers] == [
        (1000, (1.0,), (0.9,), 1000 * 1024 / 1.0),
        (1000, (1.15,), (1.1,), 1000 * 1024 / 1.15)]
    path = results.save(tmp_path / "r.json", results.ResultsFile([saved]))
    entry = json.loads(path.read_text())["results"][0]
    assert entry["jobs"] == 2
    assert entry["workers"][1] == {"count": 1000, "rounds_s": [1.15], "cpu_s": [1.1],
                                   "bytes_per_second": 1000 * 1024 / 1.15}
    assert results.load(path).results == [saved]


def test_each_round_has_its_own_window():
    workers = [[WorkerRound(10, 0, 100, 100), WorkerRound(10, 1000, 1200, 200)],
               [WorkerRound(10, 5, 150, 145), WorkerRound(10, 1010, 1100, 90)]]
    count, windows, cpus = aggregate(workers)
    assert count == 20
    assert windows == (150e-9, 200e-9)
    assert cpus == (245e-9, 290e-9)


@pytest.mark.parametrize("workers, error", [
    ([], ValueError),
    ([[]], ValueError),
    ([[WorkerRound(1, 0, 10, 10)], [WorkerRound(1, 0, 10, 10), WorkerRound(1, 0, 10, 10)]],
     ValueError),
    ([[WorkerRound(1, 0, 10, 10), WorkerRound(2, 0, 10, 10)]], ValueError),
    ([[WorkerRound(1, 5, 5, 0)], [WorkerRound(1, 5, 5, 0)]], TimerError),
])
def test_aggregate_rejects_what_cannot_be_summed(workers, error):
    with pytest.raises(error):
        aggregate(workers)


class FakeClock:
    """Calibration on a fake clock: each operation costs ``ns_per_op``."""

    def __init__(self, ns_per_op):
        self.ns_per_op = ns_per_op
        self.now = 0

    def run(self, count):
        self.now += count * self.ns_per_op

    def clock(self):
        return self.now


def test_time_jobs_with_fake_workers():
    fake = FakeClock(1_000)  # calibrates to 131072 operations per round
    calls = []

    def start(run, n, count, rounds, timeout_s, clocks):
        calls.append((n, count, rounds))
        # worker w runs each round in (1 + w/10) * count microseconds, all starting at 0
        return [[WorkerRound(count, r * 10**10, r * 10**10 + count * (1000 + 100 * w), 0)
                 for r in range(rounds)] for w in range(n)]

    timing = time_jobs(fake.run, 3, min_time=0.1, rounds=2, start=start, clock=fake.clock,
                       cpu_clock=fake.clock)
    assert calls == [(3, 131072, 2)]
    assert timing.count == 3 * 131072
    assert timing.rounds_s == (131072 * 1200e-9, 131072 * 1200e-9)  # the slowest worker ends last
    assert len(timing.workers) == 3 and all(len(w) == 2 for w in timing.workers)
    record = jobs.worker_record(timing.workers, 64)
    assert record[0]["kib_per_s"] == [131072 * 64 / (131072 * 1e-6) / KIB] * 2
    assert record[2]["rounds_s"] == [131072 * 1.2e-6] * 2
    json.dumps(record)  # saved results take it as is


def sha256_runner(count, buf=b"y" * 64):
    import hashlib

    for _ in repeat(None, count):
        hashlib.sha256(buf).digest()


def test_forked_workers_run_barrier_started_rounds():
    workers = jobs.fork_workers(sha256_runner, 2, 2000, 3, timeout_s=60)
    assert len(workers) == 2 and all(len(w) == 3 for w in workers)
    for rounds in workers:
        for r in rounds:
            assert r.count == 2000 and r.end_ns > r.start_ns and r.cpu_ns > 0
    for r in range(3):  # round r+1 starts only after every worker ended round r
        if r:
            assert min(w[r].start_ns for w in workers) >= max(w[r - 1].end_ns for w in workers)
    count, windows, _ = aggregate(workers)
    assert count == 4000 and all(w > 0 for w in windows)


def test_a_worker_that_raises_is_a_jobs_error_naming_it():
    parent = os.getpid()

    def run(count):
        if os.getpid() != parent:
            raise OSError("the engine went away")

    with pytest.raises(JobsError, match=r"2 of 2 workers failed; worker \d: OSError: the engine went away"):
        jobs.fork_workers(run, 2, 10, 2, timeout_s=30)


def test_a_worker_that_dies_is_a_jobs_error():
    def run(count):
        os._exit(3)

    with pytest.raises(JobsError, match=r"2 of 2 workers failed; worker \d: died \(exit code 3\)"):
        jobs.fork_workers(run, 2, 10, 1, timeout_s=5)


def test_when_one_worker_dies_the_others_stop_at_once(tmp_path):
    import time

    marker = tmp_path / "first"

    def run(count):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return  # the other worker carries on to the next barrier
        os._exit(5)

    started = time.monotonic()
    with pytest.raises(JobsError, match=r"worker \d: died \(exit code 5\)"):
        jobs.fork_workers(run, 2, 10, 3, timeout_s=60)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("text, expected", [("1", 1), ("2", 2), (" 3 ", 3), ("auto", None),
                                             ("AUTO", None)])
def test_parse_jobs(text, expected):
    assert jobs.parse_jobs(text) == (expected or jobs.cpu_count())


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", ""])
def test_bad_jobs_is_a_usage_error_naming_valid_values(pytester, value):
    r = pytester.runpytest("--qcrypto-digest", "sha256", f"--qcrypto-jobs={value}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert f"--qcrypto-jobs: {value!r} is not valid; give a whole number of worker processes " \
           "from 1 up, or 'auto'" in err, err
    assert "Traceback" not in err


SLOW_PLUGIN = '''
from itertools import repeat
import hashlib
from pytest_qcrypto.backends import Context, CryptoPlugin

class ConftestContext(Context):
    def digest(self, data):
        return hashlib.sha256(data).digest()
    def runner(self, work):
        def run(count, buf=work.data):
            for _ in repeat(None, count):
                hashlib.sha256(buf).digest()
        return run

class ConftestPlugin(CryptoPlugin):
    name = "conftest-sha"
    library = "hashlib, from a conftest"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return ConftestContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [ConftestPlugin()]
'''


def test_jobs_reach_a_plugin_from_a_conftest_and_report_each_worker(pytester):
    pytester.makeconftest(SLOW_PLUGIN)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "conftest-sha",
                           "--qcrypto-size", "64,1024", "--qcrypto-jobs", "2", "-v", *FAST)
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines([
        "conftest-sha sha256 64 bytes: * KiB/s from 2 jobs",
        "  worker 1: * KiB/s",
        "  worker 2: * KiB/s",
        "conftest-sha sha256 1024 bytes: * KiB/s from 2 jobs",
    ])


def test_a_saved_jobs_run_has_every_worker(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "64", "--qcrypto-jobs", "2",
                           "--qcrypto-save", "out.json", *FAST)
    r.assert_outcomes(passed=1)
    (entry,) = json.loads((pytester.path / "out.json").read_text())["results"]
    assert entry["jobs"] == 2 and len(entry["workers"]) == 2
    assert sum(w["count"] for w in entry["workers"]) == entry["count"]
    for w in entry["workers"]:
        assert len(w["rounds_s"]) == len(entry["rounds_s"]) == len(w["cpu_s"])
        median = sorted(w["rounds_s"])[(len(w["rounds_s"]) - 1) // 2]  # odd round counts
        assert w["bytes_per_second"] == w["count"] * 64 / median
        assert max(w["rounds_s"]) <= max(entry["rounds_s"])  # inside the common window


def test_without_verbose_no_worker_lines(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "64", "--qcrypto-jobs", "2", *FAST)
    r.assert_outcomes(passed=1)
    assert "worker 1:" not in r.stdout.str()


def test_jobs_through_the_qcrypto_fixture(pytester):
    pytester.makepyfile('''
def test_two_jobs(qcrypto):
    m = qcrypto.open("sha256", "hashlib").measure(256, min_time=0.001, rounds=2)
    assert m.extra["jobs"] == 2
    assert len(m.extra["workers"]) == 2
    assert m.count == sum(w["count"] for w in m.extra["workers"])
    assert len(m.rounds_s) == 2
''')
    r = pytester.runpytest("--qcrypto-jobs", "2")
    r.assert_outcomes(passed=1)
