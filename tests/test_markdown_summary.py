"""Issue 14, part O: the markdown summary (change grid, regressions, verdict counts as tables),
the csv jobs column and the suspicious speed-up (flagged; failed only with --qcrypto-strict)."""

import csv
import json
import re
from pathlib import Path

import pytest

from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.output import render
from pytest_qcrypto.gate.verdicts import BaselineIndex, GateRules, Rule, Verdict
from pytest_qcrypto.gate.summary import (speedup, speedup_failure, summary_lines,
                                         summary_tables)
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.layouts import LAYOUTS, Figures
from pytest_qcrypto.output.markdown import markdown_changes, markdown_gate
from pytest_qcrypto.output.render import Output
from pytest_qcrypto.results.store import Result, ResultsFile
from pytest_qcrypto.gate.rules import parse_speedup
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.output.tables import GateTables, SummaryTable
from test_cli import qcrypto
from test_gate import FAKE_AND_MISSING, baseline, compare, junit
from test_layouts import GRID, Terminal, changes, table
from test_results import FAKE_RUN

TEN = Rule(None, None, None, 10.0, "default")
FLOOR = Rule(None, None, None, 200000.0, "qcrypto_floors: '* = 200000'")


def m(seconds, size=4096, count=1000):
    """``count`` operations of ``size`` bytes in ``seconds``: 4096 B x 1000 in 0.01 s is
    400000.00 KiB/s."""
    return Measurement("sha256", "openssl", size, "digest", count, (seconds,),
                       canonical_plugin="openssl")


def verdict(now, base=None, status=gate.OK, failures=(), tries=1, floor=None):
    """A verdict as the gate gives it: ``now`` kept, ``base`` the baseline's measurement."""
    b = Result.from_measurement(base) if base is not None else None
    return Verdict(now, [now] * tries, [None] * tries, now.bytes_per_second, b,
                   b.bytes_per_second if b else 0.0, TEN if b else None, floor, status,
                   list(failures))


def key(v):
    return (v.measurement.algorithm, v.measurement.plugin, v.measurement.size, "digest")


@pytest.fixture
def outcome():
    """A regression (-50%), an ok cell, a 10x speed-up, a new cell, one below its floor, a
    baseline cell skipped now and one not run at all."""
    slow = verdict(m(0.020), m(0.010), gate.REGRESSION, ["regression: sha256 openssl 4096 B"
                                                         " digest: ..."], tries=3)
    ok = verdict(m(0.0101, 16), m(0.010, 16))
    fast = verdict(m(0.001, 64), m(0.010, 64))
    new = verdict(m(0.010, 256), status=gate.NEW)
    low = verdict(m(0.010, 1024), m(0.010, 1024), failures=["below floor: sha256 openssl 1024 "
                                                            "B digest: ..."], tries=3,
                  floor=FLOOR)
    verdicts = {key(v): v for v in (slow, ok, fast, new, low)}
    results = [v.baseline for v in verdicts.values() if v.baseline is not None]
    results += [Result.from_measurement(m(0.010, 8192)), Result.from_measurement(m(0.010, 32))]
    index = BaselineIndex(ResultsFile(results, path=Path("base.json"),
                                      created="2026-01-02T03:04:05Z"))
    for k in verdicts:
        index.for_test(k[:3] + ("digest",), None)
    gone = {("sha256", "openssl", 8192, "digest"): "the plugin is gone"}
    index.seen.add(("sha256", "openssl", 8192, "digest"))
    return GateRules(), index, verdicts, gone


HEADING = ("baseline base.json (6 results, created 2026-01-02T03:04:05Z), threshold 10% "
           "unless an ini line says otherwise, 2 confirmation tries")


