"""The examples in examples/ run as documented."""

import re
import shutil
from pathlib import Path

from conftest import FAST

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_custom_ctypes_plugin_example(pytester):
    shutil.copy(EXAMPLES / "ctypes_plugin" / "conftest.py", pytester.path / "conftest.py")
    r = pytester.runpytest("--qcrypto-digest", "sha256,sha512", "--qcrypto-plugin", "libcrypto",
                           "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16,4096", *FAST)
    assert r.ret == 0
    r.assert_outcomes(passed=8)
    row = next(x for x in r.outlines if x.startswith("libcrypto "))
    assert all(re.fullmatch(r"\d+\.\d\d", c) for c in row.split()[1:])


def test_custom_plugin_is_listed(pytester):
    shutil.copy(EXAMPLES / "ctypes_plugin" / "conftest.py", pytester.path / "conftest.py")
    r = pytester.runpytest("--qcrypto-list")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["libcrypto (aliases: ctypes-openssl): available",
                            "  library: the system libcrypto through ctypes"])


def test_own_tests_example(pytester, monkeypatch):
    monkeypatch.setenv("EXAMPLE_FLOOR_KIB_PER_S", "0.001")  # the suite asserts no speed
    shutil.copy(EXAMPLES / "own_tests" / "test_floors.py", pytester.path / "test_floors.py")
    r = pytester.runpytest("-v", *FAST)
    r.assert_outcomes(passed=5)
    r.stdout.fnmatch_lines([
        "*test_throughput_floor?sha256-openssl-64? PASSED*",
        "Benchmark results for 'sha256' digest (KiB/s):",
        "Benchmark results for 'aes-128-gcm' AEAD (KiB/s):",
    ])
