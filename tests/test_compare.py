"""Issue 14, part C: a comparison that judged nothing fails; several baselines are joined;
``qcrypto compare BASE CURRENT`` gates two saved files.  Files are saved by real runs of
the busy-wait fake plugin (``--qcrypto-save``), or of the fake on a fake clock where a test
asserts figures."""

import json
import re
import sys

import pytest

from pytest_qcrypto.gate import compare
from test_gate import FAKE_AND_MISSING, USAGE, baseline, junit
from test_results import FAKE_CLOCK, FAKE_PLUGIN, FAKE_RUN, fake_speed


@pytest.fixture
def fake(pytester):
    pytester.makeconftest(FAKE_AND_MISSING)
    return pytester


@pytest.fixture
def fake_clock(pytester):
    """The fake on a fake clock (``FAKE_CLOCK``): its rounds take exactly its nanoseconds."""
    pytester.makeconftest(FAKE_PLUGIN + FAKE_CLOCK)
    return pytester


def run(pytester, *args, sizes="16"):
    return pytester.runpytest(*FAKE_RUN, "--qcrypto-size", sizes, *args)


def qcrypto(pytester, *args):
    """The console script in a fresh process."""
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", *args)


def save(pytester, name, sizes="16", *args):
    r = run(pytester, "--qcrypto-save", name, *args, sizes=sizes)
    assert r.ret == 0, r.stdout.str()
    return json.loads((pytester.path / name).read_text())


# -- a comparison that judges nothing fails ----------------------------------------------------


def test_nearest_baseline_cells_by_their_words():
    base = [("md5", "hashlib", 64, "digest"), ("sha256", "openssl", 64, "digest"),
            ("sha512", "openssl", 16, "digest"), ("sha256", "openssl", 16, "digest")]
    typo = [("sha256", "opensl", 16, "digest")]
    assert compare.nearest(typo, base, 2) == [("sha256", "openssl", 16, "digest"),
                                              ("sha256", "openssl", 64, "digest")]
    assert compare.nearest([], base, 2) == base[:2]  # nothing measured: the file's first


def test_no_measured_cell_in_the_baseline_fails_the_run(fake):
    save(fake, "base.json", "16,64")
    r = run(fake, "--qcrypto-compare", "base.json", sizes="256,1024")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=2)  # every item passed: the run fails on the line below
    (line,) = [x for x in r.outlines if x.startswith("ERROR: qcrypto: nothing was judged")]
    assert re.fullmatch(
        r"ERROR: qcrypto: nothing was judged: none of the 2 cells measured has an entry in the "
        r"baseline \S+/base\.json; nearest baseline cells: sha256 fake (16|64) B digest; "
        r"sha256 fake (16|64) B digest; a comparison that judges nothing fails \(check the "
        r"algorithms, plugins and sizes asked for, or save a new baseline\)", line), line
    # one cell judged of two measured: a summary line, as before, and exit 0
    r = run(fake, "--qcrypto-compare", "base.json", sizes="64,1024")
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines(["no baseline entry (not judged):", "  sha256 fake digest, size 1024: new"])
    assert "nothing was judged" not in r.stdout.str()


def test_a_run_that_measured_nothing_against_a_baseline_fails(fake):
    save(fake, "base.json", "16")
    r = fake.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "missing",
                       "--qcrypto-size", "16", "--qcrypto-compare", "base.json",
                       "-p", "no:cacheprovider")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(skipped=1)
    r.stdout.fnmatch_lines(["ERROR: qcrypto: nothing was judged: no cell was measured (no "
                            "benchmark item ran), so nothing was compared with the baseline "
                            "*/base.json; it has: sha256 fake 16 B digest; a comparison that "
                            "judges nothing fails *"])


def test_allow_missing_does_not_pass_a_compare_that_judged_nothing(fake):
    """--qcrypto-allow-missing makes a skipped baseline cell a summary line, but when every
    cell with a baseline entry was skipped nothing was judged: the run fails (it passed)."""
    def only_missing(doc):
        doc["results"] = [dict(doc["results"][0], plugin="missing", canonical_plugin="missing")]

    baseline(fake, sizes="16", edit=only_missing)
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-plugin", "missing", "--qcrypto-size", "16",
                       "--qcrypto-compare", "base.json", "--qcrypto-allow-missing")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=1, skipped=1)  # fake's cell is new: no baseline entry
    r.stdout.fnmatch_lines(["ERROR: qcrypto: nothing was judged: the 1 cell with a baseline "
                            "entry was skipped now (allowed by --qcrypto-allow-missing: "
                            "missing: unavailable: *); a comparison that judges nothing fails *"])