def test_the_gate_outcome_as_tables(outcome):
    rules, index, verdicts, gone = outcome
    assert summary_tables(rules, index, verdicts, gone) == GateTables(HEADING, (
        SummaryTable("Regressions (1)",
                     ("cell", "now KiB/s", "baseline KiB/s", "change", "change computed from",
                      "threshold", "tries"),
                     (("sha256 openssl 4096 B digest", "200000.00", "400000.00", "-50.0%",
                       "the figures shown", "10%", "fastest try of 3"),), (1, 2, 3, 5)),
        SummaryTable("Below floor (1)", ("cell", "now KiB/s", "floor KiB/s", "tries"),
                     (("sha256 openssl 1024 B digest", "100000.00", "200000.00", "3"),),
                     (1, 2, 3)),
        SummaryTable("Suspicious speed-ups (1), beyond 3x the baseline (default): the baseline "
                     "or the measurement is likely broken; not failed (--qcrypto-strict would "
                     "fail them)", ("cell", "now KiB/s", "baseline KiB/s", "change",
                                    "change computed from", "speed-up"),
                     (("sha256 openssl 64 B digest", "62500.00", "6250.00", "+900.0%",
                       "the figures shown", "10.00x"),), (1, 2, 3, 5)),
        SummaryTable("Verdicts", ("verdict", "cells"),
                     (("regression", "1"), ("below floor", "1"), ("suspicious speed-up", "1"),
                      ("missing", "1"), ("ok", "1"), ("no baseline", "1"),
                      ("in the baseline, not run", "1")), (1,)),
    ))
    assert summary_tables(rules, None, verdicts, gone) is None  # not comparing


def test_the_gate_tables_in_markdown(outcome):
    rules, index, verdicts, gone = outcome
    assert markdown_gate(summary_tables(rules, index, verdicts, gone)) == [
        "### Regression gate",
        "",
        HEADING,
        "",
        "**Regressions (1)**",
        "",
        "| cell | now KiB/s | baseline KiB/s | change | change computed from | threshold | tries |",
        "| :--- | ---: | ---: | ---: | :--- | ---: | :--- |",
        "| sha256 openssl 4096 B digest | 200000.00 | 400000.00 | -50.0% | the figures shown | "
        "10% | fastest try of 3 |",
        "",
        "**Below floor (1)**",
        "",
        "| cell | now KiB/s | floor KiB/s | tries |",
        "| :--- | ---: | ---: | ---: |",
        "| sha256 openssl 1024 B digest | 100000.00 | 200000.00 | 3 |",
        "",
        "**Suspicious speed-ups (1), beyond 3x the baseline (default): the baseline or the "
        "measurement is likely broken; not failed (--qcrypto-strict would fail them)**",
        "",
        "| cell | now KiB/s | baseline KiB/s | change | change computed from | speed-up |",
        "| :--- | ---: | ---: | ---: | :--- | ---: |",
        "| sha256 openssl 64 B digest | 62500.00 | 6250.00 | +900.0% | the figures shown | "
        "10.00x |",
        "",
        "**Verdicts**",
        "",
        "| verdict | cells |",
        "| :--- | ---: |",
        "| regression | 1 |",
        "| below floor | 1 |",
        "| suspicious speed-up | 1 |",
        "| missing | 1 |",
        "| ok | 1 |",
        "| no baseline | 1 |",
        "| in the baseline, not run | 1 |",
    ]
    assert markdown_gate(None) == []


