"""``--qcrypto-output=PATH``: the tables, in the chosen layout, go to a file instead of the
terminal, written atomically; a path that cannot be written is a usage error before anything
runs (issue 28)."""

from __future__ import annotations

import io

import pytest

from conftest import FAST
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.output import render
from pytest_qcrypto.output.render import Output
from test_layouts import Terminal, table

RUN = ("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib", "--qcrypto-size=16,64", *FAST)


def test_the_layout_goes_to_the_file_and_one_line_says_where(pytester):
    (pytester.path / "out").mkdir()
    r = pytester.runpytest(*RUN, "--qcrypto-format=markdown", "--qcrypto-output=out/speed.md",
                           "-p", "no:cacheprovider")
    assert r.ret == 0
    path = pytester.path / "out" / "speed.md"
    text = path.read_text()
    assert text.startswith("### Benchmark results for 'sha256' digest (KiB/s)\n")
    assert "| hashlib |" in text
    out = r.stdout.str()
    assert "Benchmark results" not in out and "| hashlib |" not in out
    assert f"qcrypto: tables written to {path}" in r.outlines
    assert not list((pytester.path / "out").glob(".*"))  # no temporary file left


@pytest.mark.parametrize("where, said", [
    ("nosuchdir/speed.md", "directory {path}/nosuchdir does not exist"),
    ("adir", "adir is a directory, not a regular file"),
])
def test_a_path_that_cannot_be_written_is_a_usage_error_before_anything_runs(
        pytester, where, said):
    (pytester.path / "adir").mkdir()
    r = pytester.runpytest(*RUN, f"--qcrypto-output={where}", "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    expected = f"--qcrypto-output: cannot write {where}: " + said.format(path=pytester.path)
    assert expected in r.stderr.str()
    assert "passed" not in r.stdout.str() and "Benchmark results" not in r.stdout.str()


def test_parse_output_keeps_the_absolute_path_and_refuses_an_empty_one(tmp_path,
                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert render.parse_output(path="t.csv", fmt="csv").path == str(tmp_path / "t.csv")
    assert render.parse_output().path is None
    # a plot path is not the output path (issue 28's first cut took the last plot for it)
    assert render.parse_output(plot=["a.svg", "b.png"]).path is None
    with pytest.raises(SettingsError, match="--qcrypto-output: cannot write : no path given"):
        render.parse_output(path="")


def test_bare_output_writes_nothing_to_stdout_and_a_failed_write_is_a_problem(tmp_path,
                                                                             monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    stdout, term = io.StringIO(), Terminal()  # qcrypto speed: bare
    target = tmp_path / "t.txt"
    problems = render.write_summary(term, [table()], Output(bare=True, path=str(target)),
                                    False, stdout=stdout)
    assert problems == [] and stdout.getvalue() == ""
    assert target.read_text() == "".join(f"{x}\n" for x in render.table_lines(table()))
    assert term.lines == [f"qcrypto: tables written to {target}"]
    # the path became a directory after the check: the run's problem, said once
    target.unlink()
    target.mkdir()
    term = Terminal()
    problems = render.write_summary(term, [table()], Output(path=str(target)), False)
    assert problems == [f"--qcrypto-output: cannot write {target}: {target} is a directory, "
                        "not a regular file"]
    assert term.lines == ["=== qcrypto speed ===", f"ERROR: {problems[0]}"]


def test_the_file_of_the_results_or_the_baseline_is_refused_and_left_as_it_was(pytester):
    r = pytester.runpytest(*RUN, "--qcrypto-output=./r.json", "--qcrypto-save=r.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --qcrypto-output and --qcrypto-save both name r.json: the tables would "
            "replace the results file; give the tables a file of their own") in r.errlines
    assert pytester.runpytest(*RUN, "--qcrypto-save=base.json").ret == 0
    before = (pytester.path / "base.json").read_bytes()
    r = pytester.runpytest(*RUN, "--qcrypto-output=base.json", "--qcrypto-compare=base.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "ERROR: --qcrypto-output and --qcrypto-compare both name base.json" in r.stderr.str()
    assert (pytester.path / "base.json").read_bytes() == before
