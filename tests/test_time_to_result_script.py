"""benchmarks/time_to_result.py runs end to end (--tiny) and writes its figures as JSON; its
summary's arithmetic on known repeats.

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
    assert rep["ours_wall_s"] > 0 and rep["pb_wall_s"] > 0
    assert set(result["loop_ratio"]) == CELLS
    assert len(result["verdicts"]) == 1 + len(CELLS)
    assert set(result["versions"]) == {"pytest", "pytest-benchmark", "cryptography",
                                       "pycryptodome"}


def load_script(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # it imports accuracy.py beside it
    spec = importlib.util.spec_from_file_location("time_to_result", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_summary_is_the_median_of_per_repeat_figures(monkeypatch):
    ttr = load_script(monkeypatch)
    reps = [{"ours_wall_s": w, "pb_wall_s": 10.0, "ours": {"hashlib:16": o},
             "pb": {"hashlib:16": 50.0}, "loop": {"hashlib:16": 100.0}}
            for w, o in ((5.0, 99.0), (7.0, 104.0), (6.0, 98.0))]
    s = ttr.summarise(reps)
    assert (s["ours_wall_s"], s["pytest_benchmark_wall_s"], s["wall_ratio"]) == (6.0, 10.0, 0.6)
    assert s["loop_ratio"] == {"hashlib:16": {"ours": 0.99, "pytest_benchmark": 0.5}}
    assert s["verdicts"] == [
        {"what": "our wall time <= 0.6 of pytest-benchmark's (0.600)", "met": True},
        {"what": "ours / tight loop for hashlib:16 in 0.97-1.03 (0.990)", "met": True}]
    reps[1]["ours"]["hashlib:16"] = reps[2]["ours"]["hashlib:16"] = 96.0
    assert not ttr.summarise(reps)["verdicts"][1]["met"]
