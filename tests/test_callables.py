"""Your own code in KiB/s (pytest_qcrypto.measure.callables).

The test projects time their callable on a fake clock: each call of ``encrypt_record``
advances it by NS_PER_BYTE ns per byte (fake.json; 1 by default, so 4096 bytes take
4096 ns: 10**9 bytes/s, 976562.50 KiB/s), and the figures are exact.
"""

import json
import subprocess
import sys
import time
import types

import pytest

from pytest_qcrypto import measure_callable
from pytest_qcrypto.algorithms import callable_names
from pytest_qcrypto.measure import harness
from pytest_qcrypto.results import store as results
from pytest_qcrypto.gate import rules
from pytest_qcrypto.measure.bench import Randomness
from pytest_qcrypto.measure.callables import CheckError
from pytest_qcrypto.algorithms.settings import SettingsError

#: The test project: a fake clock that only the callables advance, the fixture method and
#: the marker form.
PROJECT = '''
import json, time, types
from pathlib import Path

import pytest

from pytest_qcrypto.measure import harness

FAKE = Path(__file__).with_name("fake.json")
NS_PER_BYTE = json.loads(FAKE.read_text())["ns_per_byte"] if FAKE.exists() else 1
CLOCK = [0]


@pytest.fixture(autouse=True)
def fake_clock(monkeypatch):
    tick = lambda: CLOCK[0]
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(
        perf_counter_ns=tick, process_time_ns=tick, monotonic=time.monotonic))


def encrypt_record(data):
    CLOCK[0] += NS_PER_BYTE * len(data)


def seal_record(data):
    CLOCK[0] += 2 * len(data)
    return data[::-1]


def test_by_hand(qcrypto):
    m = qcrypto.measure_callable(encrypt_record, size=4096)
    assert (m.algorithm, m.plugin, m.direction) == ("encrypt_record", "callable", "call")
    assert m.kib_per_s == pytest.approx(10**9 / NS_PER_BYTE / 1024)


@pytest.mark.qcrypto(callable=seal_record, sizes=[1024, 4096],
                     check=lambda data, out: out == data[::-1])
def test_marker(qcrypto_case, qcrypto_context):
    qcrypto_context.measure(qcrypto_case.size)
'''

FAST = ("-p", "no:cacheprovider", "--qcrypto-min-time", "0.002", "--qcrypto-rounds", "3")


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_own=PROJECT)
    return pytester


def slow_down(pytester, ns_per_byte):
    (pytester.path / "fake.json").write_text(json.dumps({"ns_per_byte": ns_per_byte}))


# -- through pytest --------------------------------------------------------------------------


def test_fixture_and_marker_show_kib_per_s_and_save(project):
    r = project.runpytest(*FAST, "--qcrypto-save", "base.json")
    assert r.ret == 0, r.stdout.str()
    r.assert_outcomes(passed=3)
    r.stdout.fnmatch_lines(["Benchmark results for 'encrypt_record' callable (KiB/s):",
                            "plugin          4096",
                            "callable   976562.50",
                            "",
                            "Benchmark results for 'seal_record' callable (KiB/s):",
                            "plugin          1024       4096",
                            "callable   488281.25  488281.25"])
    doc = json.loads((project.path / "base.json").read_text())
    saved = {(e["algorithm"], e["size"]): e for e in doc["results"]}
    assert sorted(saved) == [("encrypt_record", 4096), ("seal_record", 1024),
                             ("seal_record", 4096)]
    e = saved["encrypt_record", 4096]
    assert (e["plugin"], e["canonical_plugin"], e["direction"]) == ("callable", "callable", "call")
    assert e["operation"] == ("one call of the user's callable on `size` bytes, as the caller "
                              "declares")
    assert e["bytes_per_second"] == pytest.approx(1e9) and e["test"] == "test_own.py::test_by_hand"
    assert "callable" not in doc["plugins"]  # a callable's row is no crypto plugin
    loaded = results.load(project.path / "base.json")
    assert len(loaded.results) == 3


