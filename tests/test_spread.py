"""Rounds spread over the run and the gate's slow-phase rule (issue 23): cells measured in
turn, paced passes, the 25th percentile against the baseline's, the reference workload,
the noise band and its verdicts.  Fake clocks and measurement doubles only."""

import json

import pytest

from pytest_qcrypto.gate import spread as rule, verdicts as gate
from pytest_qcrypto.gate.tries import judge_tries
from pytest_qcrypto.gate.verdicts import Rule
from pytest_qcrypto.measure import spread
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results import store as results
from pytest_qcrypto.results.store import Result

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")


class Clock:
    """A fake machine: ``run(count)`` of cell ``name`` advances both clocks by
    ``count * per_op[name]`` seconds; ``sleep`` advances them too."""

    def __init__(self, per_op):
        self.ns = 0
        self.per_op = per_op
        self.log = []
        self.slept = []

    def runner(self, name):
        """A cell's maker: it returns the runner."""
        def run(count):
            self.log.append((name, count))
            self.ns += round(count * self.per_op[name] * 1e9)
        return lambda: run

    def clock(self):
        return self.ns

    def monotonic(self):
        return self.ns / 1e9

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.ns += round(seconds * 1e9)


def test_cells_take_turns_one_round_a_pass_after_their_calibration():
    c = Clock({"a": 1e-6, "b": 4e-6})
    out = spread.spread_rounds({"a": c.runner("a"), "b": c.runner("b")},
                               spread.Spread(rounds=4, round_s=0.01, span_s=0.0),
                               clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                               sleep=c.sleep)
    # calibration doubles to 1/16 of 0.01 s (a: 1024 operations, b: 256, 1.024 ms each),
    # then skips ahead to 0.01 s x 1.15: a at 11500 operations, b at 2875 (11.5 ms each)
    calibration = [x for x in c.log[:-6]]
    assert calibration[-1] == ("b", 2875) and ("a", 11500) in calibration
    assert c.log[-6:] == [("a", 11500), ("b", 2875)] * 3  # three passes, in turn
    assert out["a"].timing.count == 11500 and len(out["a"].timing.rounds_s) == 4
    assert out["b"].timing.rounds_s == pytest.approx((0.0115,) * 4)
    assert c.slept == []


def test_the_passes_take_the_cells_in_the_order_asked_after_calibrating_in_theirs():
    c = Clock({"a": 1e-6, "b": 4e-6, "c": 2e-6})
    spread.spread_rounds({"a": c.runner("a"), "b": c.runner("b"), "c": c.runner("c")},
                         spread.Spread(rounds=3, round_s=0.01, span_s=0.0),
                         clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                         sleep=c.sleep, order=("c", "a"))  # b, left out, follows
    calibrated = [name for name, _ in c.log[:-6]]
    assert calibrated == sorted(calibrated)  # a's runs, then b's, then c's
    assert [name for name, _ in c.log[-6:]] == ["c", "a", "b"] * 2


def test_passes_over_few_cells_are_paced_to_span_the_time_asked():
    c = Clock({"a": 1e-6})
    out = spread.spread_rounds({"a": c.runner("a")},
                               spread.Spread(rounds=5, round_s=0.01, span_s=2.0),
                               clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                               sleep=c.sleep)
    # 4 passes due 0, 0.5, 1.0, 1.5 s after the first; each round takes 11.5 ms
    assert c.slept == [pytest.approx(0.5 - 0.0115), pytest.approx(0.5 - 0.0115),
                       pytest.approx(0.5 - 0.0115)]
    assert out["a"].span_s >= 1.5


def test_a_cell_that_fails_is_left_out_and_the_others_go_on():
    c = Clock({"a": 1e-6})
    calls = {"n": 0}

    def bad(count):
        calls["n"] += 1
        c.ns += 1_000_000
        if calls["n"] > 2:
            raise RuntimeError("device gone")
    seen = []
    out = spread.spread_rounds({"a": c.runner("a"), "bad": lambda: bad},
                               spread.Spread(rounds=4, round_s=0.001, span_s=0.0),
                               clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                               sleep=c.sleep, failed=lambda k, e: seen.append((k, str(e))))
    assert list(out) == ["a"] and len(out["a"].timing.rounds_s) == 4
    assert seen == [("bad", "device gone")]


def test_the_reference_workload_runs_once_a_pass_one_time_per_round():
    c = Clock({"a": 1e-6, "b": 1e-6})
    refs = iter([0.005, 0.006, 0.007])
    out = spread.spread_rounds({"a": c.runner("a"), "b": c.runner("b")},
                               spread.Spread(rounds=3, round_s=0.001, span_s=0.0),
                               clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                               sleep=c.sleep, between=lambda: next(refs))
    assert out["a"].timing.reference_s == (0.005, 0.006, 0.007) == out["b"].timing.reference_s


def test_an_interrupt_hands_over_the_cells_measured_so_far_then_propagates():
    c = Clock({"a": 1e-6, "b": 1e-6})

    def hangs():  # the third cell's known-answer check: Ctrl-C arrives there
        raise KeyboardInterrupt
    handed = {}
    with pytest.raises(KeyboardInterrupt):
        spread.spread_rounds({"a": c.runner("a"), "b": c.runner("b"), "c": hangs},
                             spread.Spread(rounds=5, round_s=0.001, span_s=0.0),
                             clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                             sleep=c.sleep, interrupted=handed.update)
    assert sorted(handed) == ["a", "b"]
    assert [len(t.timing.rounds_s) for t in handed.values()] == [1, 1]  # their calibration


