"""benchmarks/accuracy.py runs end to end (quick mode) and writes its figures as JSON.

Figures and verdicts are not asserted: they depend on the machine.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: The benchmark scripts' tier (root conftest): .ci/run runs it beside the kernel tier.
pytestmark = pytest.mark.benchmark_script

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "accuracy.py"


def test_quick_run_prints_verdicts_and_writes_json(tmp_path):
    out = tmp_path / "accuracy.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--skip", "openssl",
                           "--skip", "stability", "--json", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # a smoke run: its verdicts decide nothing
    text = done.stdout
    assert "1. plugin / tight loop" in text and "5. scaling" in text
    assert "targets met" in text and "not worth quoting" in text
    result = json.loads(out.read_text())
    assert len(result["tight_loop"]) == 8
    assert {r["row"] for r in result["tight_loop"]} == {
        "hashlib sha256", "openssl sha256", "openssl aes-128-cbc", "openssl aes-256-gcm"}
    assert result["scaling"]["two_jobs_detail"][0]["workers"]
    assert result["machine_start"]["cpus"] >= 1
    assert [r["row"] for r in result["pkey_loop"]] == ["openssl ed25519 sign",
                                                       "openssl ml-kem-768 encaps"]
    assert "1b. plugin / tight loop, no buffer size" in text
    judged = [r for r in result["pkey_loop"] if "skipped" not in r]  # pyca 35 has no ML-KEM
    assert [v["met"] for v in result["verdicts"]] == [
        r["met"] for r in result["tight_loop"] + judged] + [result["scaling"]["met"]]


def load_script(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "accuracy", module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_a_cv_verdict_says_when_the_machine_was_not_idle(monkeypatch):
    accuracy = load_script(monkeypatch)
    quiet = {"row": "hashlib sha256", "size": 16, "target": 0.03, "cv": 0.05, "met": False,
             "loop_cv": 0.01, "machine_idle": True}
    busy = {**quiet, "size": 32768, "target": 0.02, "cv": 0.0653, "loop_cv": 0.0557,
            "machine_idle": False}
    assert accuracy.summary({"stability": [quiet, busy]}) == [
        {"what": "CV <= 3% for hashlib sha256 at 16 B (5.00%)", "met": False},
        {"what": "CV <= 2% for hashlib sha256 at 32768 B (6.53%; machine not idle: the tight "
                 "loop's CV was 5.57%)", "met": False},
    ]


def test_a_quick_run_writes_no_json_unless_asked(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--skip", "loop", "--skip",
                           "openssl", "--skip", "stability", "--skip", "scaling"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert list(tmp_path.iterdir()) == []

