"""The built wheel carries the known-answer vectors: a run against the wheel alone proves it."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import built_once

ROOT = Path(__file__).parent.parent


def build_and_unpack(out):
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
                            str(ROOT)], capture_output=True, text=True, timeout=300)
    if build.returncode != 0:
        pytest.fail(f"building the wheel failed:\n{build.stderr[-2000:]}", pytrace=False)
    wheel = next(out.glob("pytest_qcrypto-*.whl"))
    target = out / "site"
    with zipfile.ZipFile(wheel) as z:
        assert "pytest_qcrypto/checks/vectors/vectors.json" in z.namelist()
        z.extractall(target)


@pytest.fixture(scope="session")
def unpacked_wheel(tmp_path_factory):
    """The wheel of this checkout, unpacked; built once per run (one build for every
    pytest-xdist worker: two at once collide in the checkout's build/ folder)."""
    return built_once(tmp_path_factory, "wheel", build_and_unpack) / "site"


def test_known_answers_and_main_job_run_from_the_wheel(unpacked_wheel, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(unpacked_wheel), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "pytest_qcrypto.plugin", "-p", "no:cacheprovider",
         "--qcrypto-digest", "sha256", "--qcrypto-cipher", "aes-128-gcm", "--qcrypto-plugin",
         "openssl", "--qcrypto-size", "64", "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1",
         "-q"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Benchmark results for 'sha256' digest (KiB/s):" in r.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import pytest_qcrypto.checks.known_answers as k; print(k.__file__); "
         "print(sum(len(k.vectors(a)) for a in ('sha256', 'aes-128-gcm')))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    path, count = where.stdout.split()
    assert Path(path).is_relative_to(unpacked_wheel) and int(count) > 0


def test_the_installed_plugin_runs_as_pytest_loads_it(unpacked_wheel, tmp_path):
    """Through its pytest11 entry point, as after a plain ``pip install .``: pytest then
    rewrites the asserts of every module of the distribution, and their loader is pytest's
    (found by a user trial: the discovery of built-in plugins asked that loader for source it
    cannot give, and every pytest command ended in an INTERNALERROR)."""
    env = dict(os.environ, PYTHONPATH=str(unpacked_wheel))  # the wheel's distribution first
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--qcrypto-digest", "sha256",
         "--qcrypto-plugin", "hashlib", "--qcrypto-size", "64", "--qcrypto-min-time", "0.001",
         "--qcrypto-rounds", "1", "-q"], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Benchmark results for 'sha256' digest (KiB/s):" in r.stdout
    where = subprocess.run([sys.executable, "-c", "import pytest_qcrypto; print(pytest_qcrypto.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(unpacked_wheel)
