"""The regression gate: thresholds, floors, confirmation, verdicts on items, summary, JUnit."""

import dataclasses
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.measure import machine
from pytest_qcrypto.pytest_side.fixture import judge_tries
from pytest_qcrypto.gate.verdicts import Rule, Rules
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.store import Result
from pytest_qcrypto.algorithms.settings import SettingsError
from test_results import FAKE_CLOCK, FAKE_PLUGIN, FAKE_RUN, fake_speed

#: The fake plugin plus one that is never available (to lose a baseline cell).
FAKE_AND_MISSING = FAKE_PLUGIN.replace("return [Fake()]", "return [Fake(), Missing()]") + '''
from pytest_qcrypto.backends import Unavailable

class Missing(CryptoPlugin):
    name = "missing"
    library = "libmissing"
    def probe(self):
        raise Unavailable("libmissing is not installed")
'''

USAGE = pytest.ExitCode.USAGE_ERROR
#: A figure in KiB/s: one per cell, by the clock, as the tables show it.
KIB = r"[\d.]+ KiB/s"
#: A floor's figure, which says in words when the try waited for a CPU.
FLOOR_KIB = KIB + r"( \(by the clock, as the table shows, although (\d+%|less than 1%) of it " \
    r"was a wait for a CPU\))?"
#: After a change: the waits for a CPU taken out of it, in words.
SHARE = r"(\d+%|less than 1%) of it"
CORRECTION = rf"( without the time (each waited for a CPU \({SHARE} now, {SHARE} in the " \
    rf"baseline\)|the baseline waited for a CPU \({SHARE}\)|this try waited for a CPU " \
    rf"\({SHARE}\)))?"
#: Three tries in a failure message (a try that waited for a CPU says so, and so does the best).
TRIES = r"tries: [\d.]+( \(waited \d+% of it for a CPU: [\d.]+ without\))?" \
    r"(, [\d.]+( \(waited \d+% of it for a CPU: [\d.]+ without\))?){2} KiB/s \(fastest try " \
    r"([\d.]+|without its wait for a CPU: [\d.]+ by the clock, judged as [\d.]+)\)"


def m(seconds, rounds=None, size=4096, count=1000, plugin="openssl", cpu=None):
    """A measurement whose median round took ``seconds`` (``cpu`` seconds on the CPU)."""
    rounds = tuple(rounds or (seconds,))
    return Measurement("sha256", plugin, size, "digest", count, rounds,
                       cpu_s=(cpu,) * len(rounds) if cpu is not None else (),
                       canonical_plugin=plugin)


# -- parsing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("10%", 10.0), ("10", 10.0), (" 2.5 % ", 2.5),
                                         ("0", 0.0), ("99.9%", 99.9)])
def test_percent(text, value):
    assert gate.parse_percent(text, "x") == value


@pytest.mark.parametrize("text", ["ten", "", "100%", "-1", "nan", "inf%"])
def test_bad_percent(text):
    with pytest.raises(SettingsError, match="^x: "):
        gate.parse_percent(text, "x")


def test_a_negative_threshold_says_what_to_write():
    with pytest.raises(SettingsError, match=r"^x: a threshold is the slowdown allowed, a positive "
                                            r"percentage: write 5% \(not -5%\) to fail what is "
                                            r"more than 5% slower$"):
        gate.parse_percent("-5%", "x")


def test_pattern_fields():
    assert gate.parse_pattern("sha256", "w") == ("sha256", None, None)
    assert gate.parse_pattern("SHA-256:OpenSSL:32768", "w") == ("sha256", "openssl", 32768)
    assert gate.parse_pattern("*:*:16", "w") == (None, None, 16)
    assert gate.parse_pattern("sha256:afalg:sha256-generic", "w") == \
        ("sha256", "afalg:sha256-generic", None)
    assert gate.parse_pattern("sha256:afalg:sha256-generic:64", "w") == \
        ("sha256", "afalg:sha256-generic", 64)
    with pytest.raises(SettingsError, match="unknown algorithm 'sha265'; did you mean"):
        gate.parse_pattern("sha265", "w")
    with pytest.raises(SettingsError, match="empty field"):
        gate.parse_pattern("sha256::16", "w")
    with pytest.raises(SettingsError, match="size '0' must be"):
        gate.parse_pattern("sha256:openssl:0", "w")


def test_threshold_precedence():
    rules = Rules.parse(["*:*:16 = 25%", "sha256:openssl:32768 = 5%", "sha256 = 15",
                         "# a comment", "", "*:openssl = 20%", "sha256:*:16 = 30%",
                         "*:openssl:16 = 40%"], "qcrypto_thresholds", gate.parse_percent)
    pick = (lambda alg, plugin, size: rules.pick(alg, [plugin], size).value)
    assert pick("sha256", "openssl", 32768) == 5     # three fields beat everything
    assert pick("md5", "hashlib", 16) == 25          # only *:*:16 matches
    assert pick("sha256", "hashlib", 64) == 15       # sha256 (one field)
    assert pick("sha256", "openssl", 64) == 20       # one field each: the later line wins
    assert pick("sha256", "openssl", 16) == 40       # two fields each: the later line wins
    assert pick("sha256", "hashlib", 16) == 30
    assert rules.pick("md5", ["hashlib"], 64) is None  # the default threshold then applies
    assert rules.pick("sha256", ["openssl-3", "openssl"], 32768).value == 5  # alias matches


def test_bad_rule_lines_name_the_line():
    with pytest.raises(SettingsError, match=r"qcrypto_thresholds line 2 \('sha256 25%'\): "
                                            r"write ALGORITHM"):
        Rules.parse(["*:*:16 = 25%", "sha256 25%"], "qcrypto_thresholds", gate.parse_percent)
    with pytest.raises(SettingsError, match=r"line 1 .*not a number of KiB/s"):
        Rules.parse(["sha256 = fast"], "qcrypto_floors", gate.parse_kib_per_s)