def test_each_call_runs_under_the_guard_and_a_failed_call_drops_only_its_cell():
    c = Clock({"a": 1e-6, "b": 1e-6})
    guarded = []

    def guard(call):
        guarded.append(call)
        if len(guarded) == 4:  # b's first pass: past its time limit
            raise TimeoutError("timed out after 1 s")
        return call()
    seen = []
    out = spread.spread_rounds({"a": c.runner("a"), "b": c.runner("b")},
                               spread.Spread(rounds=3, round_s=0.001, span_s=0.0),
                               clock=c.clock, cpu_clock=c.clock, monotonic=c.monotonic,
                               sleep=c.sleep, guard=guard,
                               failed=lambda k, e: seen.append((k, str(e))))
    assert len(guarded) == 2 + 2 + 1  # two calibrations, a pass of two, a pass of one
    assert list(out) == ["a"] and seen == [("b", "timed out after 1 s")]


# -- the rule ------------------------------------------------------------------------------

SLOW, FAST = 0.010, 0.0060  # seconds of a round in the slow phase and in a burst


def cell(rounds, refs=None, spread_s=9.0, count=1000, size=256):
    rounds = tuple(rounds)
    return Measurement("sha256", "hashlib", size, "digest", count, rounds, cpu_s=rounds,
                       canonical_plugin="hashlib", spread_s=spread_s,
                       reference_s=tuple(refs) if refs is not None else ())


def phases(bursts, n=25, slow=SLOW, fast=FAST):
    """``n`` rounds of which ``bursts`` are in a fast phase, spread through."""
    return [fast if i % (n // bursts) == 0 and i // (n // bursts) < bursts else slow
            for i in range(n)] if bursts else [slow] * n


def judge(current, baseline):
    return judge_tries(current, lambda: pytest.fail("no confirmation try"), 2, baseline, TEN,
                       None, meter=lambda f: (f(), 0.0))


def test_more_bursts_in_the_baseline_than_now_is_not_a_regression():
    # the baseline caught 8 bursts of 25, the current run 2: their medians differ by 40%
    base = Result.from_measurement(cell(phases(8)))
    v = judge(cell(phases(2)), base)
    assert v.drift is not None and v.drift.rule == rule.RULE
    assert v.status == gate.OK and not v.failed and len(v.tries) == 1
    assert abs(v.drift.slowdown) < 0.01


def test_a_cell_20_percent_slower_in_every_phase_is_a_regression():
    base = Result.from_measurement(cell(phases(5)))
    v = judge(cell(phases(5, slow=SLOW / 0.8, fast=FAST / 0.8)), base)
    assert v.status == gate.REGRESSION and v.failed and len(v.tries) == 1
    assert v.drift.slowdown == pytest.approx(0.2)
    assert "in the slow phase (25% quantile of the round rates)" in v.message
    assert "slow phase of spread rounds" in v.message


def test_the_reference_workload_does_not_move_the_verdict():
    # saved with the rounds, not used by this rule: the reference 30% faster now, the cell the
    # same, is no regression (the ratio to it read that as one); a cell 30% slower is one
    base = Result.from_measurement(cell(phases(5), refs=[0.0065] * 25))
    v = judge(cell(phases(5), refs=[0.005] * 25), base)
    assert v.status == gate.OK and abs(v.drift.slowdown) < 1e-9
    assert "reference" not in v.drift.against
    slower = judge(cell([r * 1.3 for r in phases(5)], refs=[0.0065] * 25), base)
    assert slower.status == gate.REGRESSION
    assert slower.drift.slowdown == pytest.approx(1 - 1 / 1.3)


def test_a_wide_band_says_cannot_tell_and_does_not_fail():
    # 12 rounds scattered 3:1 on both sides, the current one 17% slower: the band is wider
    # than the 10% threshold, and 17% is beyond it but not beyond it by the band
    spread_out = [SLOW * (0.5 + i / 11) for i in range(12)]
    base = Result.from_measurement(cell(spread_out))
    v = judge(cell([r / 0.83 for r in spread_out]), base)
    assert v.drift.slowdown == pytest.approx(0.17)
    assert v.drift.band > 0.10 and v.drift.slowdown - v.drift.band < 0.10
    assert v.status == gate.CANNOT_TELL and not v.failed
    assert "cannot tell on this machine: 17.0% slower in the slow phase" in \
        v.drift.cannot_tell_text()


def test_the_band_is_repeatable_and_narrow_for_steady_rounds():
    base = [1000.0] * 20 + [1500.0] * 5
    assert rule.band(base, base) == rule.band(base, base)
    assert rule.band([1000.0] * 25, [1000.0] * 25) == 0.0


def test_back_to_back_rounds_keep_the_older_rules():
    base = Result.from_measurement(cell([SLOW] * 3, spread_s=0.0))
    assert not rule.applies(cell(phases(5)), base)
    base = Result.from_measurement(cell(phases(5)))
    assert not rule.applies(cell([SLOW] * 3, spread_s=0.0), base)
    assert not rule.applies(cell([SLOW] * 5), base)  # too few rounds for a quantile


def test_spread_s_is_saved_and_loaded(tmp_path):
    r = Result.from_measurement(cell(phases(5), refs=[0.005] * 25, spread_s=9.5))
    path = tmp_path / "base.json"
    results.save(path, results.ResultsFile(results=[r]))
    raw = json.loads(path.read_text())
    assert raw["results"][0]["spread_s"] == 9.5
    assert results.load(path).results[0].spread_s == 9.5
    raw["results"][0]["spread_s"] = -1
    path.write_text(json.dumps(raw))
    with pytest.raises(results.ResultsError, match="spread_s"):
        results.load(path)
