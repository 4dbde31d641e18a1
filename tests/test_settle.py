"""Rounds that settle (pytest_qcrypto.measure.harness, ``settle``): once the first
``rounds // 2 + 1`` rounds agree within the fraction, the rest are not timed, and the figure
is never further from the one every round would give than that fraction.  On fake clocks:
exact rounds taken; and which runs settle (a plain run at the default rounds) and which time
every round (rounds asked for, a run that saves)."""

import json
import statistics
import time

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from pytest_qcrypto.measure import harness
from pytest_qcrypto.measure.harness import SETTLE, time_runner

MIN_NS = 100_000_000  # min-time 0.1 s


class Rounds:
    """A fake machine whose n-th run of the count the calibration chose takes ``times[n]``
    nanoseconds; calibration (from a start that reaches min-time at once) is its first run."""

    def __init__(self, times_ns):
        self.times, self.now, self.runs = list(times_ns), 0, 0

    def run(self, count):
        self.now += self.times[self.runs]
        self.runs += 1

    def clock(self):
        return self.now


def timed(times_ns, rounds=3, settle=SETTLE):
    fake = Rounds(times_ns)
    t = time_runner(fake.run, min_time=MIN_NS / 1e9, rounds=rounds, clock=fake.clock,
                    cpu_clock=fake.clock, start=1000, settle=settle)
    return t, fake.runs


def test_two_rounds_that_agree_settle_the_default_three():
    t, runs = timed([110_000_000, 111_000_000, 999_000_000])
    assert runs == 2 and t.rounds_s == (0.11, 0.111)


def test_rounds_that_disagree_by_more_than_the_fraction_take_the_third():
    t, runs = timed([110_000_000, 113_400_000, 112_000_000])  # 3.1% apart: not settled
    assert runs == 3 and t.rounds_s == (0.11, 0.1134, 0.112)


def test_at_exactly_the_fraction_they_settle():
    t, runs = timed([100_000_000, 102_000_000, 500_000_000])
    assert runs == 2


def test_without_settle_every_round_is_timed():
    t, runs = timed([110_000_000, 110_000_000, 110_000_000], settle=0.0)
    assert runs == 3 and len(t.rounds_s) == 3


def test_five_rounds_settle_after_three_that_agree_never_after_two():
    assert timed([110_000_000, 110_500_000, 111_000_000, 900_000_000, 900_000_000],
                 rounds=5)[1] == 3
    # the third disagrees: from then on the first rounds never agree (130 is among them)
    assert timed([110_000_000, 110_500_000, 130_000_000, 111_000_000, 111_000_000],
                 rounds=5)[1] == 5


def test_one_and_two_rounds_are_all_timed():
    assert timed([110_000_000, 140_000_000], rounds=2)[1] == 2
    assert timed([110_000_000], rounds=1)[1] == 1


def test_a_stall_is_still_recalibrated_when_the_short_rounds_agree():
    # calibration ran at a count that a stall made look long: rounds of 30 ms that agree
    # are still under half of min-time, so calibration starts again (from the count they
    # predict), and that second set settles at min-time
    fake_times = [100_000_000, 30_000_000, 30_000_000, 115_000_000, 115_500_000]
    t, runs = timed(fake_times)
    assert t.recalibrations == 1 and runs == 5 and t.rounds_s == (0.115, 0.1155)


@hsettings(max_examples=300, deadline=None)
@given(rounds=st.sampled_from([3, 5, 7, 9]),
       times=st.lists(st.integers(100_000_000, 130_000_000), min_size=9, max_size=9),
       settle=st.sampled_from([0.005, 0.02, 0.05]))