def test_marker_floors():
    assert gate.marker_floors(1000, "f").pick("sha256", ["x"], 16).value == 1000
    rules = gate.marker_floors({16: 10, "sha256:openssl:16": 20, "md5": 5}, "f")
    assert rules.pick("sha256", ["openssl"], 16).value == 20
    assert rules.pick("sha256", ["hashlib"], 16).value == 10
    assert rules.pick("md5", ["hashlib"], 64).value == 5
    with pytest.raises(SettingsError):
        gate.marker_floors({1.5: 3}, "f")
    with pytest.raises(SettingsError):
        gate.marker_floors(-3, "f")


# -- judging ----------------------------------------------------------------------------------

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")


def tries_of(*seconds, cpu=None):
    """An ``again`` callable returning measurements of the given seconds, in order."""
    queue = [m(s, cpu=cpu) for s in seconds]
    return lambda: queue.pop(0)


def judge(*args, busy=(), **kw):
    """judge_tries whose retries waited the given shares of their time for a CPU."""
    shares = list(busy)
    return judge_tries(*args, meter=lambda again: (again(), shares.pop(0) if shares else 0.0),
                       **kw)


def test_real_regression_fails_after_every_try():
    base = Result.from_measurement(m(0.010, rounds=(0.0099, 0.010, 0.0102)))
    v = judge(m(0.013), tries_of(0.0131, 0.0129), 2, base, TEN, None)
    assert v.failed and v.status == gate.REGRESSION and len(v.tries) == 3
    assert v.measurement.median_s == 0.0129  # the best try is kept
    text = v.message
    assert text.startswith("regression: sha256 openssl 4096 B digest: ")
    now, then = 1000 * 4096 / 0.0129 / 1024, base.kib_per_s
    assert f"{now:.2f} KiB/s now, baseline {then:.2f} KiB/s" in text
    assert f"change {(now - then) / then * 100:+.1f}%" in text
    assert "threshold 10% (--qcrypto-threshold)" in text
    for s in (0.013, 0.0131, 0.0129):
        assert f"{1000 * 4096 / s / 1024:.2f}" in text.split("tries: ")[1]


def test_short_slowdown_recovers_on_a_retry():
    base = Result.from_measurement(m(0.010))
    v = judge(m(0.020), tries_of(0.0101, 0.030), 2, base, TEN, None)
    assert not v.failed and v.status == gate.RECOVERED and len(v.tries) == 2


def test_no_retry_when_within_threshold():
    base = Result.from_measurement(m(0.010))
    v = judge(m(0.0105), tries_of(), 2, base, TEN, None)
    assert v.status == gate.OK and len(v.tries) == 1
    assert v.change == pytest.approx(0.010 / 0.0105 - 1)


def test_one_slow_baseline_round_no_longer_hides_a_slowdown():
    # (issue 14 changed this: the baseline's slowest round, 30% slower than its median, used
    # to make a 15% slowdown "within noise"; the median test ignores one slow round, and the
    # baseline's spread is reported.  5 rounds now against 3 cannot reach the test's 5%
    # false-alarm rate (smallest p 6/56), so the figures decide and the message says so.)
    base = Result.from_measurement(m(0.010, rounds=(0.0095, 0.010, 0.013)))
    v = judge(m(0.0118, rounds=(0.0118, 0.0118, 0.0120)), tries_of(0.0118, 0.0118), 2,
                    base, TEN, None)
    assert v.failed and v.status == gate.REGRESSION
    assert v.message.endswith(
        "; too few rounds for the median test (5 now, 3 in the baseline: p cannot go below "
        "0.107, above its false-alarm rate 0.05): judged by the figures alone; baseline "
        "noisy: rounds spread 37%, remeasure it")


def test_confirm_zero_means_one_try():
    base = Result.from_measurement(m(0.010))
    v = judge(m(0.020), tries_of(0.010), 0, base, TEN, None)
    assert v.failed and len(v.tries) == 1


def test_wait_for_a_cpu_is_taken_out():
    # every try 40% slower by the clock: its rounds were off the CPU waiting for one
    base = Result.from_measurement(m(0.010, cpu=0.010))
    v = judge(m(0.0167, cpu=0.010), tries_of(0.0167, 0.0167, cpu=0.010), 2, base, TEN, None,
              busy=[1.0, 1.0])
    assert not v.failed and v.status == gate.BUSY and len(v.tries) == 2
    assert v.clock_change == pytest.approx(0.010 / 0.0167 - 1)
    assert v.change == pytest.approx(0.0)
    assert "waited 40% of it for a CPU: " in v.tries_text


def test_the_baseline_is_judged_without_its_own_wait():
    # the baseline was measured on a busy machine: 0.020 s by the clock, 0.010 s on the CPU,
    # all the rest waiting for a CPU; now the same code on an idle machine takes 0.010 s
    saved = Result.from_measurement(m(0.020, cpu=0.010), cpu_wait_share=1.0)
    assert gate.baseline_figures(saved)[0] == pytest.approx(2 * saved.bytes_per_second)
    v = judge(m(0.010, cpu=0.010), tries_of(), 2, saved, TEN, None, first_wait=0.0)
    assert v.status == gate.OK and v.change == pytest.approx(0.0)
    # and a figure raised by half is still a regression, whatever the waits
    raised = dataclasses.replace(saved, bytes_per_second=saved.bytes_per_second * 1.5)
    v = judge(m(0.010, cpu=0.010), tries_of(0.010, 0.010, cpu=0.010), 2, raised, TEN, None,
              first_wait=0.0)
    # one figure per cell, by the clock (the baseline's is the one qcrypto report shows), and
    # the correction in words
    assert v.failed and v.message == (
        "regression: sha256 openssl 4096 B digest: 400000.00 KiB/s now, baseline 300000.00 "
        "KiB/s, change -33.3% without the time the baseline waited for a CPU (50% of it), "
        "threshold 10% (--qcrypto-threshold); tries: 400000.00, 400000.00, 400000.00 KiB/s "
        "(fastest try 400000.00); too few rounds for the median test (3 now, 1 in the baseline: p "
        "cannot go below 0.25, above its false-alarm rate 0.05): judged by the figures alone")
    # (issue 14: the tail was "its fastest round ... is below the baseline's slowest round",
    # the overlap rule the median test replaced)
    assert f"{raised.kib_per_s:.2f}" == "300000.00"