def test_saving_over_the_baseline_being_compared_is_a_usage_error(fake, tmp_path):
    """--qcrypto-save=X --qcrypto-compare=X wrote a failed run's figures over the baseline,
    so the next run passed: now refused before measuring, the baseline untouched."""
    save(fake, "base.json")
    before = (fake.path / "base.json").read_bytes()
    (fake.path / "link.json").symlink_to(fake.path / "base.json")
    for saving in ("base.json", "./base.json", "link.json"):
        r = run(fake, "--qcrypto-compare", "base.json", "--qcrypto-save", saving)
        assert r.ret == USAGE, r.stdout.str()
        r.stderr.fnmatch_lines([f"ERROR: --qcrypto-save {saving} is the baseline given to "
                                "--qcrypto-compare: it would be replaced by this run's figures, "
                                "even if they fail the gate; save elsewhere (--qcrypto-save="
                                "new.json) and replace the baseline after a passing run"])
        assert "Traceback" not in r.stdout.str() + r.stderr.str()
    assert (fake.path / "base.json").read_bytes() == before


# -- several baselines --------------------------------------------------------------------------


def test_several_baselines_are_joined_and_each_cell_judged(fake):
    """One file per sharded job: both files' cells are judged (before issue 14 the second
    file was refused, or the last one taken and the other's cells passed as new)."""
    baseline(fake, name="s16.json", sizes="16")
    baseline(fake, name="s64.json", sizes="64", factor=3.0)  # 64 B: three times faster then
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16,64", "--qcrypto-compare", "s16.json",
                       "--qcrypto-compare=s64.json", "--junitxml", "junit.xml")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=1, failed=1)
    cases = junit(fake)
    assert cases["sha256[fake-16]"][0] is None
    assert cases["sha256[fake-64]"][0].startswith("regression: sha256 fake 64 B digest: ")
    for name, size in (("sha256[fake-16]", 16), ("sha256[fake-64]", 64)):
        factor = 3.0 if size == 64 else 1.0
        assert float(cases[name][1]["qcrypto_baseline_kib_per_s"]) == \
            pytest.approx(size / 20e-6 * factor / 1024, abs=0.01)
    r.stdout.fnmatch_lines(["Change against baseline */s16.json, */s64.json (negative = slower):",
                            "Regression gate: baselines */s16.json (1 result, created *), "
                            "*/s64.json (1 result, created *), threshold 10% *"])
    assert "no baseline entry" not in r.stdout.str()


def test_each_cell_is_judged_against_its_own_files_machine(fake):
    baseline(fake, name="here.json", sizes="16")
    baseline(fake, name="there.json", sizes="64",
             edit=lambda doc: doc["machine"].update(cpu_model="Some Other CPU"))
    r = fake.runpytest(*FAKE_RUN, "--qcrypto-size", "16,64", "--qcrypto-compare", "here.json",
                       "--qcrypto-compare", "there.json", "--qcrypto-require-same-machine",
                       "--junitxml", "junit.xml")
    assert r.ret == 0, r.stdout.str()
    cases = junit(fake)
    assert cases["sha256[fake-64]"][1]["qcrypto_verdict"] == "not judged: different machine " \
                                                           "(cpu_model)"
    assert cases["sha256[fake-16]"][1]["qcrypto_verdict"] != "not judged"
    assert not cases["sha256[fake-16]"][1]["qcrypto_verdict"].startswith("not judged")
    r.stdout.fnmatch_lines(["machine differs from the baseline: cpu_model: 'Some Other CPU' "
                            "(baseline) vs * (now) (*/there.json)"])


# -- qcrypto compare BASE CURRENT ---------------------------------------------------------------


