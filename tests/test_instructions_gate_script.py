"""benchmarks/instructions_gate.py runs end to end (tiny mode) and writes its figures as JSON.

False alarms and detections are not asserted (the full run measures them); the structure,
that every cell asked for was counted and judged, and the injected 2% are.  Needs valgrind
(or a PMU): counting is what it runs.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_qcrypto.measure import counting

#: The benchmark scripts' tier (root conftest): .ci/run runs it beside the kernel tier.
pytestmark = pytest.mark.benchmark_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "instructions_gate.py"


def _problem() -> str | None:
    try:
        counting.method()
    except counting.CountingError as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_problem() is not None, reason=f"{_problem()}")
def test_tiny_run_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "gate.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert "instruction gate: sha256 hashlib-wrapped, 16 B, threshold 1%, counted by " in text
    assert "targets met: " in text and "a tiny run: not worth quoting" in text
    assert (tmp_path / "gate.txt").read_text().startswith("instruction gate: ")
    result = json.loads(out.read_text())
    assert list(result["conditions"]) == ["none", "spinning", "memory"]
    for name, cond in result["conditions"].items():
        assert cond["runs"] == 1 and len(cond["compares"]) == 1
        cells = cond["compares"][0]["cells"]
        # every cell asked for was counted and judged (passed or failed), none left out
        assert set(cells) == {f"{p}:16" for p in cond["compares"][0]["plugins"]}, cond
        assert all(c["verdict"] == "ok" or c["verdict"].startswith("regression")
                   for c in cells.values()), cells
        assert cond["cells"]["same:16"]["counted"] == 1
    # the 2% cell is counted without a neighbour; round(count * 0.02) more operations
    more = result["conditions"]["none"]["compares"][0]["cells"]["more02:16"]
    assert 1.5 < more["change_pct"] < 2.5
    assert len(result["verdicts"]) == 6