def test_wait_is_never_taken_from_cpu_time():
    # the try waited for a CPU, but its rounds were all on the CPU: nothing to take out
    base = Result.from_measurement(m(0.010, cpu=0.010))
    v = judge(m(0.020, cpu=0.020), tries_of(0.020, 0.020, cpu=0.020), 2, base, TEN, None,
              busy=[1.0, 1.0])
    assert v.failed and v.status == gate.REGRESSION and "change -50.0%" in v.message


def test_sleeping_is_not_a_wait_for_a_cpu():
    # a plugin that sleeps half of each round: none of that time off the CPU was a wait
    base = Result.from_measurement(m(0.010, cpu=0.010))
    v = judge(m(0.020, cpu=0.010), tries_of(0.020, 0.020, cpu=0.010), 2, base, TEN, None,
              busy=[0.0, 0.0])
    assert v.failed and v.status == gate.REGRESSION
    # on a busy machine as well: only the waiting part of its time off the CPU is taken out
    v = judge(m(0.025, cpu=0.010), tries_of(0.025, 0.025, cpu=0.010), 2, base, TEN, None,
              busy=[0.4, 0.4])  # 0.015 s off the CPU: 0.006 s waiting, 0.009 s asleep
    assert v.failed and "change -47.4%" in v.message


def test_a_real_regression_on_a_busy_machine_still_fails():
    # code 30% slower (0.01429 s of CPU), its rounds also waiting for a CPU
    base = Result.from_measurement(m(0.010, cpu=0.010))
    v = judge(m(0.01786, cpu=0.01429), tries_of(0.01786, 0.01786, cpu=0.01429), 2, base, TEN,
              None, busy=[1.0, 1.0])
    assert v.failed and v.status == gate.REGRESSION
    assert "change -30.0%" in v.message and "waited 20% of it for a CPU" in v.message


def test_best_is_one_of_the_listed_tries():
    # the first try waited a little for a CPU (under the share the tries list mentions): its
    # figure without the wait is the best, but the list and the table show it by the clock
    base = Result.from_measurement(m(0.005, cpu=0.005))
    v = judge(m(0.0100, cpu=0.0090), tries_of(0.0140, 0.0104, cpu=0.0104), 2, base, TEN, None,
              first_wait=0.02, busy=[0.0, 0.0])
    assert v.failed and v.measurement is v.tries[0]
    listed = v.tries_text.removeprefix("tries: ").split(" KiB/s")[0].split(", ")
    clock = f"{v.measurement.kib_per_s:.2f}"
    assert listed[0] == clock and f"{v.figure / 1024:.2f}" != clock
    assert (f"(fastest try without its wait for a CPU: {clock} by the clock, judged as "
            f"{v.figure / 1024:.2f})") in \
        v.message
    assert f"digest: {clock} KiB/s now, baseline 800000.00 KiB/s, change -49.9% without the " \
        "time this try waited for a CPU (less than 1% of it), threshold" in v.message
    # without a wait, the kept try is simply the fastest try listed
    v = judge(m(0.0100), tries_of(0.0140, 0.0104), 2, base, TEN, None)
    assert v.tries_text.endswith(f"(fastest try {m(0.0100).kib_per_s:.2f})")


def test_metered_reads_the_wait_of_this_thread():
    # 2 s elapsed, 1 s on the CPU, 0.5 s of the other second waiting for a CPU
    clock, cpu, wait = iter([1.0, 3.0]).__next__, iter([5.0, 6.0]).__next__, \
        iter([10.0, 10.5]).__next__
    measured, share = machine.metered(lambda: m(0.01), clock, wait, cpu)
    assert share == 0.5 and measured.median_s == 0.01
    assert machine.metered(lambda: m(0.01), clock=iter([1.0, 2.0]).__next__,
                        wait=lambda: None)[1] is None
    assert machine.cpu_wait_s() is None or machine.cpu_wait_s() >= 0


def test_floor_without_baseline():
    floor = Rule(None, None, None, 1e9, "qcrypto_floors: '* = 1e9'")
    v = judge(m(0.010), tries_of(0.010, 0.009), 2, None, None, floor)
    assert v.status == gate.NEW and len(v.tries) == 3
    assert v.message.startswith("below floor: sha256 openssl 4096 B digest: ")
    assert "floor 1000000000.00 KiB/s (qcrypto_floors: '* = 1e9')" in v.message


FLOOR = Rule(None, None, None, 390000.0, "qcrypto_floors: '* = 390000'")