def test_compare_command_fails_a_regression_between_two_saved_runs(fake_clock):
    fake_speed(fake_clock, ns=20000)
    base = save(fake_clock, "base.json", "16,64", "--qcrypto-rounds", "5")
    fake_speed(fake_clock, ns=60000)  # three times slower
    slow = save(fake_clock, "slow.json", "16,64", "--qcrypto-rounds", "5")
    # rounds spread over the run (25 a cell, paced over 8 s x min-time 0.002 / 0.1 = 0.16 s),
    # each exactly its count's time on the fake clock: 115 operations of 20 us, 39 of 60 us
    # (the counts that 8 in 160 us and 4 in 240 us predict take 2 ms x 1.15)
    assert [(e["count"], e["rounds_s"]) for e in base["results"]] == [(115, [0.0023] * 25)] * 2
    assert [(e["count"], e["rounds_s"]) for e in slow["results"]] == [(39, [0.00234] * 25)] * 2
    assert base["settings"]["spread"] == slow["settings"]["spread"] == {
        "rounds": 25, "round_s": 0.002, "span_s": 0.16}
    r = qcrypto(fake_clock, "compare", "base.json", "slow.json")
    assert r.ret == 1, r.stdout.str() + r.stderr.str()
    # standard output: the tables and their change; standard error: the rest, as qcrypto speed
    assert r.outlines[0] == "Benchmark results for 'sha256' digest (KiB/s):"
    r.stdout.fnmatch_lines(["plugin * 16 * 64", "fake * 260.42 * 1041.67",
                            "Change against baseline base.json (negative = slower):",
                            "plugin * 16 * 64", "fake * -66.7%! * -66.7%!"])
    assert r.errlines[0] == ("qcrypto compare: nothing was re-measured: each cell of slow.json "
                             "is judged on its saved figure against base.json, without "
                             "confirmation tries")
    r.stderr.fnmatch_lines(["Regression gate: baseline base.json (2 results, created *), "
                            "threshold 10% unless an ini line says otherwise, rounds spread "
                            "over the run, judged by their slow phase (no confirmation tries)",
                            "regressions (2):",
                            "  regression: sha256 fake 16 B digest: 260.42 KiB/s now, baseline "
                            "781.25 KiB/s, change -66.7%*, threshold 10% (default); *",
                            "  regression: sha256 fake 64 B digest: 1041.67 KiB/s now, baseline "
                            "3125.00 KiB/s, change -66.7%*, threshold 10% (default); *"])
    assert "Regression gate" not in r.stdout.str()
    # another layout: its lines alone on standard output, the change grid on standard error
    r = qcrypto(fake_clock, "compare", "base.json", "slow.json", "--qcrypto-format", "csv")
    assert r.ret == 1
    assert r.outlines[0].startswith("algorithm,direction,plugin,size,")
    assert len(r.outlines) == 3
    r.stderr.fnmatch_lines(["Change against baseline base.json (negative = slower):"])
    # the same rules and options: a threshold above the slowdown passes
    r = qcrypto(fake_clock, "compare", "base.json", "slow.json", "--qcrypto-threshold", "90%")
    assert r.ret == 0, r.stdout.str()
    r.stderr.fnmatch_lines(["Regression gate: baseline base.json (2 results, *), threshold 90% *"])
    # a file against itself, and a faster run, pass
    assert qcrypto(fake_clock, "compare", "slow.json", "slow.json").ret == 0
    r = qcrypto(fake_clock, "compare", "slow.json", "base.json")
    assert r.ret == 0, r.stdout.str()
    assert "regression" not in r.stderr.str()


def test_compare_command_appends_the_tables_to_the_step_summary(fake, tmp_path, monkeypatch):
    save(fake, "base.json", "16")
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = qcrypto(fake, "compare", "base.json", "base.json")
    assert r.ret == 0, r.stderr.str()
    lines = summary.read_text().splitlines()
    assert lines[0] == "### Benchmark results for 'sha256' digest (KiB/s)"
    assert re.fullmatch(r"\| fake \| \d+\.\d\d \|", lines[4]), lines


def test_compare_command_reads_the_ini_file_a_run_here_would(fake):
    save(fake, "base.json", "16")
    fake.makeini("[pytest]\nqcrypto_floors = sha256:fake = 1000000000\n")
    r = qcrypto(fake, "compare", "base.json", "base.json")
    assert r.ret == 1, r.stdout.str()
    r.stderr.fnmatch_lines(["below floor (1):", "  below floor: sha256 fake 16 B digest: * KiB/s"
                            "*, floor 1000000000.00 KiB/s (qcrypto_floors in tox.ini: 'sha256:fake = "
                            "1000000000'); tries: *"])
    (fake.path / "other.ini").write_text("[pytest]\nqcrypto_thresholds = sha256 = 5%\n")
    r = qcrypto(fake, "compare", "base.json", "base.json", "-c", "other.ini")
    assert r.ret == 0, r.stdout.str()
    r = qcrypto(fake, "compare", "base.json", "base.json", "-o", "qcrypto_floors=")
    assert r.ret == 0, r.stdout.str()
    (fake.path / "bad.ini").write_text("[pytest]\nqcrypto_threshold = fast\n")
    r = qcrypto(fake, "compare", "base.json", "base.json", "-c", "bad.ini")
    assert r.ret == USAGE
    assert r.outlines == [] and len([x for x in r.errlines if x]) == 1
    assert r.errlines[0].startswith("ERROR: qcrypto compare: qcrypto_threshold in bad.ini: ")
    r = qcrypto(fake, "compare", "base.json", "base.json", "-o",
                "qcrypto_require_same_machine=maybe")
    assert r.ret == USAGE and r.outlines == []
    assert [x for x in r.errlines if x] == [
        "ERROR: qcrypto compare: -o qcrypto_require_same_machine: 'maybe' is not true or false; "
        "write true, yes, on, 1, y or t for true, false, no, off, 0, n or f for false"]


