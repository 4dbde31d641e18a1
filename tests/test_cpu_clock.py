"""Issue 23: a CPU-time clock that cannot resolve a round (a coarse clock reads 0 s for it)
leaves the CPU time of those rounds unknown: no correction for waits for a CPU (it divided
by zero: ZeroDivisionError ended the item), and one note under the tables."""

import json

import pytest

from pytest_qcrypto.gate import tries as gate_tries, verdicts as gate
from pytest_qcrypto.gate.rules import Rule
from pytest_qcrypto.measure import harness, machine
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results import store as results
from pytest_qcrypto.results.store import Result, ResultsFile

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")


class FakeClocks:
    """A wall clock that advances 1000 ns an operation; a CPU clock that never moves."""

    def __init__(self) -> None:
        self.ns = 0

    def run(self, count: int) -> None:
        self.ns += 1000 * count

    def wall(self) -> int:
        return self.ns

    @staticmethod
    def cpu() -> int:
        return 0


def coarse_measurement() -> Measurement:
    fake = FakeClocks()
    timing = harness.time_runner(fake.run, min_time=0.01, rounds=3, clock=fake.wall,
                                 cpu_clock=fake.cpu, guard=lambda: 0.0)
    assert timing.cpu_s == (0.0, 0.0, 0.0)
    return Measurement("sha256", "fake", 1024, "digest", timing.count, timing.rounds_s,
                       timing.cpu_s, canonical_plugin="fake")


def test_a_cpu_clock_that_reads_0_for_a_round_means_no_wait_correction():
    m = coarse_measurement()
    base = Result.from_measurement(m, cpu_wait_share=1.0)
    # every try "waited" all of its time off the CPU (the meter saw a busy machine)
    v = gate_tries.judge_tries(m, lambda: m, 2, base, TEN, None, first_wait=1.0,
                               meter=lambda again: (again(), 1.0))
    assert v.status == gate.OK and not v.failed
    assert v.figure == m.rate and v.base_figure == base.bytes_per_second  # judged as measured
    assert "without" not in v.tries_text
    assert gate.without_wait(m, 1.0) == (m.rate, gate.fastest_round_bps(m))


def test_a_baseline_from_a_coarse_cpu_clock_loads_and_is_judged_as_measured(tmp_path):
    m = coarse_measurement()
    path = tmp_path / "base.json"
    results.save(path, ResultsFile([Result.from_measurement(m, test="t", cpu_wait_share=1.0)]))
    (r,) = results.load(path).results
    assert r.figures_without_wait() == (r.bytes_per_second, r.slowest_round_bytes_per_second)


def test_one_note_says_the_cpu_clock_could_not_time_a_round():
    m = coarse_measurement()
    fine = Measurement("sha256", "fake", 16, "digest", 10, (0.01,), (0.01,))
    lines = machine.summary_lines(None, [m, fine, m])
    assert lines == ["CPU-time clock too coarse: it read 0 s for a round in 2 of 3 cells; their "
                     "CPU time is unknown, so no wait for a CPU is taken out of them"]
