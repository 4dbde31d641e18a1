"""benchmarks/gate_power.py runs end to end (tiny mode) and writes its figures as JSON.

Detection and false-alarm figures are not asserted: they depend on the machine; the
counts, the structure and that every run was judged are.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The benchmark scripts' tier (root conftest): .ci/run runs it beside the kernel tier.
pytestmark = pytest.mark.benchmark_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gate_power.py"
NAMES = ["slow00", "slow05", "slow10", "slow20", "slow30"]


def test_tiny_run_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "power.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert "gate power: sha256 hashlib-wrapped 4096 B, threshold 10%, 2 compare runs per " \
        "condition, median test at 0.05" in text
    assert " slowdown extra work                   quiet                    busy" in text
    assert "      30%      42.9%      caught" in text  # extra work s / (1 - s)
    assert "targets met: " in text and "a tiny run: not worth quoting" in text
    result = json.loads(out.read_text())
    assert list(result["conditions"]) == ["quiet", "busy"]
    for cond in result["conditions"].values():
        assert cond["runs"] == 2 and sorted(cond["caught"]) == NAMES
        assert len(cond["gated_s"]) == 2 and len(cond["plain_s"]) == 1
        # every cell of every compare run was judged: a verdict each, and the test's p-value
        assert all(len(cond["statuses"][n]) == 2 for n in NAMES), cond["statuses"]
        assert all(len(cond["p_values"][n]) == 2 for n in NAMES), cond["p_values"]
        assert all(0 < p <= 1 for n in NAMES for p in cond["p_values"][n])
    assert [v["target"] for v in result["verdicts"]] == [
        "quiet: 10% slowdowns caught in >= 95% of runs", "quiet: false alarms in <= 5% of runs",
        "busy: 20% slowdowns caught in >= 95% of runs", "busy: false alarms in <= 5% of runs",
        "a gated run at most 2x the time of a plain one"]