def test_a_floor_judges_the_figure_by_the_clock():
    # 4096000 bytes in 0.0106 s by the clock (377358.49 KiB/s, what the table shows), of
    # which 0.0006 s waiting for a CPU: 400000.00 KiB/s without the wait, above the floor
    v = judge(m(0.0106, cpu=0.010), tries_of(0.0106, 0.0106, cpu=0.010), 2, None, None, FLOOR,
              first_wait=1.0, busy=[1.0, 1.0])
    assert v.failed and v.status == gate.NEW and len(v.tries) == 3
    assert v.measurement.kib_per_s == pytest.approx(377358.49, abs=0.005)
    assert v.message == (
        "below floor: sha256 openssl 4096 B digest: 377358.49 KiB/s (by the clock, as the "
        "table shows, although 6% of it was a wait for a CPU), floor 390000.00 KiB/s "
        "(qcrypto_floors: '* = 390000'); tries: 377358.49 (waited 6% of it for a CPU: "
        "400000.00 without), 377358.49 (waited 6% of it for a CPU: 400000.00 without), "
        "377358.49 (waited 6% of it for a CPU: 400000.00 without) KiB/s (fastest try 377358.49)")
    # against a baseline as well: no regression without the wait, still below the floor
    base = Result.from_measurement(m(0.010, cpu=0.010))
    v = judge(m(0.0106, cpu=0.010), tries_of(0.0106, 0.0106, cpu=0.010), 2, base, TEN, FLOOR,
              first_wait=1.0, busy=[1.0, 1.0])
    assert v.failed and v.status == gate.OK and len(v.tries) == 3
    assert v.message.startswith("below floor: sha256 openssl 4096 B digest: 377358.49 KiB/s ")


def test_the_kept_try_is_one_that_keeps_the_floor():
    # the first try is the fastest without its wait for a CPU, but below the floor by the
    # clock; the retry keeps the floor by the clock (392156.86 KiB/s): it counts, and passes
    for base in (None, Result.from_measurement(m(0.010, cpu=0.010))):
        v = judge(m(0.0106, cpu=0.010), tries_of(0.0102, 0.0102, cpu=0.0102), 2, base,
                  TEN if base else None, FLOOR, first_wait=1.0, busy=[0.0, 0.0])
        assert not v.failed and len(v.tries) == 2 and v.measurement is v.tries[1]
        assert v.measurement.kib_per_s == pytest.approx(392156.86, abs=0.005)


def test_not_judged_only_floors_apply():
    base = Result.from_measurement(m(0.001))
    v = judge(m(0.010), tries_of(), 2, base, TEN, None, not_judged="different machine")
    assert not v.failed and v.status == gate.NOT_JUDGED and len(v.tries) == 1


# -- through pytest ---------------------------------------------------------------------------


def baseline(pytester, name="base.json", factor=1.0, edit=None, sizes="16,64,256"):
    """Save a fake run, then write a copy as ``name`` whose figures are the fake's nominal
    speed (size bytes per 20 us: this shared machine may have slowed the saved run down)
    times ``factor``."""
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", sizes, "--qcrypto-save", "saved.json")
    assert r.ret == 0, r.stdout.str()
    doc = json.loads((pytester.path / "saved.json").read_text())
    for e in doc["results"]:
        e["bytes_per_second"] = e["size"] / 20e-6 * factor
        e["rounds_s"] = [e["count"] * 20e-6 / factor]  # load recomputes the figure from it
        e["cpu_s"] = list(e["rounds_s"])  # all of it on the CPU: no wait to take out
        e.pop("reference_s", None)  # hand-made figures: judged by the clock, as an old file
    if edit:
        edit(doc)
    (pytester.path / name).write_text(json.dumps(doc))
    return doc


def compare(pytester, *args, sizes="16,64,256", name="base.json"):
    return pytester.runpytest(*FAKE_RUN, "--qcrypto-size", sizes, "--qcrypto-compare", name,
                              "--junitxml", "junit.xml", *args)


