"""Where calibration starts (pytest_qcrypto.measure.calibration): later sizes of the same
algorithm and plugin start from the count the sizes before them predict, on a fake clock
with a known per-call + per-byte cost: exact counts of every run, the runs saved, and the
fall-backs of a wrong prediction."""

import time

import pytest

from pytest_qcrypto.algorithms.settings import DEFAULT_SIZES
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.measure import bench, harness
from pytest_qcrypto.measure.calibration import Calibrations, key_of
from pytest_qcrypto.measure.harness import Measurement, time_runner
from pytest_qcrypto.measure.registry import Selection


class Clock:
    """A fake machine: an operation of ``size`` bytes costs ``per_call_ns`` + size x
    ``per_byte_ns`` of wall and CPU time (times ``speed``); every run's (size, count) kept."""

    def __init__(self, per_call_ns=1_000, per_byte_ns=0.5):
        self.per_call_ns, self.per_byte_ns, self.speed = per_call_ns, per_byte_ns, 1.0
        self.now = 1_000_000
        self.runs = []

    def runner(self, size):
        def run(count):
            self.runs.append((size, count))
            self.now += round(count * (self.per_call_ns + size * self.per_byte_ns) / self.speed)
        return run

    def clock(self):
        return self.now

    def counts(self, size):
        return [c for s, c in self.runs if s == size]


