"""Spread rounds in pytest runs that save or compare (issue 23): the matrix cells measured in
turn when the first asks, the saved file's rounds, the gate's slow-phase rule, and the runs
that keep measuring each cell alone."""

import json

# pytester's in-process runs drop the modules first imported inside them, and a module kept
# from an earlier run then holds another class object than a fresh import: a hashlib
# context failed ``isinstance(ctx, Context)`` when this file ran alone.  Imported here first.
import pytest_qcrypto.backends.hashlib  # noqa: F401
import pytest_qcrypto.measure.bench  # noqa: F401
from conftest import FAST

RUN = ("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib", "--qcrypto-size=16,64", *FAST,
       "-p", "no:cacheprovider")


def saved(pytester, name):
    return {r["size"]: r for r in json.loads((pytester.path / name).read_text())["results"]}


def test_a_saving_run_takes_every_cells_rounds_in_turn(pytester):
    r = pytester.runpytest(*RUN, "--qcrypto-save=base.json")
    r.assert_outcomes(passed=2)
    cells = saved(pytester, "base.json")
    for size in (16, 64):
        assert len(cells[size]["rounds_s"]) == 25 == len(cells[size]["reference_s"])
        assert cells[size]["spread_s"] > 0
    # the passes were paced: the rounds span 8 s x 0.001 / 0.1 = 0.08 s at least
    assert min(c["spread_s"] for c in cells.values()) >= 0.08
    # and the file says how they were taken, beside the options typed
    settings = json.loads((pytester.path / "base.json").read_text())["settings"]
    assert settings["spread"] == {"rounds": 25, "round_s": 0.001, "span_s": 0.08}
    assert settings["min_time_s"] == 0.001 and settings["rounds"] == 1


MARKED = """
import pytest

@pytest.mark.qcrypto(algorithms="sha256", plugins="hashlib", sizes=[16, 64])
def test_cell(qcrypto_context, qcrypto_case, request):
    m = qcrypto_context.measure(qcrypto_case.size)
    rounds = int(request.config.getoption("qcrypto_rounds") or 1)
    want = 25 if request.config.getoption("qcrypto_save") else rounds
    assert len(m.rounds_s) == want and (m.spread_s > 0) == (want == 25), (len(m.rounds_s), m)
"""


def test_a_run_that_neither_saves_nor_compares_measures_each_cell_alone(pytester):
    pytester.makepyfile(test_marked=MARKED)
    pytester.runpytest(*FAST, "-p", "no:cacheprovider").assert_outcomes(passed=2)
    # and the marker's cells take turns when the run saves
    r = pytester.runpytest(*FAST, "-p", "no:cacheprovider", "--qcrypto-save=m.json")
    r.assert_outcomes(passed=2)


def test_a_compare_of_two_spread_runs_is_judged_by_the_slow_phase(pytester):
    pytester.runpytest(*RUN, "--qcrypto-save=base.json").assert_outcomes(passed=2)
    r = pytester.runpytest(*RUN, "--qcrypto-compare=base.json", "--qcrypto-threshold=90",
                           "--qcrypto-save=now.json")
    r.assert_outcomes(passed=2)
    now = saved(pytester, "now.json")
    for size in (16, 64):
        assert now[size]["verdict"]["drift_rule"] == "slow phase of spread rounds"
        assert len(now[size]["rounds_s"]) == 25
        assert "tries" not in now[size]  # no confirmation tries: the spread is the confirmation
    text = r.stdout.str()
    assert "baseline noisy" not in text and "judged by the clock alone" not in text


def test_a_single_cell_has_nothing_to_take_turns_with(pytester):
    r = pytester.runpytest("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                           "--qcrypto-size=64", *FAST, "--qcrypto-save=one.json")
    r.assert_outcomes(passed=1)
    assert len(saved(pytester, "one.json")[64]["rounds_s"]) == 1