def junit(pytester):
    """Per test case name of ``junit.xml``: (failure message or None, user properties)."""
    out = {}
    for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase"):
        failure = case.find("failure")
        props = {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        message = None
        if failure is not None:
            message = failure.get("message")
            if "; full report in element text]" in message:  # pytest >= 9.2 cuts it at 500
                message = failure.text.strip()
            message = message.removeprefix("Failed: ")
            # the item fails with a short line; its property holds the gate's whole message
            assert len(message) < 250 or "qcrypto_failure" not in props, message
            message = props.get("qcrypto_failure", message)
        out[case.get("name")] = (message, props)
    return out


@pytest.fixture
def fake(pytester):
    pytester.makeconftest(FAKE_AND_MISSING)
    return pytester


@pytest.fixture
def fake_clock(pytester):
    """The fake on a fake clock (``FAKE_CLOCK``): its rounds take exactly its nanoseconds."""
    pytester.makeconftest(FAKE_PLUGIN + FAKE_CLOCK)
    return pytester


def test_compare_with_itself_passes(fake):
    fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16,64,256", "--qcrypto-save", "base.json")
    r = compare(fake, "--qcrypto-save", "now.json")  # (saving over base.json is refused)
    assert r.ret == 0, r.stdout.str()
    r.assert_outcomes(passed=3)
    r.stdout.fnmatch_lines(["Change against baseline *base.json (negative = slower):",
                            "plugin * 16 * 64 * 256", "fake * [+-]*.*%* * [+-]*.*%* * [+-]*.*%*",
                            "Regression gate: baseline *base.json (3 results, created *"])


def test_figures_raised_by_half_fail_every_item(fake):
    baseline(fake, factor=1.5)
    r = compare(fake)
    assert r.ret == 1
    r.assert_outcomes(failed=3)
    r.stdout.fnmatch_lines(["regressions (3):", "  regression: sha256 fake 16 B digest:*",
                            "  regression: sha256 fake 64 B digest:*",
                            "  regression: sha256 fake 256 B digest:*",
                            "FAILED qcrypto::sha256?fake-16? - *regression: sha256 fake 16 B*"])
    # -33% on a quiet machine; a busy one only slows the fake further
    r.stdout.fnmatch_lines(["fake * -[3-9]*%! * -[3-9]*%! * -[3-9]*%!",
                            "  ! regression: slower than the threshold allows, on every try"])
    cases = junit(fake)
    assert sorted(cases) == ["sha256[fake-16]", "sha256[fake-256]", "sha256[fake-64]"]
    for name, (message, props) in cases.items():
        size = name.split("-")[1].rstrip("]")
        assert re.fullmatch(
            rf"regression: sha256 fake {size} B digest: " + KIB.replace("KiB/s", "KiB/s now", 1)
            + ", baseline " + KIB + r", change -[3-9]\d\.\d%" + CORRECTION
            + r", threshold 10% \(default\); " + TRIES +
            r"; (too few rounds for the median test|\d+ of \d+ rounds).*", message), message
        assert props["qcrypto_verdict"] == "regression" and props["qcrypto_tries"] == "3"
        assert float(props["qcrypto_change_pct"]) < -30
        assert float(props["qcrypto_kib_per_s"]) > 0 and props["qcrypto_threshold_pct"] == "10"


def test_figures_raised_by_five_percent_pass_a_ten_percent_threshold(fake):
    baseline(fake, factor=1.05)
    r = compare(fake, "--qcrypto-threshold", "10%")
    assert r.ret == 0, r.stdout.str()
    for message, props in junit(fake).values():
        assert message is None
        assert props["qcrypto_verdict"] in ("ok", "passed on a retry", "machine busy")
        assert -10 <= float(props["qcrypto_change_pct"]) < 0


def test_properties_without_a_baseline(fake):
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--junitxml", "junit.xml")
    assert r.ret == 0
    [(_, props)] = junit(fake).values()
    assert props["qcrypto_cell"] == "sha256:fake:16:digest"
    assert float(props["qcrypto_kib_per_s"]) > 0
    assert "qcrypto_change_pct" not in props and props["qcrypto_verdict"] == "ok"


def test_hand_made_regression_fails(fake):
    baseline(fake)
    fake_speed(fake, slow=2.0, slow_measurements="all")
    r = compare(fake)
    assert r.ret == 1
    r.assert_outcomes(failed=3)
    for message, _ in junit(fake).values():
        assert re.search(r"change -[45]\d\.\d%.*; " + TRIES, message), message


def test_short_slowdown_of_one_try_does_not_fail(fake):
    baseline(fake, sizes="64")
    fake_speed(fake, slow=3.0, slow_measurements=[0])  # only the first try is slow
    # (more tries than the default: this machine is shared, a retry may be preempted too)
    r = compare(fake, "--qcrypto-confirm", "5", sizes="64")
    assert r.ret == 0, r.stdout.str()
    [(_, props)] = junit(fake).values()
    assert int(props["qcrypto_tries"]) >= 2
    # (a retry that other processes slowed down, but not once their time is taken out, says so)
    assert props["qcrypto_verdict"] in ("passed on a retry", "machine busy")
    r.stdout.re_match_lines([r"(passed on a retry|machine busy \(not failed\)): sha256 fake 64 B "
                             r"digest: .*tries: [\d.]+.*, [\d.]+.* KiB/s"])


def test_slow_round_is_absorbed_by_the_median(fake_clock):
    r = fake_clock.runpytest(*FAKE_RUN, "--qcrypto-size", "64", "--qcrypto-rounds", "3",
                             "--qcrypto-save", "base.json")
    assert r.ret == 0, r.stdout.str()
    fake_speed(fake_clock, slow=3.0, hiccup_round2=[0])
    r = compare(fake_clock, "--qcrypto-rounds", "3", "--qcrypto-save", "now.json", sizes="64")
    assert r.ret == 0, r.stdout.str()
    [(message, props)] = junit(fake_clock).values()
    # rounds of 115 operations of 20 us (the count that 8 in 160 us predict take 2 ms x
    # 1.15); now the second is three times as long, and the median is the baseline's
    [base] = json.loads((fake_clock.path / "base.json").read_text())["results"]
    [entry] = json.loads((fake_clock.path / "now.json").read_text())["results"]
    assert base["count"] == entry["count"] == 115
    assert base["rounds_s"] == [0.0023, 0.0023, 0.0023]
    assert entry["rounds_s"] == [0.0023, 0.0069, 0.0023]
    assert entry["bytes_per_second"] == base["bytes_per_second"] == 3_200_000.0  # 64 B / 20 us
    r.stdout.fnmatch_lines(["fake * +0.0%"])
    assert message is None and props["qcrypto_tries"] == "1"
    assert props["qcrypto_verdict"] == "ok"


def test_thresholds_from_the_ini_file(fake):
    baseline(fake, factor=1.2)  # every cell 16.7% slower than the baseline
    fake.makeini("[pytest]\nqcrypto_thresholds =\n    *:*:16 = 25%\n    sha256:fake:64 = 5%\n"
                 "    sha256:*:256 = 30%\n    *:fake = 12%\n")
    r = compare(fake, "--qcrypto-threshold", "50")
    # 16: *:*:16 (one field) ties with the later *:fake (12%): the later line wins.
    # 64: three fields (5%) beat all.  256: two fields, sha256:*:256 (30%).
    assert r.ret == 1
    r.assert_outcomes(failed=2, passed=1)
    cases = junit(fake)
    assert "threshold 12% (qcrypto_thresholds in tox.ini: '*:fake = 12%')" in \
        cases["sha256[fake-16]"][0]
    assert "threshold 5% (qcrypto_thresholds in tox.ini: 'sha256:fake:64 = 5%')" in \
        cases["sha256[fake-64]"][0]
    assert cases["sha256[fake-256]"] == (None, cases["sha256[fake-256]"][1])
    assert cases["sha256[fake-256]"][1]["qcrypto_threshold_pct"] == "30"


def test_threshold_with_a_minus_sign_through_pytest(fake):
    # (pytest reads "--qcrypto-threshold -5%" as an option without its value: the README shows
    # --qcrypto-threshold=PCT, and the value is the slowdown allowed, never negative)
    r = fake.runpytest("--qcrypto-threshold=-5%")
    assert r.ret == USAGE
    r.stderr.fnmatch_lines(["*--qcrypto-threshold: a threshold is the slowdown allowed, a "
                            "positive percentage: write 5% (not -5%)*"])


def test_compare_only_options_without_a_baseline_say_so(fake):
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-threshold", "5%",
                       "--qcrypto-confirm", "1", "--qcrypto-allow-missing",
                       "--qcrypto-require-same-machine")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["qcrypto: --qcrypto-threshold, --qcrypto-confirm, "
                            "--qcrypto-allow-missing, --qcrypto-require-same-machine had no "
                            "effect: they apply only with --qcrypto-compare (or a floor)"])
    # --qcrypto-confirm does work for a floor
    fake.makeini("[pytest]\nqcrypto_floors =\n    sha256:fake = 1\n")
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-confirm", "1",
                       "--qcrypto-threshold", "5%")
    r.stdout.fnmatch_lines(["qcrypto: --qcrypto-threshold had no effect: it applies only with "
                            "--qcrypto-compare"])
    r = compare(fake, "--qcrypto-threshold", "5%", "--qcrypto-save", "base.json", sizes="16")
    assert "had no effect" not in r.stdout.str()