def test_compare_command_with_no_cell_in_common_fails(fake):
    save(fake, "base.json", "16")
    save(fake, "other.json", "64")
    r = qcrypto(fake, "compare", "base.json", "other.json")
    assert r.ret == 1, r.stdout.str()
    assert r.errlines[-1].startswith(
        "ERROR: qcrypto: nothing was judged: none of the 1 cell measured has an entry in the "
        "baseline base.json; nearest baseline cells: sha256 fake 16 B digest; ")


@pytest.mark.parametrize("content, problem", [
    (None, "no such file"),
    ("{", "not JSON"),
    ('{"format": "pytest-qcrypto results", "schema_version": 2, "complete": false, '
     '"machine": {}, "plugins": {}, "results": []}', "the run that wrote it did not finish"),
    ('{"format": "pytest-qcrypto results", "schema_version": 2, "complete": true, '
     '"machine": {}, "plugins": {}, "results": []}', "no results"),
])
@pytest.mark.parametrize("which", ["BASE", "CURRENT"])
def test_compare_command_bad_file_is_exit_4_in_one_line(fake, content, problem, which):
    save(fake, "good.json", "16")
    if content is not None:
        (fake.path / "bad.json").write_text(content)
    files = ["bad.json", "good.json"] if which == "BASE" else ["good.json", "bad.json"]
    r = qcrypto(fake, "compare", *files)
    assert r.ret == USAGE
    assert r.outlines == []
    (line,) = [x for x in r.errlines if x]
    assert line.startswith("ERROR: qcrypto compare: bad.json") and problem in line, line
    if "complete" in (content or ""):
        assert f"({which})" in line


def test_compare_command_usage(capsys):
    from pytest_qcrypto.commands import qcrypto as cli

    assert cli.main(["compare", "a.json"]) == USAGE
    assert "the following arguments are required: CURRENT" in capsys.readouterr().err
    assert cli.main(["compare", "a.json", "b.json", "--qcrypto-digest", "sha256"]) == USAGE
    assert "unrecognized arguments: --qcrypto-digest sha256" in capsys.readouterr().err


# -- found by a user trial ------------------------------------------------------------------------


def test_compare_command_fails_a_suspicious_speed_up_when_strict_and_sums_it_up(
        fake, tmp_path, monkeypatch):
    """qcrypto_strict failed the cells in words but exited 0; the step summary had no gate."""
    fake_speed(fake, ns=60000)
    save(fake, "base.json", "16,64", "--qcrypto-rounds", "5")
    fake_speed(fake, ns=6000)  # ten times faster: the baseline or the run is broken
    save(fake, "fast.json", "16,64", "--qcrypto-rounds", "5")
    r = qcrypto(fake, "compare", "base.json", "fast.json")
    assert r.ret == 0, r.stderr.str()  # flagged, not failed
    r.stderr.fnmatch_lines(["suspicious speed-ups (2), beyond 3x the baseline (default)*"])
    fake.makeini("[pytest]\nqcrypto_strict = true\n")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = qcrypto(fake, "compare", "base.json", "fast.json")
    assert r.ret == 1, r.stderr.str()
    text = summary.read_text()
    assert "### Regression gate" in text and "**Suspicious speed-ups (2), beyond 3x" in text, text
    assert "| fake | +" in text  # the change grid as a markdown table


def test_compare_command_and_option_refuse_devices_and_read_no_fifo_for_ever(fake):
    save(fake, "base.json", "16")
    for path in ("/dev/zero", "/dev/full"):
        r = qcrypto(fake, "compare", path, "base.json")
        assert r.ret == 4 and r.errlines == [
            f"ERROR: qcrypto compare: {path}: not a results file: is a character device, not "
            "a regular file"]
    r = run(fake, "--qcrypto-compare=/dev/zero")
    assert r.ret == 4
    import os
    os.mkfifo(fake.path / "fifo")  # no writer: read as empty at once, never waited on
    r = qcrypto(fake, "compare", "fifo", "base.json")
    assert r.ret == 4 and r.errlines == ["ERROR: qcrypto compare: fifo: not JSON (the file is "
                                         "empty)"]


def test_a_compare_that_collects_no_item_is_exit_1_not_5(fake):
    save(fake, "base.json", "16")
    r = run(fake, "--qcrypto-compare", "base.json", "-k", "nomatch")
    assert r.ret == 1, r.stdout.str()
    r.stdout.fnmatch_lines(["ERROR: qcrypto: nothing was judged: no cell was measured *"])


def test_nothing_judged_names_a_size_less_cell_by_its_operation():
    from pytest_qcrypto.gate import compare as gate_compare

    assert gate_compare.cell_text(("argon2id-m1024-t1-p1", "openssl", 0, "derive")) == \
        "argon2id-m1024-t1-p1 openssl derive"
    assert gate_compare.cell_text(("sha256", "openssl", 16, "digest")) == \
        "sha256 openssl 16 B digest"
