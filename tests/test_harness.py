"""The doubling-count loop with fake clocks: exact counts, rounds, medians, GC, frozen timers."""

import gc
import hashlib
import time
from itertools import repeat
from pathlib import Path

import pytest

from conftest import FAST
from pytest_qcrypto.measure import counts, harness
from pytest_qcrypto.measure.harness import Measurement, TimerError, time_runner


class FakeMachine:
    """A runner whose operations cost ``ns_per_op`` on a fake clock (CPU: ``cpu_share`` of it).

    ``extra_ns`` adds a fixed delay to the n-th run (0-based), to shape rounds.
    """

    def __init__(self, ns_per_op, cpu_share=1.0, extra_ns=None):
        self.ns_per_op = ns_per_op
        self.cpu_share = cpu_share
        self.extra_ns = extra_ns or {}
        self.now = 1_000_000
        self.cpu = 0
        self.counts = []
        self.gc_on = []

    def run(self, count):
        self.gc_on.append(gc.isenabled())
        cost = count * self.ns_per_op + self.extra_ns.get(len(self.counts), 0)
        self.counts.append(count)
        self.now += cost
        self.cpu += int(cost * self.cpu_share)

    def clock(self):
        return self.now

    def cpu_clock(self):
        return self.cpu

    def time(self, **kwargs):
        return time_runner(self.run, clock=self.clock, cpu_clock=self.cpu_clock, **kwargs)


