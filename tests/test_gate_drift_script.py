"""benchmarks/gate_drift.py runs end to end (tiny mode) and writes its figures as JSON.

False alarms, cannot-tells and detections are not asserted: they depend on the machine; the
counts, the structure and that every cell of every compare got a verdict are.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The benchmark scripts' tier (root conftest): .ci/run runs it beside the kernel tier.
pytestmark = pytest.mark.benchmark_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "gate_drift.py"


def test_tiny_run_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "drift.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert "gate drift: 2 sizes, slowed sha256 at 16, 256 B by 20%, threshold 10%, 1 compares " \
        "per neighbour condition, slow phase of spread rounds" in text
    assert "neighbour compares same code failed  cannot tell (cells)" in text
    assert "targets met: " in text and "a tiny run: not worth quoting" in text
    result = json.loads(out.read_text())
    assert [r["condition"] for r in result["runs"]] == ["none", "spin", "memory"]
    assert list(result["summary"]) == ["none", "spin", "memory"]
    for run in result["runs"]:
        # sha256 openssl, hashlib and slowed, aes-128-gcm openssl, at 16 and 256 B
        assert len(run["verdicts"]) == 8, run["verdicts"]
        assert all(v != "?" for v in run["verdicts"].values())
        assert run["exit"] in (0, 1)
    for c in result["summary"].values():
        assert c["compares"] == 1 and c["cells"] == 8 and sorted(c["caught"]) == ["16", "256"]
    assert [v["target"] for v in result["verdicts"]][:2] == [
        "none: same code failed in at most 1 of 20 compares",
        "none: cannot tell in fewer than half the cells"]
    # the instruction gate and the A/B recipe ran in the same script, one per condition
    assert [c for c in result["instructions"]["conditions"]] == ["none", "spinning", "memory"]
    assert "instruction gate: sha256 hashlib-wrapped, 16 B, threshold 1%" in text
    assert [r["condition"] for r in result["ab"]["runs"]] == ["none", "spin", "memory"]
    for run in result["ab"]["runs"]:  # openssl, hashlib and slowed here (@local), at 16 B
        assert sorted(run["verdicts"]) == ["sha256:hashlib@local:16:digest",
                                           "sha256:openssl@local:16:digest",
                                           "sha256:slowed@local:16:digest"]
        assert all(v != "?" for v in run["verdicts"].values())
    assert "A/B recipe (both versions in one run, interleaved, --qcrypto-compare-target)" in text