def test_the_settled_figure_is_within_the_fraction_of_every_rounds_median(rounds, times, settle):
    t, runs = timed(times, rounds=rounds, settle=settle)
    every = statistics.median(times[:rounds])  # what all the rounds would have given
    got = statistics.median(w * 1e9 for w in t.rounds_s)
    assert runs >= rounds // 2 + 1
    assert abs(got - every) <= settle * min(times[:runs]) + 1  # (rounding: 1 ns)
    if runs == 2:  # two settled rounds of three: their mean, half the fraction away at most
        assert abs(got - every) <= settle / 2 * min(times[:2]) + 1


# -- which runs settle: the pytest side, on a fake clock --------------------------------

FAKE = '''
import json, pathlib, time
from pytest_qcrypto.backends.hashlib import HashlibPlugin

CLOCK = {"ns": 10**9}
RUNS = []

def pytest_configure(config):
    time.perf_counter_ns = time.process_time_ns = lambda: CLOCK["ns"]

def pytest_unconfigure(config):
    run = config.pluginmanager.get_plugin("qcrypto-run")
    pathlib.Path("rounds.json").write_text(json.dumps({
        "runs": RUNS, "rounds": [len(m.rounds_s) for m in run.ledger.measurements],
        "references": [len(m.reference_s) for m in run.ledger.measurements]}))

class Steady(HashlibPlugin):
    name, aliases = "steady", ()
    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        def runner(work):
            def run(count):
                RUNS.append(count)
                CLOCK["ns"] += 1_000 * count  # 1 us an operation, every run alike
            return run
        ctx.runner = runner
        return ctx

def pytest_qcrypto_plugins():
    return [Steady()]
'''


def steady_run(pytester, *args):
    pytester.makeconftest(FAKE)
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-plugin=steady",
                                      "--qcrypto-size=64", "--qcrypto-min-time=0.001",
                                      "-p", "no:cacheprovider", *args)
    assert r.ret == 0, r.outlines
    return json.loads((pytester.path / "rounds.json").read_text()), r


def test_a_plain_run_at_the_default_rounds_settles(pytester):
    got, r = steady_run(pytester)
    # doubling to 1/16 of 1 ms (64 x 1 us), then the 1150 that predicts 1 ms x 1.15: the
    # first round; the second agrees exactly, so the third is not timed; no reference
    assert got == {"runs": [1, 2, 4, 8, 16, 32, 64, 1150, 1150], "rounds": [2], "references": [0]}


def test_rounds_asked_for_are_all_timed(pytester):
    got, _ = steady_run(pytester, "--qcrypto-rounds=3")
    assert got == {"runs": [1, 2, 4, 8, 16, 32, 64, 1150, 1150, 1150], "rounds": [3],
                   "references": [0]}


def test_rounds_asked_for_in_the_ini_file_are_all_timed(pytester):
    pytester.makeini("[pytest]\nqcrypto_rounds = 3\n")
    got, _ = steady_run(pytester)
    assert got["rounds"] == [3]


def test_a_fixed_count_settles_too(pytester):
    got, _ = steady_run(pytester, "--qcrypto-count=500")
    assert got == {"runs": [500, 500], "rounds": [2], "references": [0]}


def test_a_saving_run_times_every_round_and_the_reference(pytester):
    got, r = steady_run(pytester, "--qcrypto-count=500", "--qcrypto-save=out.json")
    # (a fixed count: its rounds are not spread over the run) every round and its reference
    assert got == {"runs": [500, 500, 500], "rounds": [3], "references": [3]}
    saved = json.loads((pytester.path / "out.json").read_text())
    assert [len(x["rounds_s"]) for x in saved["results"]] == [3]


def test_the_fixture_times_every_round_a_test_asks_for(pytester):
    pytester.makeconftest(FAKE)
    pytester.makepyfile(test_own='''
def test_own(qcrypto):
    ctx = qcrypto.open("sha256", "steady")
    assert len(ctx.measure(64, min_time=0.001, rounds=3).rounds_s) == 3
    assert len(ctx.measure(64, min_time=0.001).rounds_s) == 2  # the run's default: settles
''')
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert r.ret == 0, r.outlines