def calibration(ns_per_op, min_time):
    """The calibration runs on a steady clock, worked out apart from the harness: 1, 2, 4...
    while a run is under 1/16 of min_time; then, unless that run reached min_time (one
    operation that long), the count whose run takes min_time x MARGIN, rounded up to whole
    operations.  The last is the first round."""
    runs, min_ns = [1], min_time * 1e9
    while runs[-1] * ns_per_op < min_ns / 16:
        runs.append(runs[-1] * 2)
    if runs[-1] * ns_per_op >= min_ns:
        return runs
    return runs + [-(-round(min_ns * counts.MARGIN) // ns_per_op)]


def runs_before_with_powers_of_two(ns_per_op, min_time):
    """The runs before the first round by the rule before this one (doubling, then the power
    of two predicted to reach min_time): the same doubling, then that power of two."""
    count, runs = 1, 0
    while count * ns_per_op < min_time * 1e9:
        if count * ns_per_op >= min_time * 1e9 / 16:
            return runs + 1  # the skip ahead reaches min_time on a steady clock
        count, runs = count * 2, runs + 1
    return runs


@pytest.mark.parametrize("ns_per_op", [1, 7, 200, 1_000, 16_280, 97_531, 3_000_000, 250_000_000])
@pytest.mark.parametrize("min_time", [0.1, 0.5, 2.0])
def test_count_is_the_one_predicted_to_take_min_time_times_the_margin(ns_per_op, min_time):
    fake = FakeMachine(ns_per_op)
    timing = fake.time(min_time=min_time, rounds=3)
    runs = calibration(ns_per_op, min_time)
    assert fake.counts == runs + [runs[-1]] * 2 and timing.count == runs[-1]
    assert timing.calibration_runs == len(runs) - 1 <= \
        runs_before_with_powers_of_two(ns_per_op, min_time)
    # every round lasts min_time to min_time x MARGIN, give or take the last operation
    # (250 ms operations: 3 of them for min_time 0.5 s; 1 for 0.1 s, more than min_time)
    op = ns_per_op / 1e9
    for r in timing.rounds_s:
        assert min_time <= r < max(min_time * counts.MARGIN, op) + op


def test_calibration_doubles_then_skips_ahead_and_the_last_run_is_the_first_round():
    fake = FakeMachine(1_000)  # 1 us per operation: 115000 operations take 0.1 s x 1.15
    timing = fake.time(min_time=0.1, rounds=3)
    # doubling up to the first run of at least 1/16 of min_time (8192 ops = 8.2 ms),
    # then straight to the count it predicts (8192 x 0.115 s / 8.192 ms), not to the next
    # power of two (131072: 0.131 s); two more rounds at that count
    assert fake.counts == [2**k for k in range(14)] + [115000, 115000, 115000]
    assert timing.rounds_s == (0.115, 0.115, 0.115) and timing.calibration_runs == 14


def test_kib_per_s_is_exact_for_known_inputs():
    fake = FakeMachine(1_000)  # 16 bytes per microsecond = 16e6 B/s = 15625 KiB/s
    timing = fake.time(min_time=0.1, rounds=3)
    m = Measurement("sha256", "fake", 16, "digest", timing.count, timing.rounds_s, timing.cpu_s)
    assert m.bytes_per_second == pytest.approx(16e6, rel=1e-12)
    assert m.kib_per_s == pytest.approx(15625.0, rel=1e-12)
    assert m.spread == 1.0


def test_the_median_round_is_reported_and_every_round_is_kept():
    # runs 0..13 calibrate (last one is run 14 = round 1); delay rounds 2 and 4
    fake = FakeMachine(1_000, extra_ns={15: 50_000_000, 17: 20_000_000})
    timing = fake.time(min_time=0.1, rounds=5)
    assert timing.rounds_s == pytest.approx((0.115, 0.165, 0.115, 0.135, 0.115))
    m = Measurement("sha256", "fake", 1024, "digest", timing.count, timing.rounds_s,
                    timing.cpu_s)
    assert m.median_s == pytest.approx(0.115)
    assert m.kib_per_s == pytest.approx(115000 * 1024 / 0.115 / 1024)
    assert m.spread == pytest.approx(0.165 / 0.115)


def test_median_cpu_is_that_of_the_median_round_by_wall_time():
    m = Measurement("sha256", "fake", 16, "digest", 1, (0.3, 0.1, 0.2), (0.29, 0.05, 0.11))
    assert m.median_s == 0.2
    assert m.median_cpu_s == 0.11


@pytest.mark.parametrize("rounds", [1, 2, 7])
def test_rounds_run_at_the_calibrated_count(rounds):
    fake = FakeMachine(500, cpu_share=0.5)
    timing = fake.time(min_time=0.01, rounds=rounds)
    assert len(timing.rounds_s) == len(timing.cpu_s) == rounds
    assert fake.counts[-rounds:] == [timing.count] * rounds
    assert timing.cpu_s == pytest.approx(tuple(r / 2 for r in timing.rounds_s))


@pytest.mark.parametrize("was_on", [True, False])
def test_gc_is_off_in_every_timed_run_and_restored_after(was_on):
    fake = FakeMachine(1_000)
    (gc.enable if was_on else gc.disable)()
    try:
        fake.time(min_time=0.01, rounds=3)
        assert not any(fake.gc_on)
        assert gc.isenabled() == was_on
    finally:
        gc.enable()


def test_a_stall_in_the_last_calibration_run_is_recalibrated_from_a_short_round():
    # 1 us per operation; the run of 1024 operations stalls for 0.35 s and ends calibration,
    # so the two rounds after it take 1.024 ms, under half of min-time: calibration starts
    # again from the count that rate predicts (1024 x 0.115 s / 1.024 ms = 115000), whose
    # run reaches min-time and is the first round again; all three rounds are timed again
    fake = FakeMachine(1_000, extra_ns={10: 350_000_000})
    timing = fake.time(min_time=0.1, rounds=3)
    assert fake.counts == [2**k for k in range(11)] + [1024, 1024] + [115000] * 3
    assert timing.count == 115000 and timing.recalibrations == 1 and timing.note == ""
    assert timing.rounds_s == (0.115, 0.115, 0.115) and timing.calibration_runs == 10


class Speeding(FakeMachine):
    """A fake machine whose operations get ``factor`` times faster from each run in ``at``."""

    def __init__(self, ns_per_op, at, factor, **kwargs):
        super().__init__(ns_per_op, **kwargs)
        self.at, self.factor = at, factor

    def run(self, count):
        if len(self.counts) in self.at:
            self.ns_per_op /= self.factor
        super().run(count)


class Shifting(FakeMachine):
    """A fake machine whose operations cost ``costs[k]`` ns from run ``k`` (0-based) on."""

    def __init__(self, costs, **kwargs):
        super().__init__(costs[0], **kwargs)
        self.costs = costs

    def run(self, count):
        self.ns_per_op = self.costs.get(len(self.counts), self.ns_per_op)
        super().run(count)


@pytest.mark.parametrize("ns_after, runs", [
    # 12% faster: the predicted run of 115000 takes 101.2 ms, still min-time (the margin)
    (880, [115000] * 3),
    # 20% faster: 92 ms, under min-time: predicted again from it (115000 x 0.115 s / 92 ms)
    (800, [115000] + [143750] * 3),
    # 10 times faster: 11.5 ms, over 1/16 of min-time: predicted again
    (100, [115000] + [1150000] * 3),
    # 100 times faster: 1.15 ms, under 1/16 of min-time: doubled to 9.2 ms, then predicted
    (10, [115000, 230000, 460000, 920000] + [11500000] * 3),
])
def test_a_prediction_that_undershoots_calibrates_again(ns_after, runs):
    # 1 us per operation until the skip ahead's run (run 14, of the 115000 operations that
    # 8192 in 8.192 ms predict), ns_after from it on
    fake = Shifting({0: 1_000, 14: ns_after})
    timing = fake.time(min_time=0.1, rounds=3)
    assert fake.counts == [2**k for k in range(14)] + runs
    assert timing.count == runs[-1] and timing.calibration_runs == 14 + len(runs) - 3
    assert min(timing.rounds_s) >= 0.1 and timing.recalibrations == 0 and timing.note == ""


def test_a_slowed_skip_ahead_run_predicts_too_few_and_calibration_goes_on():
    # a time slice of other work (4 ms) in the run of 8192 operations: 12.192 ms predict
    # 77271 (8192 x 0.115 s / 12.192 ms), whose run of 77.3 ms is under min-time and is
    # not a round: predicted again from it, 115000
    fake = FakeMachine(1_000, extra_ns={13: 4_000_000})
    timing = fake.time(min_time=0.1, rounds=3)
    assert fake.counts == [2**k for k in range(14)] + [77271] + [115000] * 3
    assert timing.calibration_runs == 15 and timing.rounds_s == (0.115,) * 3


def test_a_machine_that_keeps_getting_faster_ends_calibration_without_a_round():
    # from the skip ahead on, every run 1.25 times faster than the one before: each predicted
    # run takes 0.115 s / 1.25 = 92 ms, under min-time, again and again; the count grows
    # with every run and calibration stops at MAX_COUNT, never keeping a short round
    fake = Speeding(1_000, at=set(range(14, 1000)), factor=1.25)
    with pytest.raises(TimerError, match="operations still took under 0.1 s"):
        fake.time(min_time=0.1, rounds=3)
    grown = fake.counts[13:]
    assert all(b > a for a, b in zip(grown, grown[1:])) and grown[-1] == harness.MAX_COUNT
    assert len(fake.counts) < 100


def test_rounds_still_short_after_two_recalibrations_are_kept_with_a_note():
    # as above, but the operations get 16 times faster from the second round at each count
    # (runs 11, 14 and 17): the run of each new count reaches min-time and is the first
    # round, the two after it are short (1840000 x 62.5 ns = 0.115 s, then x 3.90625 ns =
    # 7.19 ms; 29440000 x 3.90625 ns = 0.115 s, then x 0.244 ns = 7.19 ms), and after two
    # recalibrations the rounds are kept, with the reason
    fake = Speeding(1_000, extra_ns={10: 350_000_000}, at={11, 14, 17}, factor=16)
    timing = fake.time(min_time=0.1, rounds=3)
    assert fake.counts == [2**k for k in range(11)] + [1024, 1024] + [1840000] * 3 + \
        [29440000] * 3
    assert timing.count == 29440000 and timing.recalibrations == 2
    assert timing.rounds_s == pytest.approx((0.115, 0.0071875, 0.0071875))
    assert timing.note == ("rounds of 7.19 ms, under half of min-time 0.1 s, after 2 "
                           "recalibrations (a stall during calibration)")
    m = Measurement("sha256", "fake", 16, "digest", timing.count, timing.rounds_s,
                    timing.cpu_s, calibration_note=timing.note)
    from pytest_qcrypto.measure import machine

    # the first round at each count reached min-time: kept short rounds spread too
    assert machine.noise(m) == [timing.note, "rounds spread 1500% (0.00719 to 0.115 s)"]


def test_one_short_round_is_named_as_one():
    assert harness.short_rounds_note([150e6, 2.35e6, 140e6], 0.1, 1) == (
        "a round of 2.35 ms, under half of min-time 0.1 s, after 1 recalibration (a stall "
        "during calibration)")
    assert harness.short_rounds_note([2.35e6, 7e6, 140e6], 0.1, 2).startswith(
        "rounds of 2.35 to 7 ms, ")


def test_a_single_round_cannot_be_short():
    fake = FakeMachine(1_000, extra_ns={10: 350_000_000})
    timing = fake.time(min_time=0.1, rounds=1)  # the only round is the last calibration run
    assert fake.counts == [2**k for k in range(11)] and timing.recalibrations == 0


def test_short_rounds_are_a_noisy_figure_under_the_tables(pytester):
    # every measurement's calibration on the fake machine of the test above
    pytester.makeconftest('''
import pytest
from pytest_qcrypto.measure import harness
from test_harness import Speeding

real = harness.time_runner

@pytest.fixture(autouse=True)
def stalled(monkeypatch):
    def on_the_fake(run, *, min_time, rounds, **kw):
        fake = Speeding(1_000, extra_ns={10: 350_000_000}, at={11, 14, 17}, factor=16)
        return real(fake.run, min_time=min_time, rounds=rounds, clock=fake.clock,
                    cpu_clock=fake.clock)
    monkeypatch.setattr(harness, "time_runner", on_the_fake)
''')
    pytester.syspathinsert(Path(__file__).parent)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", "--qcrypto-min-time", "0.1",
                           "--qcrypto-rounds", "3", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines([
        "noisy figure, short rounds: sha256 hashlib 16 bytes: rounds of 7.19 ms, under half of "
        "min-time 0.1 s, after 2 recalibrations (a stall during calibration)"])


def test_gc_is_restored_when_the_runner_raises():
    def boom(count):
        raise OSError("device gone")

    with pytest.raises(OSError):
        time_runner(boom)
    assert gc.isenabled()


@pytest.mark.parametrize("kwargs, message", [
    ({"min_time": 0}, "min_time must be more than 0 and at most 3600 seconds, not 0"),
    ({"min_time": float("nan")}, "min_time must be more than 0 and at most 3600 seconds"),
    ({"rounds": 0}, "rounds must be a whole number from 1 to 1000, not 0"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        time_runner(lambda n: None, **kwargs)


def sha256_runner(count, buf=b"x" * 16):
    for _ in repeat(None, count):
        hashlib.sha256(buf).digest()


def test_frozen_perf_counter_is_a_timer_error_within_two_seconds(monkeypatch):
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 123_456_789)
    started = time.monotonic()
    with pytest.raises(TimerError, match="the timer did not advance.*perf_counter_ns mocked"):
        time_runner(sha256_runner, min_time=0.1)
    assert time.monotonic() - started < 2.0


def test_frozen_timer_is_caught_quickly_whatever_min_time(monkeypatch):
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 0)
    started = time.monotonic()
    with pytest.raises(TimerError):
        time_runner(sha256_runner, min_time=60.0)
    assert time.monotonic() - started < 2.0


def test_a_timer_that_crawls_is_a_timer_error_too():
    ticks = iter(range(10**12))
    started = time.monotonic()
    with pytest.raises(TimerError):
        time_runner(sha256_runner, clock=lambda: next(ticks))  # 1 ns per reading
    assert time.monotonic() - started < 2.0


def test_frozen_guard_clock_stops_at_max_count_instead_of_hanging(monkeypatch):
    monkeypatch.setattr(harness, "MAX_COUNT", 2**10)
    with pytest.raises(TimerError, match="still took under"):
        time_runner(lambda n: None, clock=lambda: 0, guard=lambda: 0.0)


def test_frozen_clock_via_the_plain_api(monkeypatch):
    from pytest_qcrypto.measure import bench
    from pytest_qcrypto.backends.hashlib import HashlibPlugin
    from pytest_qcrypto.measure.registry import Selection

    with bench.open_context(Selection("hashlib", HashlibPlugin()), "sha256") as ctx:
        monkeypatch.setattr(time, "perf_counter_ns", lambda: 42)
        started = time.monotonic()
        with pytest.raises(TimerError):
            ctx.measure(16)
        assert time.monotonic() - started < 2.0


def test_frozen_clock_fails_the_item_with_one_line(pytester):
    pytester.makeconftest('''
import time
import pytest

@pytest.fixture(autouse=True)
def frozen(monkeypatch):
    monkeypatch.setattr(time, "perf_counter_ns", lambda: 1)
''')
    started = time.monotonic()
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", "--qcrypto-rounds", "1")
    assert time.monotonic() - started < 10
    r.assert_outcomes(failed=1)
    lines = r.stdout.lines
    head = next(i for i, line in enumerate(lines) if line.startswith("____"))
    end = next(i for i in range(head + 1, len(lines)) if lines[i].startswith("===="))
    body = [line for line in lines[head + 1:end] if line.strip()]
    assert len(body) == 1, body  # the whole failure is one line: no traceback, no context
    assert body[0].startswith("hashlib sha256 at 16 bytes: the timer did not advance")


def test_matrix_runs_with_a_working_clock(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", *FAST)
    r.assert_outcomes(passed=1)


def test_measurement_has_typed_fields_and_no_dict():
    """jobs, workers, the calibration note and figure_only are fields of their own (issue 12)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(harness.Measurement)
    assert not [f.name for f in dataclasses.fields(harness.Measurement)
                if typing.get_origin(hints[f.name]) is dict or hints[f.name] is dict]
    assert hints["jobs"] is int and hints["figure_only"] is bool
    assert hints["workers"] == tuple[harness.WorkerRecord, ...]
    m = harness.Measurement("sha256", "p", 16, "digest", 1, (1.0,))
    assert (m.jobs, m.workers, m.calibration_note, m.figure_only) == (1, (), "", False)
