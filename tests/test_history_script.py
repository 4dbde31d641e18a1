"""benchmarks/history.py runs end to end (tiny mode) and writes time and peak memory as JSON.

Its times and memory are not asserted: they depend on the machine; that the command ran on
the whole history, found the planted steps and reported both measures is.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The benchmark scripts' tier (root conftest): .ci/run runs it beside the kernel tier.
pytestmark = pytest.mark.benchmark_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "history.py"


def test_tiny_run_reports_time_and_peak_memory(tmp_path):
    out = tmp_path / "history.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--tiny", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("qcrypto history on 24 runs x 12 cells: ")
    assert "a tiny run: not worth quoting" in done.stdout
    result = json.loads(out.read_text())
    assert (result["runs"], result["cells"], result["tiny"]) == (24, 12, True)
    assert result["exit_code"] == 1  # the planted slowdowns are regressions
    assert result["wall_s"] > 0 and result["peak_rss_largest_process_mib"] > 0
    assert result["peak_rss_bound_mib"] >= result["peak_rss_largest_process_mib"]
    assert result["page_bytes"] > 0
    found = [line.split(":")[0] + ":" + line.split(":")[1].split(" on ")[0]
             for line in result["steps_found"]]
    assert found == ["REGRESSION: sha256 openssl 16 B digest",
                     "REGRESSION: sha256 openssl 32 B digest",
                     "REGRESSION: sha256 openssl 64 B digest",
                     "speed-up: sha256 openssl 128 B digest",
                     "speed-up: sha256 openssl 256 B digest"]
    assert set(result["met"]) == {"time", "memory"}