def test_a_slowed_callable_fails_the_gate_and_the_same_one_passes(project):
    assert project.runpytest(*FAST, "--qcrypto-save", "base.json").ret == 0
    slow_down(project, 20)  # 20 times the work
    r = project.runpytest(*FAST, "--qcrypto-compare=base.json")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=2, failed=1)
    # 10**9 / 20 B/s = 48828.125 KiB/s exactly: to two decimals .12 or .13, as the float's
    # last bit falls (the count is no longer a power of two, which divided exactly)
    r.stdout.fnmatch_lines([
        "*_ test_by_hand _*",
        "regression: encrypt_record callable 4096 B call: change -95.0%, threshold 10% (median "
        "test, p = 0.0455); 48828.1[23] KiB/s now, baseline 976562.50 (detail in the qcrypto "
        "summary)",
        "  regression: encrypt_record callable 4096 B call: 48828.1[23] KiB/s now, baseline "
        "976562.50 KiB/s, change -95.0%, threshold 10% (default); tries: 48828.1[23], "
        "48828.1[23], 48828.1[23] KiB/s (fastest try 48828.1[23]); 9 of 9 rounds slower *",
        "FAILED test_own.py::test_by_hand - *"])
    slow_down(project, 1)
    r = project.runpytest(*FAST, "--qcrypto-compare=base.json")
    assert r.ret == 0, r.stdout.str()
    r.assert_outcomes(passed=3)


def test_run_wide_direction_options_leave_a_callable_alone(project):
    r = project.runpytest(*FAST, "--qcrypto-check-roundtrip", "--qcrypto-roundtrip")
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["Benchmark results for 'encrypt_record' callable (KiB/s):"])


def test_a_quick_run_and_a_plain_one_measure_a_callable(project):
    # a quick run tells the measurement to leave out the reference workload, a plain run
    # (default rounds) to let the rounds settle: both reached a callable as unknown keywords
    r = project.runpytest("-p", "no:cacheprovider", "--qcrypto-quick")
    assert r.ret == 0, r.stdout.str()
    r = project.runpytest("-p", "no:cacheprovider", "--qcrypto-min-time", "0.002")
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["Benchmark results for 'encrypt_record' callable (KiB/s):"])


def test_rule_patterns_name_a_callable(project):
    assert project.runpytest(*FAST, "--qcrypto-save", "base.json").ret == 0
    slow_down(project, 1.5)  # -33%
    project.makeini("[pytest]\nqcrypto_thresholds =\n    encrypt_record:*:4096 = 50%\n")
    r = project.runpytest(*FAST, "--qcrypto-compare=base.json")
    assert r.ret == 0, r.stdout.str()
    project.makeini("[pytest]\nqcrypto_floors =\n    encrypt_record:callable:4096 = 1000000\n")
    r = project.runpytest(*FAST, "-k", "by_hand")
    assert r.ret == 1, r.stdout.str()
    r.stdout.fnmatch_lines(["*_ test_by_hand _*", "below floor: encrypt_record callable 4096 B "
                            "call: 651041.67 KiB/s*floor 1000000.00 KiB/s*",
                            "FAILED test_own.py::test_by_hand - *"])


def test_a_floor_on_the_marker(pytester):
    pytester.makepyfile(test_floor=PROJECT.replace(
        "sizes=[1024, 4096],", "sizes=[1024, 4096], floor={4096: 500000},"))
    r = pytester.runpytest(*FAST, "-k", "marker")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=1, failed=1)
    r.stdout.fnmatch_lines(["*_ test_marker[[]seal_record-callable-4096[]] _*",
                            "below floor: seal_record callable 4096 B call: 488281.25 KiB/s*",
                            "FAILED test_floor.py::test_marker[[]seal_record-callable-4096[]] *"])


@pytest.mark.parametrize("call, message", [
    ("qcrypto.measure_callable(len, size=0)",
     "measure_callable(): size must be a whole number of bytes from 1, not 0"),
    ("qcrypto.measure_callable(len, size='4096')",
     "measure_callable(): size must be a whole number of bytes from 1, not '4096'"),
    ("qcrypto.measure_callable(42, size=16)",
     "measure_callable(): fn must be a callable taking the data buffer, not 42"),
    ("qcrypto.measure_callable(len, size=16, name='SHA-256')",
     "measure_callable(): the name 'SHA-256' of a callable is the catalog's digest sha256: "
     "give it a name of its own, e.g. name=\"my_sha256\""),
    ("qcrypto.measure_callable(lambda data: None, size=16)",
     "measure_callable(): the name '<lambda>' of a callable must be a letter or _ then "
     "letters, digits, _ . or - (at most 64 characters), e.g. name=\"encrypt_record\""),
    ("qcrypto.measure_callable(lambda data: 1 / 0, size=16, name='broken')",
     "callable broken at 16 bytes failed: ZeroDivisionError: division by zero "
     "(*test_bad.py:* in <lambda>)"),
    ("qcrypto.measure_callable(len, size=16, check=lambda data, out: out == 17)",
     "callable len at 16 bytes: check(data, result) returned False, not true"),
])
def test_bad_input_fails_the_test_in_one_line(pytester, call, message):
    pytester.makepyfile(test_bad=f"def test_it(qcrypto):\n    {call}\n")
    r = pytester.runpytest("-p", "no:cacheprovider", "--qcrypto-min-time", "0.001")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*_ test_it _*", message, "FAILED test_bad.py::test_it - *"])
    assert "Traceback" not in r.stdout.str() and "pytest_qcrypto/" not in r.stdout.str()