def test_the_change_grid_is_a_markdown_table_under_its_table():
    t = table()
    lines = LAYOUTS["markdown"].draw(Figures([t], changes={t.key: changes(GRID)}))
    assert lines == [
        "### Benchmark results for 'sha256' digest (KiB/s)",
        "",
        "| plugin | 16 | 4096 |",
        "| :--- | ---: | ---: |",
        "| openssl | 16.00 | 1024.00 |",
        "| hashlib | 8.00 | - |",
        "",
        "- `-` hashlib (size 4096): not measured in this run",
        "",
        "**Change against baseline base.json (negative = slower)**",
        "",
        "| plugin | 16 | 4096 |",
        "| :--- | ---: | ---: |",
        "| openssl | -12.5%! | +0.3% |",
        "| hashlib | new | missing |",
        "",
        "- `!` regression: slower than the threshold allows, on every try",
    ]
    assert LAYOUTS["markdown"].draws_changes  # not again as text after it
    # a mark that markdown would take for strike-through is escaped; nothing to show: nothing
    noisy = changes({**GRID, ("openssl", 16): "-12.5%~"})
    assert "| openssl | -12.5%\\~ | +0.3% |" in markdown_changes(noisy)
    assert markdown_changes(changes(dict.fromkeys(GRID, "-"))) == []
    assert markdown_changes(["drawn", "already"]) == ["```text", "drawn", "already", "```"]


def test_the_step_summary_gets_the_change_grid_and_the_gate_tables(outcome, monkeypatch,
                                                                    tmp_path):
    rules, index, verdicts, gone = outcome
    gate_tables = summary_tables(rules, index, verdicts, gone)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    t = table()
    term = Terminal()
    render.write_summary(term, [t], Output(format="csv"), False,
                         after_table=lambda _: changes(GRID), gate_tables=gate_tables)
    figures = Figures([t], changes={t.key: changes(GRID)}, gate_tables=gate_tables)
    assert summary.read_text().splitlines() == LAYOUTS["markdown"].draw(figures) + [""]
    assert "### Regression gate" not in term.lines  # the terminal has the summary lines


def test_the_markdown_format_draws_the_gate_tables_after_all_tables(outcome, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    rules, index, verdicts, gone = outcome
    gate_tables = summary_tables(rules, index, verdicts, gone)
    term = Terminal()
    render.write_summary(term, [table()], Output(format="markdown"), False,
                         after_table=lambda _: changes(GRID), gate_tables=gate_tables)
    drawn = LAYOUTS["markdown"].draw(Figures([table()], changes={table().key: changes(GRID)}))
    assert term.lines == ["=== qcrypto speed ==="] + drawn + [""] + markdown_gate(gate_tables)


# -- suspicious speed-ups ----------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [("3x", 3.0), ("3", 3.0), (" 2.5X ", 2.5),
                                         ("1000", 1000.0)])
def test_speedup_bound(text, value):
    assert parse_speedup(text, "x") == value


@pytest.mark.parametrize("text, message", [
    ("fast", "x: 'fast' is not a factor (write 3x or 3)"),
    ("1x", "x: a speed-up bound must be a factor above 1 (3x flags what is more than 3 times "
           "the baseline's figure), not 1x"),
    ("0.5", "a speed-up bound must be a factor above 1"), ("inf", "above 1"), ("nan", "above 1"),
    ("", "is not a factor")])
def test_bad_speedup_bound(text, message):
    with pytest.raises(SettingsError, match=re.escape(message)):
        parse_speedup(text, "x")


def test_a_speedup_beyond_the_bound_is_flagged_and_fails_only_when_strict():
    fast = verdict(m(0.001, 64), m(0.010, 64))  # 10x
    rules = GateRules()
    assert speedup(fast, rules) == pytest.approx(10.0)
    assert speedup(verdict(m(0.0034), m(0.010)), rules) is None  # 2.94x: within 3x
    assert speedup(verdict(m(0.001, 256), status=gate.NEW), rules) is None  # no baseline
    not_judged = verdict(m(0.001), m(0.010), gate.NOT_JUDGED)
    not_judged.not_judged = "different jobs (1 in the baseline, 2 now)"
    assert speedup(not_judged, rules) is None
    assert speedup_failure(fast, rules) is None  # not strict: a summary line only
    rules.strict, rules.max_speedup = "--qcrypto-strict", Rule(None, None, None, 5.0,
                                                                "--qcrypto-max-speedup")
    assert speedup_failure(fast, rules) == (
        "suspicious speed-up: sha256 openssl 64 B digest: 10.00x the baseline (62500.00 KiB/s "
        "now, baseline 6250.00 KiB/s, change +900.0%), beyond 5x (--qcrypto-max-speedup): the "
        "baseline or the measurement is likely broken (failed by --qcrypto-strict)")
    rules.max_speedup = Rule(None, None, None, 10.5, "--qcrypto-max-speedup")
    assert speedup_failure(fast, rules) is None


