"""A popen target runs from the system's temporary directory unless its spec says chdir=:
started from a clone of this project, its interpreter would otherwise import the clone's
source tree (``''`` is on its ``sys.path``) instead of what is installed there, and say
something other than "not installed there" (found by a fresh-user trial)."""

import shutil
import subprocess

import pytest


def test_a_popen_target_does_not_import_a_source_tree_in_the_current_directory(pytester):
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is None or subprocess.run([system, "-c", "import pytest_qcrypto"],
                                        capture_output=True).returncode == 0:
        pytest.skip("needs a python3 in /usr/bin without pytest-qcrypto")
    shadow = pytester.path / "pytest_qcrypto"  # as in a clone: the package's source here
    shadow.mkdir()
    (shadow / "__init__.py").write_text('__version__ = "0.1.0"\n')
    r = pytester.runpytest("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                           "--qcrypto-size=16", "--qcrypto-min-time=0.01",
                           f"--qcrypto-target=bare=popen//python={system}")
    assert ("  - hashlib@bare (all sizes) skipped: target bare: pytest-qcrypto is not "
            "installed there (No module named 'pytest_qcrypto')") in r.outlines, r.stdout.str()