@pytest.mark.parametrize("marker, message", [
    ('callable=len, name="sha256", sizes=[16]',
     "@pytest.mark.qcrypto: callable=: the name 'sha256' of a callable is the catalog's digest "
     'sha256: give it a name of its own, e.g. name="my_sha256"'),
    ('"sha256", callable=len, sizes=[16]',
     "@pytest.mark.qcrypto: algorithms: not with callable= (it takes sizes, name, check and "
     "floor)"),
    ("callable=len, sizes=[0]", "@pytest.mark.qcrypto: sizes: *"),
    ("callable=len, check=3", "@pytest.mark.qcrypto: callable=: check must be None or a "
                              "callable check(data, result) -> bool, not 3")])
def test_a_bad_marker_fails_that_test_with_its_name(pytester, marker, message):
    pytester.makepyfile(test_m=f"""
import pytest

@pytest.mark.qcrypto({marker})
def test_one(qcrypto_case, qcrypto_context):
    qcrypto_context.measure(qcrypto_case.size)
""")
    r = pytester.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(errors=1)  # the test errs with the reason; the module is collected
    r.stdout.fnmatch_lines([f"test_one: {message}"])


def test_report_reads_a_callables_results(project):
    assert project.runpytest(*FAST, "--qcrypto-save", "base.json").ret == 0
    r = project.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report", "base.json")
    assert r.ret == 0, r.stderr.str()
    r.stdout.fnmatch_lines(["Benchmark results for 'encrypt_record' callable (KiB/s):",
                            "plugin               4096", "base/callable   976562.50"])


# -- plain Python --------------------------------------------------------------------------


def fake_clock(monkeypatch):
    clock = [0]
    tick = lambda: clock[0]  # noqa: E731
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(
        perf_counter_ns=tick, process_time_ns=tick, monotonic=time.monotonic))
    return clock


def test_measure_callable_without_pytest(monkeypatch):
    clock = fake_clock(monkeypatch)
    seen = []

    def work(data):
        seen.append(data)
        clock[0] += 1000  # 1 us per call

    m = measure_callable(work, 4096, name="work", min_time=0.001, rounds=3, seed=7)
    # 1, 2, ..., 64 calls (64 us: over 1/16 of 1 ms), then the 1150 calls they predict
    # take 1 ms x 1.15 (64 x 1.15 ms / 64 us)
    assert (m.count, m.rounds_s, m.size) == (1150, (0.00115,) * 3, 4096)
    assert m.kib_per_s == pytest.approx(4096 / 1e-6 / 1024)
    assert len(seen) == 1 + 127 + 1150 + 2 * 1150  # the checked call, calibration, rounds
    assert len(set(seen)) == 1 and len(seen[0]) == 4096
    monkeypatch.undo()  # the real clock
    again = []
    measure_callable(again.append, 16, name="again", count=2, rounds=1, seed=7)
    assert again[0] == Randomness(7).bytes(16)  # the seed's data


def test_plain_errors(monkeypatch):
    with pytest.raises(ValueError, match="^size must be a whole number of bytes from 1, not -1$"):
        measure_callable(len, -1)
    with pytest.raises(ValueError, match="fn must be a callable taking the data buffer, not 'x'"):
        measure_callable("x", 16)
    with pytest.raises(CheckError, match="callable len at 16 bytes: check"):
        measure_callable(len, 16, check=lambda data, out: False)
    with pytest.raises(ZeroDivisionError):
        measure_callable(lambda data: 1 / 0, 16, name="broken")


# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["encrypt_record", "seal-v2", "md5_fast", "Service.seal"])
def test_usable_names(name):
    assert callable_names.name_problem(name) is None
    assert rules.parse_pattern(f"{name}:*:4096", "here") == (name, None, 4096)


@pytest.mark.parametrize("name, problem", [
    ("sha256", "is the catalog's digest sha256"), ("AES128", "is the catalog's cipher "
                                                          "aes-128-cbc"),
    ("sha265", "is too close to the catalog's sha256 (a typo?)"),
    ("a:b", "must be a letter or _ then"), ("", "must be a letter or _ then"),
    ("x" * 65, "must be a letter or _ then")])
def test_names_that_collide_with_the_catalog(name, problem):
    assert problem in callable_names.name_problem(name)


def test_a_mistyped_algorithm_in_a_rule_is_still_unknown():
    with pytest.raises(SettingsError, match="unknown algorithm 'sha265'; did you mean sha256"):
        rules.parse_pattern("sha265:*:16", "here")
