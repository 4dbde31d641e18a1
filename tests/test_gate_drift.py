"""The wall-clock gate on a drifting machine (issue 23): rounds judged against the reference
workload timed next to them, a noise band per cell, the "cannot tell" verdict, the pause
before confirmation tries.  Fake clocks and measurement doubles only: nothing is timed."""

import json

import pytest

from pytest_qcrypto.gate import compare, drift, verdicts as gate
from pytest_qcrypto.gate.summary import summary_lines, summary_tables
from pytest_qcrypto.gate.tries import judge_tries
from pytest_qcrypto.gate.verdicts import BaselineIndex, GateRules, Rule
from pytest_qcrypto.measure import harness, reference
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results import store as results
from pytest_qcrypto.results.store import Result, ResultsFile

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")


def m(rounds, refs=None, count=1000, size=256):
    """A measurement of ``rounds`` seconds on the CPU, the reference ``refs`` seconds after
    each (None: an older measurement without them)."""
    rounds = tuple(rounds)
    return Measurement("sha256", "hashlib", size, "digest", count, rounds, cpu_s=rounds,
                       canonical_plugin="hashlib",
                       reference_s=tuple(refs) if refs is not None else ())


def base(rounds, refs=None):
    return Result.from_measurement(m(rounds, refs))


def tries_of(*measurements):
    queue = list(measurements)
    return lambda: queue.pop(0)


def judge(first, again, baseline, confirm=2):
    return judge_tries(first, again, confirm, baseline, TEN, None,
                       meter=lambda f: (f(), 0.0))


BASE = base((0.0100, 0.0101, 0.0099), (0.0030, 0.0030, 0.0031))


def test_a_machine_30_percent_slower_is_not_a_regression():
    # a phase shift: every round 30% slower, and the reference workload 30% slower too
    slow = m((0.0130, 0.0131, 0.0129), (0.0039, 0.0039, 0.0040))
    v = judge(slow, tries_of(), BASE)
    assert not v.failed and v.status == gate.OK and len(v.tries) == 1
    assert v.drift is not None and abs(v.drift.slowdown) < 0.02
    assert v.change == pytest.approx(-v.drift.slowdown)
    assert v.clock_change < -0.2  # by the clock it is 23% slower


def test_the_same_shift_without_the_reference_moving_is_a_regression():
    def slow():
        return m((0.0130, 0.0131, 0.0129), (0.0030, 0.0030, 0.0031))
    v = judge(slow(), tries_of(slow(), slow()), BASE)
    assert v.failed and v.status == gate.REGRESSION and len(v.tries) == 3
    assert v.drift.slowdown == pytest.approx(0.23, abs=0.01)
    assert v.drift.band < 0.05
    assert v.message.startswith("regression: sha256 hashlib 256 B digest: ")
    assert "change -23.1% relative to the reference workload (-23.1% by the clock), " \
        "threshold 10% (--qcrypto-threshold); tries: " in v.message
    assert "; beyond the threshold by more than the noise band +-" in v.message
    assert v.message.endswith("(3 rounds in the baseline, 9 now; reference ratio)")
    assert v.record["drift_status"] == "regression" and v.record["drift_rule"] == drift.RULE


def test_a_wide_band_cannot_tell_and_does_not_fail():
    # three tries a pause apart: relative to the reference 25%, 45% and 15% slower
    tries = [m((s,) * 3, (0.0030,) * 3) for s in (0.0133, 0.0182, 0.0118)]
    v = judge(tries[0], tries_of(*tries[1:]), BASE)
    assert v.status == gate.CANNOT_TELL and not v.failed and len(v.tries) == 3
    assert v.drift.band > 0.10
    text = v.drift.cannot_tell_text()
    assert text.startswith("cannot tell on this machine: ")
    assert "wider than the threshold 10%" in text
    assert "--qcrypto-rounds" in text and "--qcrypto-measure=instructions" in text
    assert "--qcrypto-target" in text


def test_a_slowdown_within_the_band_edge_is_noise():
    # 12% slower, with a band of a few percent: beyond the threshold, not beyond its edge
    tries = [m((s,) * 3, (0.0030,) * 3) for s in (0.0113, 0.0117, 0.0114)]
    v = judge(tries[0], tries_of(*tries[1:]), BASE)
    assert v.status == gate.NOISE and not v.failed
    assert "lower edge is within the threshold" in v.noise_text


def test_a_try_that_passes_relative_to_the_reference_ends_the_tries():
    slow = m((0.0130,) * 3, (0.0030,) * 3)
    shifted = m((0.0130,) * 3, (0.0039,) * 3)  # the machine, not the code
    v = judge(slow, tries_of(shifted), BASE)
    assert v.status == gate.RECOVERED and not v.failed and len(v.tries) == 2