def test_bad_threshold_options_are_usage_errors(fake):
    r = fake.runpytest("--qcrypto-threshold", "lots")
    assert r.ret == USAGE
    r.stderr.fnmatch_lines(["*--qcrypto-threshold: 'lots' is not a percentage*"])
    r = fake.runpytest("--qcrypto-confirm", "-1")
    assert r.ret == USAGE
    fake.makeini("[pytest]\nqcrypto_thresholds =\n    sha256 = 5%\n    sha256:fake:16 = five\n")
    r = fake.runpytest()
    assert r.ret == USAGE
    r.stderr.fnmatch_lines(["*qcrypto_thresholds in tox.ini line 2 ('sha256:fake:16 = five'): "
                            "'five' is not a percentage*"])
    assert "Traceback" not in r.stdout.str() + r.stderr.str()


def test_floors_from_the_ini_file(fake):
    # the fake does 16 B per 20 us, about 780 KiB/s
    fake.makeini("[pytest]\nqcrypto_floors =\n    *:*:64 = 1000000\n    sha256:fake = 100\n"
                 "    sha256:fake:256 = 1000000\n")
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16,64,256", "--junitxml", "junit.xml")
    assert r.ret == 1
    r.assert_outcomes(passed=2, failed=1)  # 64: sha256:fake (two fields) beats *:*:64
    message, props = junit(fake)["sha256[fake-256]"]
    assert re.fullmatch(r"below floor: sha256 fake 256 B digest: " + FLOOR_KIB
                        + r", floor 1000000.00 KiB/s \(qcrypto_floors in tox.ini: "
                        r"'sha256:fake:256 = 1000000'\); "
                        + TRIES, message), message
    assert props["qcrypto_floor_kib_per_s"] == "1000000.00"
    assert props["qcrypto_verdict"] == "below floor"
    r.stdout.fnmatch_lines(["below floor (1):", "  below floor: sha256 fake 256 B digest: *"])


def test_floor_as_a_marker_argument(fake):
    fake.makepyfile(test_own='''
import pytest

@pytest.mark.qcrypto(floor=1_000_000)
def test_too_slow(qcrypto):
    qcrypto.open("sha256", "fake").measure(64)

@pytest.mark.qcrypto(floor={64: 100, "sha256:fake:16": 1_000_000})
def test_fast_enough(qcrypto):
    qcrypto.open("sha256", "fake").measure(64)

@pytest.mark.qcrypto("sha256", plugins=["fake"], sizes=[16], floor=5)
def test_marker_cases(qcrypto_case, qcrypto_context):
    qcrypto_context.measure(qcrypto_case.size)

@pytest.mark.qcrypto(floor="a lot")
def test_bad_floor(qcrypto):
    qcrypto.open("sha256", "fake").measure(64)
''')
    r = fake.runpytest("--qcrypto-min-time", "0.002", "--qcrypto-rounds", "1",
                       "--junitxml", "junit.xml")
    r.assert_outcomes(passed=2, failed=2)
    cases = junit(fake)
    assert re.fullmatch(r"below floor: sha256 fake 64 B digest: " + FLOOR_KIB
                        + r", floor 1000000.00 KiB/s \(@pytest.mark.qcrypto\(floor=...\)\); "
                        r"tries: .*",
                        cases["test_too_slow"][0])
    assert cases["test_bad_floor"][0] == \
        "@pytest.mark.qcrypto(floor=...): 'a lot' is not a number of KiB/s (or ops/s for " \
        "the kinds without a buffer size)"
    assert cases["test_fast_enough"][0] is None
    assert cases["test_fast_enough"][1]["qcrypto_floor_kib_per_s"] == "100.00"
    assert "During handling of the above exception" not in r.stdout.str()


def test_a_bad_floor_on_marker_cases_is_a_collection_error(fake):
    fake.makepyfile(test_own='''
import pytest

@pytest.mark.qcrypto("sha256", plugins=["fake"], sizes=[16], floor="fast")
def test_marker_cases(qcrypto_case, qcrypto_context):
    qcrypto_context.measure(qcrypto_case.size)
''')
    r = fake.runpytest()
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.stdout.fnmatch_lines(["test_marker_cases: @pytest.mark.qcrypto: floor: 'fast' is not a number of KiB/s "
                            "(or ops/s for the kinds without a buffer size)"])
    assert "Traceback" not in r.stdout.str()


