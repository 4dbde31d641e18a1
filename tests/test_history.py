"""``qcrypto history``: a folder of runs read back as series, their steps found and judged.

The histories are results files whose rounds come off a fake clock with seeded noise
(:mod:`history_files`): 30 runs, one a day, each its own commit, 30 cells at 1.5% run-to-run
noise, and in one cell (sha256 openssl 4096 B) a step at run 18.
"""

from __future__ import annotations

import json
import math
import random

import pytest

from history_files import CELLS, MACHINE, commit_of, write_history
from pytest_qcrypto.commands import qcrypto
from pytest_qcrypto.gate import steps
from pytest_qcrypto.results import history, store


@pytest.fixture
def here(tmp_path, monkeypatch):
    """Run in an empty folder: no ini file of this repository applies."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def step_lines(out: str) -> list[str]:
    return [line for line in out.splitlines()
            if line.startswith(("REGRESSION:", "speed-up:", "slowdown:", "BELOW FLOOR:"))]


def test_a_20_percent_step_at_run_18_is_named_with_its_runs_and_commits(here, capsys):
    write_history(here / "hist")
    code = qcrypto.main(["history", "hist"])
    out = capsys.readouterr().out
    found = step_lines(out)
    assert len(found) == 1, out
    line = found[0]
    assert line.startswith("REGRESSION: sha256 openssl 4096 B digest on Test CPU 3000 x86_64, "
                           "2 CPUs: -")
    change = float(line.split(": ")[2].split("%")[0])
    assert -22 < change < -18
    assert (f"between run 17 (2026-11-17T08:00:00Z, commit {commit_of(17)[:12]}) and run 18 "
            f"(2026-11-18T08:00:00Z, commit {commit_of(18)[:12]})") in line
    assert "    beyond the threshold 10% (default)" in out
    assert out.splitlines()[0] == ("qcrypto history: 30 runs in hist (2026-11-01T08:00:00Z to "
                                   "2026-11-30T08:00:00Z), 30 cells on 1 machine")
    assert out.splitlines()[-1].startswith("1 of 30 cells fail")
    assert code == 1


def test_the_same_step_reversed_is_a_speed_up_listed_and_exit_0(here, capsys):
    write_history(here / "hist", factor=1.25)
    code = qcrypto.main(["history", "hist"])
    out = capsys.readouterr().out
    found = step_lines(out)
    assert len(found) == 1 and found[0].startswith("speed-up: sha256 openssl 4096 B digest"), out
    assert f"and run 18 (2026-11-18T08:00:00Z, commit {commit_of(18)[:12]})" in found[0]
    assert out.splitlines()[-1] == ("no cell fails: no latest step is a regression beyond "
                                    "its threshold")
    assert code == 0


def test_a_threshold_above_the_step_passes_it_and_the_ini_file_is_read(here, capsys):
    write_history(here / "hist")
    (here / "pytest.ini").write_text("[pytest]\nqcrypto_thresholds =\n"
                                     "    sha256:openssl:4096 = 25%\n")
    assert qcrypto.main(["history", "hist"]) == 0
    out = capsys.readouterr().out
    assert step_lines(out)[0].startswith("slowdown: sha256 openssl 4096 B digest")
    assert qcrypto.main(["history", "hist", "--qcrypto-threshold=30%"]) == 0


def test_a_floor_above_the_latest_level_fails(here, capsys):
    write_history(here / "hist", step_cell=None)
    (here / "pytest.ini").write_text("[pytest]\nqcrypto_floors =\n    md5:openssl:16 = 1e12\n")
    assert qcrypto.main(["history", "hist"]) == 1
    out = capsys.readouterr().out
    assert "BELOW FLOOR: md5 openssl 16 B digest" in out and "floor 1e+12" in out


def test_noise_alone_one_slow_run_and_two_are_no_step(here, capsys):
    folder = here / "hist"
    write_history(folder, step_cell=None)
    assert qcrypto.main(["history", "hist"]) == 0
    assert "no steps: every cell kept its level" in capsys.readouterr().out
    rng = random.Random(5)
    base = [1000 * math.exp(rng.gauss(0, 0.015)) for _ in range(30)]
    one = [f * (0.6 if i == 12 else 1) for i, f in enumerate(base)]
    two = [f * (0.7 if i in (20, 21) else 1) for i, f in enumerate(base)]
    three = [f * (0.8 if i >= 27 else 1) for i, f in enumerate(base)]
    assert steps.find(one, [0.003] * 30) == []
    assert steps.find(two, [0.003] * 30) == []
    (found,) = steps.find(three, [0.003] * 30)  # three runs at a new level are a step
    assert found.index == 27 and -0.22 < found.change < -0.18


def test_a_point_with_a_wide_spread_weighs_less():
    # the same figures; the point after the step has rounds far apart in one of them
    figures = [100.0] * 10 + [90.0] * 10
    assert [s.index for s in steps.find(figures, [0.001] * 20)] == [10]
    assert steps.run_noise([math.log(f) for f in figures]) == steps.MIN_RELATIVE_NOISE


def test_runs_of_another_machine_are_another_series(here, capsys):
    folder = here / "hist"
    write_history(folder, runs=10, step_cell=None, cells=CELLS[:2])
    write_history(folder, runs=10, step_cell=None, cells=CELLS[:2], seed=3,
                  machine={**MACHINE, "cpu_model": "Other CPU", "cores": 8})
    found = history.read(folder)
    assert len(found.runs) == 20 and len(found.series) == 4
    assert {len(s.points) for s in found.series} == {10}
    assert {s.machine_label for s in found.series} == {"Test CPU 3000 x86_64, 2 CPUs",
                                                       "Other CPU x86_64, 8 CPUs"}


def test_names_sort_by_time_and_carry_commit_and_dirty_flag(tmp_path):
    paths = write_history(tmp_path, runs=3, cells=CELLS[:1])
    assert [p.name[:30] for p in paths] == [
        f"20261101T080000Z-{commit_of(1)[:12]}-", f"20261102T080000Z-{commit_of(2)[:12]}-",
        f"20261103T080000Z-{commit_of(3)[:12]}-"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in paths]
    doc = history.store.load(paths[0])
    doc.source = {"git_commit": "a" * 40, "git_dirty": True}
    assert history.entry_name(doc, "2026-12-03T18:01:22Z", "3fa9c1") == \
        "20261203T180122Z-aaaaaaaaaaaa-dirty-3fa9c1.json"
    doc.source = None
    assert history.entry_name(doc, "2026-12-03T18:01:22Z", "3fa9c1") == \
        "20261203T180122Z-nocommit-3fa9c1.json"


def test_unreadable_files_are_listed_and_skipped_exit_4(here, capsys):
    folder = here / "hist"
    write_history(folder, runs=8, step_cell=None, cells=CELLS[:2])
    (folder / "20261105T000000Z-broken.json").write_text('{"results": [')
    assert qcrypto.main(["history", "hist"]) == 4
    captured = capsys.readouterr()
    assert captured.err.startswith(
        "ERROR: qcrypto history: hist/20261105T000000Z-broken.json: skipped: not JSON "
        "(Expecting value at line 1 column 14); the file ends too early: was it cut off?\n")
    assert captured.out.startswith("qcrypto history: 8 runs in hist")


@pytest.mark.parametrize("args, message", [
    (["history", "missing"], "ERROR: qcrypto history: missing: cannot read the folder: "
                             "No such file or directory"),
    (["history", "hist", "--since=yesterday"], "ERROR: qcrypto history: --since: 'yesterday' "
                                               "is not a date (write 2026-12-01 or"),
    (["history", "hist", "-k", "ed25519:*:16"], "ERROR: qcrypto history: -k ed25519:*:16: "
                                                "ed25519 has no buffer size"),
    (["history", "hist", "-k", "sha3-256"], "ERROR: qcrypto history: -k sha3-256: no cell of "
                                            "the history matches"),
    (["history", "hist", "--html=nodir/page.html"], "ERROR: qcrypto history: --html: cannot "
                                                    "write nodir/page.html: directory"),
    (["history", "empty"], "ERROR: qcrypto history: empty: no results file to read"),
])
def test_bad_input_is_one_line_and_exit_4(here, capsys, args, message):
    write_history(here / "hist", runs=6, step_cell=None, cells=CELLS[:1])
    (here / "empty").mkdir()
    assert qcrypto.main(args) == 4
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_since_and_k_choose_runs_and_cells(here, capsys):
    write_history(here / "hist")
    assert qcrypto.main(["history", "hist", "-k", "md5:openssl,sha1:*:16",
                         "--since=2026-11-10"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ("qcrypto history: 21 runs in hist (2026-11-10T08:00:00Z to "
                     "2026-11-30T08:00:00Z), 7 cells on 1 machine")


def test_runs_add_themselves_with_history_and_are_read_back(here, capsys):
    args = ["speed", "-D", "sha256", "-P", "hashlib", "--qcrypto-size=1024",
            "--qcrypto-min-time=0.01", "--qcrypto-rounds=3", "--history=hist"]
    assert qcrypto.main(args) == 0
    assert qcrypto.main([*args, "--qcrypto-save=run.json"]) == 0
    err = capsys.readouterr().err
    assert f"qcrypto: 1 result added to the history as {here / 'hist'}/" in err
    assert f"qcrypto: 1 result saved to {here / 'run.json'}; added to the history as " in err
    names = sorted(p.name for p in (here / "hist").iterdir())
    assert len(names) == 2 and all(n.endswith(".json") for n in names)
    assert qcrypto.main(["history", "hist"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith(
        "qcrypto history: 2 runs in hist (")


def test_a_history_folder_that_is_a_file_is_a_usage_error(here, capsys):
    (here / "afile").write_text("")
    assert qcrypto.main(["speed", "-D", "sha256", "-P", "hashlib", "--history=afile"]) == 4
    assert capsys.readouterr().err.startswith(
        "ERROR: --qcrypto-history: cannot add to afile: it exists and is not a directory\n")


def test_a_file_copied_in_under_another_name_takes_its_place_by_time(here, capsys):
    write_history(here / "hist")
    files = sorted((here / "hist").iterdir())
    first = files[0]  # the run of 2026-11-01, renamed so that its name sorts last
    first.rename(here / "hist" / "zzz-copied-in.json")
    assert qcrypto.main(["history", "hist"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("qcrypto history: 30 runs in hist (2026-11-01T08:00:00Z to "
                                   "2026-11-30T08:00:00Z), 30 cells on 1 machine")
    assert (f"between run 17 (2026-11-17T08:00:00Z, commit {commit_of(17)[:12]}) and run 18 "
            f"(2026-11-18T08:00:00Z, commit {commit_of(18)[:12]})") in out


def test_an_incomplete_run_is_left_out_and_said(here, capsys):
    """Found by a fresh user: a run saved "complete": false (interrupted) was read as any
    other, silently; and the page's note said "1 runs"."""
    paths = write_history(here / "hist", runs=4, step_cell=None)
    doc = store.load(paths[-1])
    doc.complete = False
    paths[-1].write_text(json.dumps(doc.to_json()))
    code = qcrypto.main(["history", "hist", "--html", "page.html"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0].startswith("qcrypto history: 3 runs in hist ")
    assert ('qcrypto history: left out incomplete runs ("complete": false: interrupted, their '
            'cells not all measured): 1') in err.splitlines()
    single = here / "one"
    write_history(single, runs=1, step_cell=None)
    assert qcrypto.main(["history", "one", "--html", "one.html"]) == 0
    assert "1 run read from one" in (here / "one.html").read_text()


def test_one_run_of_one_cell_is_counted_in_the_singular(here, capsys):
    write_history(here / "hist", runs=1, step_cell=None, cells=CELLS[:1])
    qcrypto.main(["history", "hist"])
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ("qcrypto history: 1 run in hist (2026-11-01T08:00:00Z to "
                     "2026-11-01T08:00:00Z), 1 cell on 1 machine")
