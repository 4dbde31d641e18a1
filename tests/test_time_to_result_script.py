"""benchmarks/time_to_result.py runs end to end (--tiny) and writes its figures as JSON, the
tight loop bracketing each side's loop cells; its summary's arithmetic on known repeats.

Wall times and ratios are not asserted: they depend on the machine.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The benchmark scripts' tier (root conftest): .ci/run runs it beside the kernel tier.
pytestmark = pytest.mark.benchmark_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "time_to_result.py"
CELLS = {f"{p}:{s}" for p in ("openssl", "hashlib", "pycryptodome") for s in (16, 32768)}


def test_tiny_run_times_both_sides_and_writes_json(tmp_path):
    pytest.importorskip("pytest_benchmark", reason="pip install -e '.[bench]' (the tool compared)")
    out = tmp_path / "ttr.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wall time to the table (median of 1): ours" in done.stdout
    result = json.loads(out.read_text())
    assert result["benchmark"] == "time-to-result" and result["repeats"] == 1
    assert result["sizes"] == [16, 32768]
    (rep,) = result["per_repeat"]
    assert set(rep["ours"]) == set(rep["pb"]) == set(rep["loop"]) == CELLS  # every cell, both
    for prefix in ("", "pb_"):  # each side's own brackets: before, after, and their mean
        before, after = rep[f"{prefix}loop_before"], rep[f"{prefix}loop_after"]
        assert set(before) == set(after) == CELLS
        assert rep[f"{prefix}loop"] == {c: (before[c] + after[c]) / 2 for c in CELLS}
    assert set(rep["ours_unbracketed"]) == set(rep["pb_unbracketed"]) == CELLS  # the wall runs
    assert rep["ours_wall_s"] > 0 and rep["pb_wall_s"] > 0
    assert set(result["loop_ratio"]) == set(result["bracket_gap"]) == CELLS
    assert len(result["verdicts"]) == 1 + len(CELLS)
    assert set(result["versions"]) == {"pytest", "pytest-benchmark", "cryptography",
                                       "pycryptodome"}


def load_script(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # it imports accuracy.py beside it
    spec = importlib.util.spec_from_file_location("time_to_result", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def repeat_of(wall, ours, before=100.0, after=100.0, pb=50.0, pb_before=100.0, pb_after=100.0):
    """One repeat's record for hashlib:16 only, as time_to_result.one_repeat keeps it."""
    cell = "hashlib:16"
    return {"ours_wall_s": wall, "pb_wall_s": 10.0, "ours": {cell: ours}, "pb": {cell: pb},
            "loop_before": {cell: before}, "loop_after": {cell: after},
            "pb_loop_before": {cell: pb_before}, "pb_loop_after": {cell: pb_after}}


def test_the_summary_is_the_median_of_per_repeat_figures(monkeypatch):
    ttr = load_script(monkeypatch)
    reps = [repeat_of(w, o) for w, o in ((5.0, 99.0), (7.0, 104.0), (6.0, 98.0))]
    s = ttr.summarise(reps)
    assert (s["ours_wall_s"], s["pytest_benchmark_wall_s"], s["wall_ratio"]) == (6.0, 10.0, 0.6)
    assert s["loop_ratio"] == {"hashlib:16": {"ours": 0.99, "pytest_benchmark": 0.5}}
    assert s["verdicts"] == [
        {"what": "our wall time <= 0.6 of pytest-benchmark's (0.600)", "met": True},
        {"what": "ours / tight loop for hashlib:16 in 0.97-1.03 (0.990)", "met": True}]
    reps[1]["ours"]["hashlib:16"] = reps[2]["ours"]["hashlib:16"] = 96.0
    assert not ttr.summarise(reps)["verdicts"][1]["met"]


def test_each_sides_ratio_is_to_the_mean_of_its_own_brackets(monkeypatch):
    ttr = load_script(monkeypatch)
    # ours 99 between a loop of 90 before and 110 after: 99 / 100; the loop after alone would
    # give 0.9, before alone 1.1.  pytest-benchmark's 60 between its own 40 and 80: 60 / 60.
    reps = [repeat_of(6.0, 99.0, before=90.0, after=110.0, pb=60.0, pb_before=40.0,
                      pb_after=80.0),
            repeat_of(6.0, 101.0, before=101.0, after=101.0, pb=30.0, pb_before=60.0,
                      pb_after=60.0),
            repeat_of(6.0, 50.0, before=20.0, after=80.0, pb=45.0, pb_before=50.0,
                      pb_after=40.0)]
    assert ttr.bracket_mean(reps[0]) == {"hashlib:16": 100.0}
    assert ttr.bracket_mean(reps[0], "pb_") == {"hashlib:16": 60.0}
    s = ttr.summarise(reps)
    # medians of (0.99, 1.0, 1.0) and (1.0, 0.5, 1.0)
    assert s["loop_ratio"] == {"hashlib:16": {"ours": 1.0, "pytest_benchmark": 1.0}}
    # |after - before| / mean: ours (0.2, 0.0, 1.2), pytest-benchmark (2/3, 0.0, 10/45)
    assert s["bracket_gap"]["hashlib:16"] == {"ours": 0.2, "pytest_benchmark": 10 / 45}
    assert s["verdicts"][1] == {"what": "ours / tight loop for hashlib:16 in 0.97-1.03 (1.000)",
                                "met": True}
