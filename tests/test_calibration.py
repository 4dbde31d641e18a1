"""Where calibration starts (pytest_qcrypto.measure.calibration): later sizes of the same
algorithm and plugin start from the count the sizes before them predict, on a fake clock
with a known per-call + per-byte cost: exact counts of every run, the runs saved, and the
fall-backs of a wrong prediction."""

import time

import pytest

from pytest_qcrypto.algorithms.settings import DEFAULT_SIZES
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.measure import bench, counts
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


def predicted(ns_per_op, min_time=0.1):
    """The count whose run takes min_time x 1.15 on a steady clock, rounded up to whole
    operations (worked out apart from the harness, in whole nanoseconds)."""
    return -(-round(min_time * 1e9 * 1.15) // ns_per_op)


def measure_sizes(fake, shared):
    """Each default size in its own context (as the matrix opens one per cell), sharing one
    Calibrations when ``shared``: {size: the counts of its runs}."""
    calibrations = Calibrations() if shared else None
    for size in DEFAULT_SIZES:
        with bench.open_context(Selection("clocked", Clocked(fake)), "sha256",
                                calibrations=calibrations) as ctx:
            m = ctx.measure(size, min_time=0.1, rounds=3)
        ns = fake.per_call_ns + size * fake.per_byte_ns  # whole nanoseconds at these sizes
        assert m.count == predicted(ns)  # what doubling from 1, then the skip ahead, find
        assert m.rounds_s == (m.count * ns / 1e9,) * 3
        assert 0.1 <= m.rounds_s[0] < 0.1 * counts.MARGIN + ns / 1e9
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
    # 4 x 1.008 us) predicts 28522 (0.115 s / 4.032 us), 3.9 times too few: one run of
    # 29 ms, then the skip ahead to 111435 (0.115 s / 1.032 us).
    # From 256 B: the line through two sizes is exact, and the first run is the first round.
    assert thrown_away == {16: 14, 64: 1, 256: 0, 1024: 0, 4096: 0, 8192: 0, 32768: 0}
    assert runs[64] == [28522] + [111435] * 3
    assert runs[32768] == [6616] * 3  # 17.384 us an operation: 6616 x 17.384 us = 0.11501 s
    assert sum(thrown_away.values()) == 15  # against 91 without a prediction


@pytest.mark.parametrize("per_call_ns, per_byte_ns, min_time", [
    (1_000, 0.5, 0.1), (250, 0.25, 0.1), (5_000, 2.0, 0.5)])
def test_a_predicted_start_reaches_min_time_in_one_run(monkeypatch, per_call_ns, per_byte_ns,
                                                        min_time):
    clock = Clock(per_call_ns, per_byte_ns)
    monkeypatch.setattr(time, "perf_counter_ns", clock.clock)
    monkeypatch.setattr(time, "process_time_ns", clock.clock)
    calibrations = Calibrations()
    for size in DEFAULT_SIZES:
        with bench.open_context(Selection("clocked", Clocked(clock)), "sha256",
                                calibrations=calibrations) as ctx:
            m = ctx.measure(size, min_time=min_time, rounds=3)
        if size >= 256:  # two sizes measured before: the line through them is the cost
            ns = per_call_ns + size * per_byte_ns
            assert clock.counts(size) == [m.count] * 3  # the first run is the first round
            assert m.count == predicted(ns, min_time)
            assert min_time <= m.rounds_s[0] < min_time * counts.MARGIN + ns / 1e9


def test_a_prediction_too_low_falls_back_to_doubling(fake):
    calibrations = Calibrations()
    opened = bench.open_context(Selection("clocked", Clocked(fake)), "sha256",
                                calibrations=calibrations)
    with opened as ctx:
        assert ctx.measure(16, min_time=0.1, rounds=3).count == 114088
        fake.speed = 64  # the plugin became 64 times faster: 114088 runs take 1.8 ms
        m = ctx.measure(16, min_time=0.1, rounds=3)
    # 1.8 ms, 3.6 ms: doubled; 7.2 ms reach 1/16 of min-time: skip to the count it predicts
    # (456352 x 0.115 s / 7.187544 ms), whose run of 0.115 s is the first round
    assert fake.counts(16)[-6:] == [114088, 228176, 456352, 7301588, 7301588, 7301588]
    assert m.count == predicted(15.75) == 7301588  # 1008 ns / 64


def test_a_prediction_far_too_high_is_not_a_round_and_is_chosen_again(fake):
    calibrations = Calibrations()
    with bench.open_context(Selection("clocked", Clocked(fake)), "sha256",
                            calibrations=calibrations) as ctx:
        ctx.measure(16, min_time=0.1, rounds=3)
        fake.speed = 1 / 8  # 8 times slower: 114088 operations take 0.92 s, over 2 x 0.1 s
        m = ctx.measure(16, min_time=0.1, rounds=3)
    assert fake.counts(16)[-4:] == [114088, 14261, 14261, 14261]  # 0.115 s / 8.064 us
    assert m.count == 14261 and m.rounds_s == pytest.approx((14261 * 8.064e-6,) * 3)


@pytest.mark.parametrize("start, runs, count, thrown", [
    (115000, [115000] * 3, 115000, 0),  # right: 0.115 s, the first round
    (131072, [131072] * 3, 131072, 0),  # a little high: 0.131 s, kept (under twice)
    (230000, [230000] + [115000] * 3, 115000, 1),  # twice too high: 0.23 s, not a round
    (57500, [57500] + [115000] * 3, 115000, 1),  # half: 57.5 ms, then the skip ahead
])
def test_a_first_run_under_twice_min_time_is_the_first_round(start, runs, count, thrown):
    clock = Clock(per_call_ns=1_000, per_byte_ns=0)
    t = time_runner(clock.runner(16), min_time=0.1, rounds=3, clock=clock.clock,
                    cpu_clock=clock.clock, start=start)
    assert clock.counts(16) == runs
    assert (t.count, t.calibration_runs) == (count, thrown)


def test_the_stall_guard_still_recalibrates_from_a_predicted_start():
    # A prediction 14 times too low whose first run a stall of 95 ms held up to 103 ms:
    # it reached min-time, so it is the first round; the next two take 8 ms, under half of
    # min-time, and calibration starts again from the count they predict (the stall guard,
    # as from count 1), whose run of 0.115 s is the first round.
    clock = Clock(per_call_ns=1_000, per_byte_ns=0)
    run = clock.runner(16)

    def stalled_first(count):
        if not clock.runs:
            clock.now += 95_000_000
        run(count)
    t = time_runner(stalled_first, min_time=0.1, rounds=3, clock=clock.clock,
                    cpu_clock=clock.clock, start=8192)
    assert clock.counts(16) == [8192, 8192, 8192, 115000, 115000, 115000]
    assert (t.count, t.recalibrations, t.calibration_runs) == (115000, 1, 0)


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
    assert c.start(key, 16, 0.1) == 56819  # 56819 x 2.024 us = 0.115 s: half of 113189
    c.learn(m_at(16, 1.016e-6))
    assert c.seconds(key, 256) == pytest.approx(1.256e-6)  # between: the line
    assert c.seconds(key, 32768) == pytest.approx(33.768e-6)  # beyond: the line
    assert c.start(key, 32768, 0.1) == 3406  # 3406 x 33.768 us = 0.11501 s; 3405: 0.11498
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


def test_the_count_for_a_cost_per_operation():
    assert counts.MARGIN == 1.15  # the counts in these tests are worked out with it
    assert counts.count_for(1e-6, 0.1) == 115000  # not 115001: float noise adds no operation
    assert counts.count_for(1.008e-6, 0.1) == 114088  # 114087.3, rounded up
    assert counts.count_for(0.2, 0.1) == 1
    assert counts.count_for(0.0, 0.1) == counts.count_for(float("nan"), 0.1) == 1
    assert counts.count_for(1e-15, 3600.0) == counts.MAX_COUNT
    assert counts.count_for(5e-324, 0.1) == counts.MAX_COUNT  # a ratio past a float's range


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
    assert by_size[16] == [2**k for k in range(14)] + [114088] * 3
    assert by_size[64] == [28522] + [111435] * 3
    assert by_size[256] == [101951] * 3