def test_old_baselines_without_reference_times_are_judged_by_the_clock():
    old = base((0.0100, 0.0101, 0.0099))
    assert not drift.applies(old)
    slow = lambda: m((0.0130, 0.0131, 0.0129), (0.0039,) * 3)  # noqa: E731
    v = judge(slow(), tries_of(slow(), slow()), old)
    assert v.drift is None and v.status == gate.REGRESSION  # as before: 23% by the clock
    lines = summary_lines(GateRules(), BaselineIndex(ResultsFile([old])),
                          {("sha256", "hashlib", 256, "digest"): v}, {}, "")
    assert any(line.startswith("judged by the clock alone: the baseline of 1 cell has no "
                               "reference workload times") for line in lines)


def test_a_cell_off_the_cpu_is_judged_by_the_clock():
    # a plugin that sleeps (or waits for a device): the reference does not move with it
    asleep = Result.from_measurement(Measurement(
        "sha256", "hashlib", 256, "digest", 1000, (0.01,) * 3, cpu_s=(0.001,) * 3,
        canonical_plugin="hashlib", reference_s=(0.003,) * 3))
    assert not drift.applies(asleep)


def test_cannot_tell_is_counted_apart_and_a_run_of_only_cannot_tell_fails():
    tries = [m((s,) * 3, (0.0030,) * 3) for s in (0.0133, 0.0182, 0.0118)]
    unsure = judge(tries[0], tries_of(*tries[1:]), BASE)
    fine = judge(m((0.0100,) * 3, (0.0030,) * 3), tries_of(), BASE)
    index = BaselineIndex(ResultsFile([BASE]))
    index.for_test(BASE.key, None)
    cells = {("sha256", "hashlib", 256, "digest"): unsure}
    lines = summary_lines(GateRules(), index, cells, {}, "")
    assert "cannot tell on this machine (not failed): 1 of 1 judged cell:" in lines
    assert any(line.startswith("  sha256 hashlib 256 B digest: cannot tell on this machine")
               for line in lines)
    tables = summary_tables(GateRules(), index, cells, {})
    counts = dict(tables.tables[-1].rows)
    assert counts == {"cannot tell": "1"}
    line = compare.none_judged(cells)
    assert line.startswith("ERROR: qcrypto: nothing could be told: for each of the 1 cell")
    both = {**cells, ("sha256", "hashlib", 64, "digest"): fine}
    assert compare.none_judged(both) is None


def test_confirmation_tries_wait_a_pause_when_the_rule_applies(monkeypatch):
    slept = []
    monkeypatch.setattr(reference.time, "sleep", slept.append)
    slow = lambda: m((0.0130,) * 3, (0.0030,) * 3)  # noqa: E731
    c = gate.Criteria(2, BASE, TEN, None, "", 1.5)
    from pytest_qcrypto.gate.tries import retry
    v = retry(slow(), slow, c, 0.0, meter=lambda f: (f(), 0.0))
    assert v.status == gate.REGRESSION and slept == [1.5, 1.5]
    slept.clear()
    old = gate.Criteria(2, base((0.01,) * 3), TEN, None, "", 1.5)
    retry(slow(), slow, old, 0.0, meter=lambda f: (f(), 0.0))
    assert slept == []  # the clock rule retries at once, as before


def test_the_harness_times_the_reference_after_every_round():
    ticks = iter(range(0, 10**12, 10**6))
    calls = []

    def between():
        calls.append(1)
        return 0.003
    t = harness.time_count(lambda n: None, 10, rounds=3, clock=lambda: next(ticks),
                           cpu_clock=lambda: 0, between=between)
    assert t.reference_s == (0.003,) * 3 and len(calls) == 3
    t = harness.time_runner(lambda n: None, min_time=0.0005, rounds=2,
                            clock=lambda: next(ticks), cpu_clock=lambda: 0, between=between)
    assert t.reference_s == (0.003,) * 2


def test_adjacent_reference_of_each_round():
    assert reference.adjacent((1.0, 3.0, 5.0), 3) == [1.0, 2.0, 4.0]
    assert reference.adjacent((1.0, 3.0), 3) is None
    assert reference.adjacent((1.0, 0.0), 2) is None  # a clock that could not resolve it
    assert reference.reference_s(cpu_clock=iter([5, 5]).__next__) == 0.0


def test_reference_times_are_saved_and_loaded(tmp_path):
    path = tmp_path / "r.json"
    results.save(path, ResultsFile([BASE]))
    again = results.load(path)
    assert again.results[0].reference_s == (0.0030, 0.0030, 0.0031)
    doc = json.loads(path.read_text())
    doc["results"][0]["reference_s"] = [0.003]
    path.write_text(json.dumps(doc))
    with pytest.raises(results.ResultsError, match=r"reference_s has 1 entries, rounds_s 3"):
        results.load(path)
    del doc["results"][0]["reference_s"]
    path.write_text(json.dumps(doc))
    assert results.load(path).results[0].reference_s == ()
