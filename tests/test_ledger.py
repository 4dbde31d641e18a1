"""The run's one ledger, the gate's retry decision as data, the change grid as data, and
when the gate's pytest plugin is registered."""

from __future__ import annotations

import pytest

from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.gate.verdicts import Criteria, Rule, Verdict
from pytest_qcrypto.gate.summary import change_grid
from pytest_qcrypto.output.tables import change_lines
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.pytest_side.ledger import Ledger
from pytest_qcrypto.output.render import SKIPPED
from pytest_qcrypto.results.store import Result
from test_results import FAKE_PLUGIN, FAKE_RUN

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")


def m(seconds, size=4096, plugin="openssl", canonical=None):
    """1000 operations of ``size`` bytes whose one round took ``seconds``."""
    return Measurement("sha256", plugin, size, "digest", 1000, (seconds,),
                       canonical_plugin=canonical or plugin)


def test_judge_asks_for_another_try_while_the_cell_regresses():
    c = Criteria(confirm=2, baseline=Result.from_measurement(m(0.010)), threshold=TEN)
    tries, waits = [m(0.020)], [None]
    assert gate.judge(tries, waits, c) is None  # 50% slower: measure again
    tries.append(m(0.021)), waits.append(None)
    assert gate.judge(tries, waits, c) is None
    tries.append(m(0.019)), waits.append(None)
    v = gate.judge(tries, waits, c)  # 1 + confirm tries: the verdict
    assert v.status == gate.REGRESSION and v.measurement is tries[2]
    # no more tries to be had (the caller cannot measure again): a verdict at once
    v = gate.judge(tries[:1], waits[:1], c, more=False)
    assert v.status == gate.REGRESSION and len(v.tries) == 1
    # within the threshold: no retry, whatever confirm says
    v = gate.judge([m(0.0105)], [None], c)
    assert v.status == gate.OK and v.change == pytest.approx(0.010 / 0.0105 - 1)


def verdict(measurement, base=None):
    return gate.judge([measurement], [None], Criteria(baseline=base, threshold=TEN), more=False)


def test_ledger_views_come_from_one_key():
    ledger = Ledger()
    first, again = m(0.010, plugin="pyca", canonical="openssl"), m(0.020, plugin="pyca",
                                                                 canonical="openssl")
    ledger.add(first, verdict(first), "test_a")
    ledger.add(m(0.010, size=16), verdict(m(0.010, size=16)), "test_a")
    ledger.add(again, verdict(again), "test_a")  # the same test measured the cell again
    ledger.add(first, verdict(first), "test_b")
    ledger.mark(("sha256", "pyca", 4096, "digest"), SKIPPED, "measured: stays")
    ledger.mark(("sha256", "hashlib", 64, "digest"), SKIPPED, "no hashlib here")
    assert len(ledger.measurements) == 4
    saved = ledger.saved()
    assert [(r.plugin, r.canonical_plugin, r.size, r.test, r.bytes_per_second) for r in saved] \
        == [("pyca", "openssl", 4096, "test_a", 4096 * 1000 / 0.020),
            ("openssl", "openssl", 16, "test_a", 16 * 1000 / 0.010),
            ("pyca", "openssl", 4096, "test_b", 4096 * 1000 / 0.010)]
    assert list(ledger.verdicts()) == [("sha256", "pyca", 4096, "digest"),
                                       ("sha256", "openssl", 16, "digest")]
    [table] = ledger.tables(first=["openssl"])
    assert (table.algorithm, table.direction, table.plugins, table.sizes) == \
        ("sha256", "digest", ("openssl", "pyca", "hashlib"), (16, 64, 4096))
    assert table.cells[("pyca", 4096)].measurement is first  # test_b's, the latest
    assert table.cells[("hashlib", 64)].reason == "no hashlib here"


def test_the_change_grid_is_data_and_prints_as_before():
    base = Result.from_measurement(m(0.010))
    verdicts = {("sha256", "openssl", 4096, "digest"): verdict(m(0.020), base),
                ("sha256", "openssl", 16, "digest"): verdict(m(0.010, size=16))}
    assert verdicts[("sha256", "openssl", 4096, "digest")].status == gate.REGRESSION
    gone = {("sha256", "hashlib", 16, "digest"): "unavailable"}
    grid = change_grid("base.json", "sha256", "digest", ("openssl", "hashlib"), (16, 4096),
                       verdicts, gone)
    assert grid.texts == {("openssl", 16): "new", ("openssl", 4096): "-50.0%!",
                          ("hashlib", 16): "missing", ("hashlib", 4096): "-"}
    assert grid.notes == (f"{gate.MARKS[gate.REGRESSION]} {gate.MARK_NOTES[gate.REGRESSION]}",)
    assert change_lines(grid) == [
        "Change against baseline base.json (negative = slower):",
        "plugin         16     4096",
        "openssl       new  -50.0%!",
        "hashlib   missing        -",
        "  ! regression: slower than the threshold allows, on every try"]
    assert change_grid("base.json", "md5", "digest", ("openssl",), (16,), verdicts, gone) is None
    assert isinstance(verdicts[("sha256", "openssl", 16, "digest")], Verdict)


REPORT_GATE = '''
def pytest_terminal_summary(config):
    print("gate registered:", config.pluginmanager.has_plugin("qcrypto-gate"))
'''


@pytest.mark.parametrize("args, registered", [
    ((), False),
    (("--qcrypto-save", "run.json"), True),
    (("--junitxml", "junit.xml"), True),
    (("--qcrypto-threshold", "5"), True),  # to say it had no effect
])
def test_the_gate_plugin_is_registered_only_when_the_run_needs_it(pytester, args, registered):
    pytester.makeconftest(FAKE_PLUGIN + REPORT_GATE)
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", *args)
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines([f"gate registered: {registered}"])


def test_a_floor_on_a_marker_registers_the_gate(pytester):
    pytester.makeconftest(FAKE_PLUGIN + REPORT_GATE)
    pytester.makepyfile('''
import pytest

@pytest.mark.qcrypto("sha256", plugins="fake", sizes=16, floor=1e12)
def test_floor(qcrypto_context, qcrypto_case):
    qcrypto_context.measure(qcrypto_case.size, min_time=0.002, rounds=1)
''')
    r = pytester.runpytest("-p", "no:cacheprovider", "--qcrypto-confirm", "0")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*below floor: sha256 fake 16 B digest: *floor 1000000000000.00 "
                            "KiB/s (@pytest.mark.qcrypto(floor=...))*",
                            "gate registered: True"])