def test_missing_baseline_cell_fails_the_item(fake):
    def add_missing(doc):
        extra = dict(doc["results"][0], plugin="missing", canonical_plugin="missing")
        doc["results"].append(extra)

    baseline(fake, sizes="16", edit=add_missing)
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-plugin", "missing", "--qcrypto-size", "16",
                       "--qcrypto-compare", "base.json", "--junitxml", "junit.xml")
    assert r.ret == 1
    r.assert_outcomes(passed=1, failed=1)  # a failed test, not an error
    message, _ = junit(fake)["sha256[missing-16]"]
    assert re.fullmatch(r"missing: sha256 missing 16 B digest is in the baseline \([\d.]+ KiB/s\) "
                        r"but was skipped now: missing: unavailable: libmissing is not installed "
                        r"\(--qcrypto-allow-missing accepts this\)", message), message
    r.stdout.fnmatch_lines(["missing * missing"])  # the change table
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-plugin", "missing", "--qcrypto-size", "16",
                       "--qcrypto-compare", "base.json", "--qcrypto-allow-missing")
    assert r.ret == 0
    r.assert_outcomes(passed=1, skipped=1)
    r.stdout.fnmatch_lines(["missing cells:", "  sha256 missing digest, size 16: in the "
                            "baseline, skipped now (allowed by --qcrypto-allow-missing): *"])


def test_new_and_not_collected_cells_are_summary_lines(fake):
    baseline(fake, sizes="16,64")
    r = compare(fake, sizes="64,256")
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["no baseline entry (not judged):",
                            "  sha256 fake digest, size 256: new",
                            "in the baseline but not measured in this run:",
                            "  sha256 fake digest, size 16: not run"])
    r.stdout.fnmatch_lines(["fake * [+-]*%* * new"])


def test_driver_change_is_named(fake):
    fake_speed(fake, driver="cbc-aes-aesni")
    baseline(fake, sizes="16")
    fake_speed(fake, driver="cbc(aes-generic)")
    r = compare(fake, sizes="16")
    r.stdout.fnmatch_lines(["driver changed: sha256 fake 16 B digest: cbc-aes-aesni "
                            "(baseline) vs cbc(aes-generic) (now)"])


def test_other_machine_and_library_are_named(fake):
    def elsewhere(doc):
        doc["machine"]["cpu_model"] = "Some Other CPU"
        doc["plugins"]["fake"]["version"] = "fake 0.9"

    baseline(fake, factor=1.5, edit=elsewhere)
    r = compare(fake)
    assert r.ret == 1
    r.stdout.fnmatch_lines(["machine differs from the baseline: cpu_model: 'Some Other CPU' "
                            "(baseline) vs * (now)",
                            "library differs from the baseline: fake: 'fake 0.9' (baseline) "
                            "vs 'fake 1.0' (now)"])
    r = compare(fake, "--qcrypto-require-same-machine")
    # issue 14: the items pass unjudged, but a compare that judged no cell fails the run
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=3)
    r.stdout.fnmatch_lines(["fake * -*%? * -*%? * -*%?",
                            "not judged: different machine (cpu_model, fake version): 3 "
                            "measurements pass unjudged",
                            "ERROR: qcrypto: nothing was judged: 3 cells had a baseline entry, "
                            "but none could be judged (different machine (cpu_model, fake "
                            "version)); a comparison that judges nothing fails *"])
    for _, props in junit(fake).values():
        assert props["qcrypto_verdict"] == \
            "not judged: different machine (cpu_model, fake version)"


def test_library_difference_alone_leaves_items_unjudged_by_ini(fake):
    baseline(fake, factor=1.5, sizes="16")
    fake_speed(fake, version="fake 2.0")
    fake.makeini("[pytest]\nqcrypto_require_same_machine = true\n")
    r = compare(fake, sizes="16")
    assert r.ret == 1, r.stdout.str()  # issue 14: nothing judged fails the run
    r.stdout.fnmatch_lines(["library differs from the baseline: fake: 'fake 1.0' (baseline) "
                            "vs 'fake 2.0' (now)",
                            "not judged: different machine (fake version): 1 measurement "
                            "passes unjudged",
                            "ERROR: qcrypto: nothing was judged: 1 cell had a baseline entry, *"])


def test_schema_1_baseline(fake):
    (fake.path / "old.json").write_text(json.dumps({"schema_version": 1, "results": [
        {"algorithm": "sha256", "plugin": "fake", "size": 16, "kib_per_s": 1.0},
        {"algorithm": "sha256", "plugin": "fake", "size": 64, "kib_per_s": 1e9}]}))
    r = compare(fake, "--qcrypto-confirm", "0", sizes="16,64", name="old.json")
    r.assert_outcomes(passed=1, failed=1)
    assert "baseline 1000000000.00 KiB/s" in junit(fake)["sha256[fake-64]"][0]


BAD_BASELINES = {
    "missing": (None, "no such file"),
    "directory": ("DIR", "is a directory"),
    "not JSON": (b"{", "not JSON (Expecting property name enclosed in double quotes at line 1"),
    "another tool's file": (b'{"machine_info": {}, "benchmarks": []}',
                            "not a pytest-qcrypto results file (no schema_version field)"),
    "newer schema": (b'{"schema_version": 7}', "schema_version 7 was written by a newer"),
    "wrong type": (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
                   b'"results": [{"algorithm": "sha256", "plugin": "fake", "size": 16, '
                   b'"direction": "digest", "count": 1, "rounds_s": "fast", '
                   b'"bytes_per_second": 1}]}',
                   "results[0].rounds_s must be a list of positive seconds"),
    "incomplete": (b'{"schema_version": 2, "complete": false, "machine": {}, "plugins": {}, '
                   b'"results": []}', "the run that wrote it did not finish"),
    "no results": (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
                   b'"results": []}', "base.json: no results"),
    "a cell twice": (b'{"schema_version": 1, "results": [{"algorithm": "sha256", "plugin": '
                     b'"fake", "size": 16, "kib_per_s": 1.0}, {"algorithm": "sha256", "plugin":'
                     b' "fake", "size": 64, "kib_per_s": 1.0}, {"algorithm": "sha256", "plugin":'
                     b' "fake", "size": 16, "kib_per_s": 2.0}]}',
                     "base.json: results[2] repeats results[0]: sha256 fake 16 B digest is in "
                     "the file twice"),
    "truncated": (b'{"schema_version": 2, "complete": true, "machine": {"cpu_model": "AMD',
                  "not JSON (Unterminated string starting at line 1 column 66); the file ends "
                  "too early"),
}


