"""Issue 23: the job summary's gate tables show the figures each change is computed from
(a change taken without the wait for a CPU showed beside figures by the clock:
``1006900.61 | 1118144.46 | -64.7%``), and say which try they show ("fastest try", not
"best" for what could be the lowest try by the clock)."""

from pathlib import Path

from pytest_qcrypto.gate import tries as gate_tries, verdicts as gate
from pytest_qcrypto.gate.summary import summary_tables
from pytest_qcrypto.gate.verdicts import BaselineIndex, GateRules, Rule
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.markdown import markdown_gate
from pytest_qcrypto.results.store import Result, ResultsFile

TEN = Rule(None, None, None, 10.0, "default")


def m(seconds, cpu, size=4096, count=1000):
    return Measurement("sha256", "openssl", size, "digest", count, (seconds,) * 3, (cpu,) * 3,
                       canonical_plugin="openssl")


def judged(now_tries, waits, base):
    first, *more = now_tries
    rest = iter(zip(more, waits[1:]))
    return gate_tries.judge_tries(first, lambda: None, 2, base, TEN, None, first_wait=waits[0],
                                  meter=lambda again: next(rest))


def tables(v, base):
    index = BaselineIndex(ResultsFile([base], path=Path("base.json")))
    index.for_test(("sha256", "openssl", v.measurement.size, "digest"), None)
    return summary_tables(GateRules(), index, {("sha256", "openssl", 4096, "digest"): v}, {})


def test_a_change_without_the_wait_for_a_cpu_names_the_figures_it_is_computed_from():
    # the baseline waited half its time for a CPU: by the clock 400000 KiB/s, without its
    # wait 800000; now 363636 KiB/s by the clock, all of it on the CPU: -54.5%, not -9.1%
    base = Result.from_measurement(m(0.010, 0.005), cpu_wait_share=1.0)
    v = judged([m(0.011, 0.011)] * 3, [0.0] * 3, base)
    assert v.status == gate.REGRESSION
    (regressions, _) = tables(v, base).tables
    assert regressions.columns == ("cell", "now KiB/s", "baseline KiB/s", "change",
                                   "change computed from", "threshold", "tries")
    assert regressions.rows == (("sha256 openssl 4096 B digest", "363636.36", "400000.00",
                                 "-54.5%", "363636.36 vs 800000.00, the baseline without its "
                                 "wait for a CPU", "10%", "fastest try of 3"),)
    md = markdown_gate(tables(v, base))
    assert ("| sha256 openssl 4096 B digest | 363636.36 | 400000.00 | -54.5% | 363636.36 vs "
            "800000.00, the baseline without its wait for a CPU | 10% | fastest try of 3 |") in md
    assert not any("best" in line for line in md)


def test_a_change_of_the_figures_shown_says_so_and_the_message_says_fastest_try():
    base = Result.from_measurement(m(0.010, 0.010))
    v = judged([m(0.020, 0.020), m(0.025, 0.025), m(0.030, 0.030)], [None] * 3, base)
    (regressions, _) = tables(v, base).tables
    assert regressions.rows[0][4] == "the figures shown"
    assert regressions.rows[0][6] == "fastest try of 3"
    assert "(fastest try 200000.00)" in v.message and "best" not in v.message


def test_a_try_kept_for_its_figure_without_the_wait_is_not_called_the_fastest_by_the_clock():
    # the first try is the fastest once its wait for a CPU is taken out, the slowest by the
    # clock: the message says which figure made it the fastest
    base = Result.from_measurement(m(0.005, 0.005))
    v = judged([m(0.030, 0.010), m(0.020, 0.020), m(0.025, 0.025)], [1.0, 0.0, 0.0], base)
    assert v.measurement is v.tries[0]
    assert ("(fastest try without its wait for a CPU: 133333.33 by the clock, judged as "
            "400000.00)") in v.message