def test_speedups_are_summary_lines(outcome):
    rules, index, verdicts, gone = outcome
    lines = summary_lines(rules, index, verdicts, gone, "")
    i = lines.index("suspicious speed-ups (1), beyond 3x the baseline (default): the baseline "
                    "or the measurement is likely broken; not failed (--qcrypto-strict would "
                    "fail them):")
    assert lines[i + 1] == ("  sha256 openssl 64 B digest: 10.00x the baseline (62500.00 KiB/s "
                            "now, baseline 6250.00 KiB/s, change +900.0%)")
    rules.strict = "qcrypto_strict in tox.ini"
    assert "the baseline or the measurement is likely broken; failed (qcrypto_strict in " \
           "tox.ini):" in summary_lines(rules, index, verdicts, gone, "")[i]


@pytest.fixture
def fake(pytester):
    pytester.makeconftest(FAKE_AND_MISSING)
    return pytester


SPEEDUP_LINE = r"  sha256 fake (16|64|256) B digest: \d+\.\d\dx the baseline \([\d.]+ KiB/s now, " \
    r"baseline [\d.]+ KiB/s, change \+\d+\.\d%\)"


def test_a_tenfold_speedup_is_flagged_and_passes(fake):
    baseline(fake, factor=0.1)  # the baseline at a tenth of the fake's speed
    r = compare(fake)
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["suspicious speed-ups (3), beyond 3x the baseline (default): the "
                            "baseline or the measurement is likely broken; not failed "
                            "(--qcrypto-strict would fail them):"])
    flagged = [line for line in r.outlines if re.fullmatch(SPEEDUP_LINE, line)]
    assert len(flagged) == 3, r.outlines
    # a bound above the speed-up: nothing said
    r = compare(fake, "--qcrypto-max-speedup", "1000x")
    assert r.ret == 0 and "suspicious" not in r.stdout.str()


@pytest.mark.parametrize("how", [("--qcrypto-strict",), ("-o", "qcrypto_strict=true")])
def test_strict_fails_a_suspicious_speedup(fake, how):
    baseline(fake, factor=0.03)  # 33x: a margin over what a busy machine takes away
    r = compare(fake, *how)
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(failed=3)
    where = how[0] if len(how) == 1 else "-o qcrypto_strict"
    r.stdout.fnmatch_lines([f"*likely broken; failed ({where}):"])
    for message, props in junit(fake).values():
        assert re.fullmatch(
            r"suspicious speed-up: sha256 fake \d+ B digest: \d+\.\d\dx the baseline \([\d.]+ "
            r"KiB/s now, baseline [\d.]+ KiB/s, change \+\d+\.\d%\), beyond 3x \(default\): the "
            rf"baseline or the measurement is likely broken \(failed by {re.escape(where)}\)",
            message), message
        assert props["qcrypto_verdict"] == "suspicious speed-up"


def test_max_speedup_from_the_ini_file_and_bad_values(fake):
    baseline(fake, factor=0.03)  # 33x: a margin over what a busy machine takes away
    fake.makeini("[pytest]\nqcrypto_max_speedup = 2.5x\n")
    r = compare(fake)
    r.stdout.fnmatch_lines(["suspicious speed-ups (3), beyond 2.5x the baseline "
                            "(qcrypto_max_speedup in tox.ini): *"])
    r = fake.runpytest("--qcrypto-max-speedup", "0.5")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--qcrypto-max-speedup: a speed-up bound must be a factor above 1 "
                            "(3x flags what is more than 3 times the baseline's figure), not 0.5"])
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-strict",
                       "--qcrypto-max-speedup", "4")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["qcrypto: --qcrypto-max-speedup, --qcrypto-strict had no effect: "
                            "they apply only with --qcrypto-compare"])


