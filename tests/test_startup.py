"""Registration is nearly free: a pytest run that never asks for a benchmark imports the option
table and the hooks of pytest-qcrypto, and no crypto library, no matplotlib, no execnet.

Each run is a child process, so that what this test session imported does not count.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Every pytest_qcrypto module that a plain run imports (the entry point, the option table,
#: the dormant plugin that wakes the rest, the hook specification), and nothing else.
PLAIN_RUN_MODULES = [
    "pytest_qcrypto", "pytest_qcrypto.plugin", "pytest_qcrypto.pytest_side",
    "pytest_qcrypto.pytest_side.dormant", "pytest_qcrypto.pytest_side.hookspecs",
    "pytest_qcrypto.pytest_side.option_model", "pytest_qcrypto.pytest_side.options",
]
#: Top-level packages a plain run must not import on our account.
HEAVY = ("cryptography", "Crypto", "Cryptodome", "matplotlib", "execnet", "numpy", "_hashlib")

CHILD = """
import json, sys
import pytest
code = pytest.main(sys.argv[1:])
print("MODULES " + json.dumps({"code": int(code), "modules": sorted(sys.modules)}))
"""


def modules_of_run(where: Path, *args: str) -> set[str]:
    r = subprocess.run([sys.executable, "-c", CHILD, "-p", "no:cacheprovider", *args],
                       cwd=where, capture_output=True, text=True, timeout=300)
    line = [x for x in r.stdout.splitlines() if x.startswith("MODULES ")]
    assert line, r.stdout + r.stderr
    found = json.loads(line[-1].removeprefix("MODULES "))
    assert found["code"] == 0, r.stdout + r.stderr
    return set(found["modules"])


def test_a_plain_run_imports_only_the_option_table_and_the_hooks(pytester):
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    with_plugin = modules_of_run(pytester.path, "test_plain.py")
    without = modules_of_run(pytester.path, "-p", "no:qcrypto", "test_plain.py")
    assert sorted(m for m in with_plugin if m.startswith("pytest_qcrypto")) == PLAIN_RUN_MODULES
    assert not any(m.startswith("pytest_qcrypto") for m in without)
    ours = with_plugin - without
    assert not sorted(m for m in ours if m.split(".")[0] in HEAVY)


@pytest.mark.parametrize("test_file", [
    "import pytest\n\n@pytest.mark.qcrypto('sha256', plugins=['hashlib'], sizes=[16])\n"
    "def test_marked(qcrypto_context, qcrypto_case):\n    qcrypto_context.measure(16)\n",
    "def test_fixture(qcrypto):\n    qcrypto.open('sha256', 'hashlib').measure(16)\n",
], ids=["marker", "fixture"])
def test_a_test_that_uses_the_plugin_wakes_it(pytester, test_file):
    pytester.makepyfile(test_uses=test_file)
    found = modules_of_run(pytester.path, "test_uses.py")
    assert "pytest_qcrypto.pytest_side.run" in found
    assert "pytest_qcrypto.measure.harness" in found


def test_help_still_lists_every_layout_and_default(pytester):
    r = pytester.runpytest_subprocess("--help")
    text = " ".join(r.stdout.str().split())
    assert "layout of the results: qcrypto (default), openssl" in text
    assert "Default: 16,64,256,1024,4096,8192,32768." in text