class Clocked(HashlibPlugin):
    """hashlib (its known answers are real) whose timed loops run on ``clock``."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock

    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        ctx.runner = lambda work: self.clock.runner(len(work.data))
        return ctx


@pytest.fixture
def fake(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(time, "perf_counter_ns", clock.clock)
    monkeypatch.setattr(time, "process_time_ns", clock.clock)
    return clock


def first_power_of_two(seconds, min_time):
    count = 1
    while count * seconds < min_time:
        count *= 2
    return count


def measure_sizes(fake, shared):
    """Each default size in its own context (as the matrix opens one per cell), sharing one
    Calibrations when ``shared``: {size: the counts of its runs}."""
    calibrations = Calibrations() if shared else None
    for size in DEFAULT_SIZES:
        with bench.open_context(Selection("clocked", Clocked(fake)), "sha256",
                                calibrations=calibrations) as ctx:
            m = ctx.measure(size, min_time=0.1, rounds=3)
        seconds = (fake.per_call_ns + size * fake.per_byte_ns) / 1e9
        assert m.count == first_power_of_two(seconds, 0.1)  # what doubling from 1 finds
        assert m.rounds_s == (m.count * seconds,) * 3
    return {size: fake.counts(size) for size in DEFAULT_SIZES}


def test_without_a_prediction_every_size_doubles_from_one(fake):
    runs = measure_sizes(fake, shared=False)
    thrown_away = {size: len(counts) - 3 for size, counts in runs.items()}
    # 1 us + 0.5 ns/B: doubling until a run reaches 1/16 of 0.1 s (8192 operations at
    # 16 B, 512 at 32 KiB), then the skip ahead to the first round
    assert thrown_away == {16: 14, 64: 14, 256: 14, 1024: 14, 4096: 13, 8192: 12, 32768: 10}
    assert runs[16][0] == 1 and runs[32768][0] == 1


def test_later_sizes_start_from_the_count_earlier_sizes_predict(fake):
    runs = measure_sizes(fake, shared=True)
    thrown_away = {size: len(counts) - 3 for size, counts in runs.items()}
    # 16 B: nothing known.  64 B: one size known, the most its cost can be (a plain rate:
    # 4 x 1.008 us) predicts 32768, 4 times too few: one run of 33 ms, then the skip ahead.
    # From 256 B: the line through two sizes is exact, and the first run is the first round.
    assert thrown_away == {16: 14, 64: 1, 256: 0, 1024: 0, 4096: 0, 8192: 0, 32768: 0}
    assert runs[64] == [32768] + [131072] * 3
    assert runs[32768] == [8192] * 3  # 17.4 us an operation: 8192 x 17.4 us = 0.143 s
    assert sum(thrown_away.values()) == 15  # against 91 without a prediction


def test_a_prediction_too_low_falls_back_to_doubling(fake):
    calibrations = Calibrations()
    opened = bench.open_context(Selection("clocked", Clocked(fake)), "sha256",
                                calibrations=calibrations)
    with opened as ctx:
        assert ctx.measure(16, min_time=0.1, rounds=3).count == 131072
        fake.speed = 64  # the plugin became 64 times faster: 131072 runs take 2 ms
        m = ctx.measure(16, min_time=0.1, rounds=3)
    # 2 ms, 4 ms: doubled; 8 ms reach 1/16 of min-time: skip to the predicted power of two
    assert fake.counts(16)[-6:] == [131072, 262144, 524288, 8388608, 8388608, 8388608]
    assert m.count == first_power_of_two(1.008e-6 / 64, 0.1) == 8388608


def test_a_prediction_far_too_high_is_not_a_round_and_is_chosen_again(fake):
    calibrations = Calibrations()
    with bench.open_context(Selection("clocked", Clocked(fake)), "sha256",
                            calibrations=calibrations) as ctx:
        ctx.measure(16, min_time=0.1, rounds=3)
        fake.speed = 1 / 8  # 8 times slower: 131072 operations take 1.06 s, over 2 x 0.1 s
        m = ctx.measure(16, min_time=0.1, rounds=3)
    assert fake.counts(16)[-4:] == [131072, 16384, 16384, 16384]
    assert m.count == 16384 and m.rounds_s == pytest.approx((16384 * 8.064e-6,) * 3)


@pytest.mark.parametrize("start, counts, thrown", [
    (131072, [131072] * 3, 0),  # right: 0.13 s, the first round
    (262144, [262144] + [131072] * 3, 1),  # twice too high: 0.26 s, not a round
    (65536, [65536] + [131072] * 3, 1),  # half: 66 ms, then the skip ahead
])
def test_a_first_run_under_twice_min_time_is_the_first_round(start, counts, thrown):
    clock = Clock(per_call_ns=1_000, per_byte_ns=0)
    t = time_runner(clock.runner(16), min_time=0.1, rounds=3, clock=clock.clock,
                    cpu_clock=clock.clock, start=start)
    assert clock.counts(16) == counts
    assert (t.count, t.calibration_runs) == (131072, thrown)


def test_the_stall_guard_still_recalibrates_from_a_predicted_start():
    # A prediction 16 times too low whose first run a stall of 95 ms held up to 103 ms:
    # it reached min-time, so it is the first round; the next two take 8 ms, under half of
    # min-time, and the count is chosen again from them (the stall guard, as from count 1).
    clock = Clock(per_call_ns=1_000, per_byte_ns=0)
    run = clock.runner(16)

    def stalled_first(count):
        if not clock.runs:
            clock.now += 95_000_000
        run(count)
    t = time_runner(stalled_first, min_time=0.1, rounds=3, clock=clock.clock,
                    cpu_clock=clock.clock, start=8192)
    assert clock.counts(16) == [8192, 8192, 8192, 131072, 131072, 131072]
    assert (t.count, t.recalibrations, t.calibration_runs) == (131072, 1, 0)


def test_start_outside_the_counts_is_a_value_error():
    with pytest.raises(ValueError, match=r"start must be a whole number of iterations from 1"):
        time_runner(lambda n: None, start=0)


def m_at(size, seconds_per_op, count=1000, **kw):
    return Measurement("sha256", "openssl", size, "digest", count,
                       (seconds_per_op * count,) * 3, **kw)


def test_the_prediction_from_one_two_and_more_sizes():
    c, key = Calibrations(), key_of("openssl", "sha256", "digest")
    assert c.seconds(key, 64) is None and c.start(key, 64, 0.1) == 1
    c.learn(m_at(1024, 2.024e-6))  # 1 us + 1 ns/B
    assert c.seconds(key, 1024) == pytest.approx(2.024e-6)
    assert c.seconds(key, 4096) == pytest.approx(4 * 2.024e-6)  # a plain rate above
    assert c.seconds(key, 16) == pytest.approx(2.024e-6)  # the same per-call cost below
    assert c.start(key, 16, 0.1) == 65536  # 2**16 x 2.024 us = 0.133 s: half the real count
    c.learn(m_at(16, 1.016e-6))
    assert c.seconds(key, 256) == pytest.approx(1.256e-6)  # between: the line
    assert c.seconds(key, 32768) == pytest.approx(33.768e-6)  # beyond: the line
    assert c.start(key, 32768, 0.1) == 4096  # 4096 x 33.8 us = 0.138 s; 2048: 0.069 s
    c.learn(m_at(64, 0.5e-6))  # faster than 16 B: the line through 16 and 64 falls...
    assert c.seconds(key, 32) == pytest.approx(2 * 1.016e-6)  # ...the bound from 16 B holds


def test_several_jobs_threads_and_counted_measurements_teach_nothing():
    c, key = Calibrations(), key_of("openssl", "sha256", "digest")
    c.learn(m_at(16, 1e-6, jobs=2))
    c.learn(m_at(16, 1e-6, threads=2))
    c.learn(m_at(16, 1e-6, counted=object()))
    assert c.seconds(key, 16) is None
    c.learn(m_at(16, 1e-6), checked=True)  # a checked round trip is another loop
    assert c.seconds(key, 16) is None
    assert c.seconds(key_of("openssl", "sha256", "digest", True), 16) == pytest.approx(1e-6)


def test_first_power_of_two():
    assert harness.first_power_of_two(1e-6, 0.1) == 131072
    assert harness.first_power_of_two(0.2, 0.1) == 1
    assert harness.first_power_of_two(0.0, 0.1) == 1
    assert harness.first_power_of_two(1e-15, 3600.0) == harness.MAX_COUNT


CLOCKED_CONFTEST = '''
import json, time
from pytest_qcrypto.backends.hashlib import HashlibPlugin

CLOCK = {"now": 1_000_000}
RUNS = []
SAVED = {}

def pytest_configure(config):
    SAVED.update(wall=time.perf_counter_ns, cpu=time.process_time_ns)
    time.perf_counter_ns = time.process_time_ns = lambda: CLOCK["now"]

def pytest_unconfigure(config):
    time.perf_counter_ns, time.process_time_ns = SAVED["wall"], SAVED["cpu"]
    with open("runs.json", "w") as f:
        json.dump(RUNS, f)

class Clocked(HashlibPlugin):
    name = "clocked"
    aliases = ()
    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        def runner(work):
            size = len(work.data)
            def run(count):
                RUNS.append([size, count])
                CLOCK["now"] += round(count * (1_000 + 0.5 * size))
            return run
        ctx.runner = runner
        return ctx

def pytest_qcrypto_plugins():
    return [Clocked()]
'''


def test_a_pytest_run_predicts_each_size_from_the_sizes_before_it(pytester):
    import json

    pytester.makeconftest(CLOCKED_CONFTEST)
    r = pytester.runpytest("--qcrypto-digest=sha256", "--qcrypto-plugin=clocked",
                           "--qcrypto-size=16,64,256", "--qcrypto-min-time=0.1",
                           "--qcrypto-rounds=3", "-p", "no:cacheprovider", "-p", "no:xdist")
    r.assert_outcomes(passed=3)
    runs = json.loads((pytester.path / "runs.json").read_text())
    by_size = {s: [c for size, c in runs if size == s] for s in (16, 64, 256)}
    # each cell opens its own context; the run's Calibrations carries what 16 B showed
    assert by_size[16] == [2**k for k in range(14)] + [131072] * 3
    assert by_size[64] == [32768] + [131072] * 3
    assert by_size[256] == [131072] * 3