# -- the job summary and the markdown format of a real compared run ---------------------------

CHANGE = r"-[3-9]\d\.\d%!"


def test_a_compared_run_writes_the_gate_tables_to_the_job_summary(fake, monkeypatch):
    baseline(fake, factor=1.5)  # every cell 33% slower than the baseline
    summary = fake.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = compare(fake)
    assert r.ret == 1
    lines = summary.read_text().splitlines()
    i = lines.index(f"**Change against baseline {fake.path / 'base.json'} (negative = slower)**")
    assert lines[i + 2:i + 4] == ["| plugin | 16 | 64 | 256 |", "| :--- | ---: | ---: | ---: |"]
    assert re.fullmatch(rf"\| fake \| {CHANGE} \| {CHANGE} \| {CHANGE} \|", lines[i + 4])
    assert lines[i + 6] == "- `!` regression: slower than the threshold allows, on every try"
    i = lines.index("**Regressions (3)**")
    assert lines[i + 2] == ("| cell | now KiB/s | baseline KiB/s | change | change computed "
                            "from | threshold | tries |")
    for size, line in zip((16, 64, 256), lines[i + 4:i + 7]):  # (a try that waited says so)
        assert re.fullmatch(rf"\| sha256 fake {size} B digest \| [\d.]+ \| [\d.]+ \| "
                            rf"{CHANGE[:-1]} \| (the figures shown|[\d.]+ vs [\d.]+, now without "
                            rf"its wait for a CPU) \| 10% \| (fastest|median) try of 3 \|",
                            line), line
    i = lines.index("**Verdicts**")
    assert lines[i + 2:] == ["| verdict | cells |", "| :--- | ---: |", "| regression | 3 |", ""]
    assert lines[lines.index("### Regression gate") + 2].startswith(
        f"baseline {fake.path / 'base.json'} (3 results, created ")


def test_the_markdown_format_on_stdout_has_the_same_tables(fake, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    baseline(fake, factor=1.5)
    r = compare(fake, "--qcrypto-format", "markdown", "--qcrypto-bare")
    assert r.ret == 1
    out = r.outlines
    assert out[0] == "### Benchmark results for 'sha256' digest (KiB/s)"
    assert "**Regressions (3)**" in out and "| regression | 3 |" in out
    assert not any(line.startswith("Change against") for line in out)  # only as a table
    # pytest's own lines and the gate's text summary went to standard error
    r.stderr.fnmatch_lines(["regressions (3):"])


# -- csv: jobs -----------------------------------------------------------------------------------

FAST = ("--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1", "-p", "no:cacheprovider")


def test_csv_of_a_jobs_run_and_its_report_carry_jobs(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16,64", "--qcrypto-jobs", "2", "--qcrypto-format",
                           "csv", "--qcrypto-bare", "--qcrypto-save", "j2.json", *FAST)
    assert r.ret == 0, r.stderr.str()
    rows = list(csv.DictReader(r.outlines))
    assert [(row["plugin"], row["size"], row["jobs"]) for row in rows] == [
        ("hashlib", "16", "2"), ("hashlib", "64", "2")]
    r = qcrypto(pytester, "report", "j2.json", "--qcrypto-format", "csv")
    assert r.ret == 0, r.stderr.str()
    rows = list(csv.DictReader(r.outlines))
    assert [(row["machine"], row["plugin"], row["jobs"]) for row in rows] == [
        ("j2", "hashlib x2 jobs", "2"), ("j2", "hashlib x2 jobs", "2")]
    # the saved figures are what the run's csv said
    saved = json.loads((pytester.path / "j2.json").read_text())
    assert {e["jobs"] for e in saved["results"]} == {2}