@pytest.mark.parametrize("case", list(BAD_BASELINES))
def test_bad_baseline_is_a_usage_error(fake, case):
    content, problem = BAD_BASELINES[case]
    path = fake.path / "base.json"
    if content == "DIR":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    r = compare(fake)
    assert r.ret == USAGE
    err = r.stderr.str()
    assert "--qcrypto-compare: " in err and "base.json" in err and problem in err, err
    assert "Traceback" not in err + r.stdout.str()


def test_sleeping_plugin_fails_ci(pytester):
    """A conftest that makes the real openssl plugin sleep in each operation fails the gate."""
    run = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "openssl", "--qcrypto-size", "4096",
           "--qcrypto-min-time", "0.005", "--qcrypto-rounds", "1", "-p", "no:cacheprovider")
    r = pytester.runpytest_subprocess(*run, "--qcrypto-save", "base.json")
    assert r.ret == 0
    pytester.makeconftest('''
import time
from pytest_qcrypto.backends import openssl

_open = openssl.OpenSSLPlugin.open

def sleepy_open(self, algorithm, key, variant=None):
    ctx = _open(self, algorithm, key, variant)
    fast_runner = ctx.runner

    def runner(work):
        run = fast_runner(work)
        def slow(count):
            for _ in range(count):
                run(1)
                time.sleep(0.0002)
        return slow
    ctx.runner = runner
    return ctx

openssl.OpenSSLPlugin.open = sleepy_open
''')
    r = pytester.runpytest_subprocess(*run, "--qcrypto-compare", "base.json", "--junitxml",
                                      "junit.xml")
    assert r.ret == 1
    r.stdout.fnmatch_lines(["regressions (1):", "  regression: sha256 openssl 4096 B digest: *"])
    assert junit(pytester)["sha256[openssl-4096]"][0].startswith("regression: ")


def test_other_jobs_count_is_not_judged(fake):
    baseline(fake, factor=1.5, sizes="16")
    r = compare(fake, "--qcrypto-jobs", "2", sizes="16")
    assert r.ret == 1, r.stdout.str()  # issue 14: a compare that judged no cell fails
    r.stdout.fnmatch_lines(["not judged: different jobs (1 in the baseline, 2 now): 1 "
                            "measurement passes unjudged",
                            "ERROR: qcrypto: nothing was judged: 1 cell had a baseline entry, "
                            "but none could be judged (different jobs (1 in the baseline, 2 "
                            "now)); *"])


def test_the_ci_example_settings_are_valid(fake):
    example = Path(__file__).parent.parent / "examples" / "ci" / "pyproject.toml"
    text = example.read_text().replace('["openssl", "hashlib"]', '["fake"]')
    (fake.path / "pyproject.toml").write_text(text)
    baseline(fake, sizes="64,1024,16384")
    r = fake.runpytest("--qcrypto-digest", "sha256", "--qcrypto-min-time", "0.002",
                       "--qcrypto-rounds", "1", "--qcrypto-compare", "base.json",
                       "--junitxml", "junit.xml")
    assert r.ret == 0, r.stdout.str()
    props = junit(fake)["sha256[fake-64]"][1]
    assert props["qcrypto_threshold_pct"] == "20"  # "*:*:64 = 20%"


# -- options given more than once ---------------------------------------------------------------


def test_two_save_paths_are_a_usage_error_naming_both(fake):
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-save", "a.json",
                       "--qcrypto-save=b.json")
    assert r.ret == USAGE
    assert [line for line in r.errlines if line] == [
        "ERROR: --qcrypto-save was given more than once, with different files ('a.json', "
        "'b.json'): a run writes one results file; give it once"]
    assert not (fake.path / "a.json").exists() and not (fake.path / "b.json").exists()
    # the same file twice is that file
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-save", "a.json",
                       "--qcrypto-save", "./a.json")
    assert r.ret == 0, r.stdout.str()
    assert len(json.loads((fake.path / "a.json").read_text())["results"]) == 1


def test_one_cell_of_one_test_in_two_baselines_is_a_usage_error_naming_both(fake):
    # issue 14 changed this: several --qcrypto-compare files are joined (tests/test_compare.py),
    # so two files are refused only when both have a cell for the same test
    baseline(fake, name="a.json", sizes="16")
    baseline(fake, name="b.json", sizes="16")
    r = compare(fake, "--qcrypto-compare", "b.json", sizes="16", name="a.json")
    assert r.ret == USAGE
    assert [line for line in r.errlines if line] == [
        "ERROR: --qcrypto-compare: a.json and b.json both have sha256 fake 16 B digest of test "
        "qcrypto::sha256[fake-16]: which would count? Give each cell of a test in one baseline "
        "file only (leave one file out, or save the shards with different cells)"]
    r = compare(fake, "--qcrypto-compare=./a.json", sizes="16", name="a.json")  # one file twice
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["Regression gate: baseline */a.json (1 result*"])
