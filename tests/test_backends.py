"""Built-in crypto plugins are found by discovery: a new one is one new file in ``backends/``."""

from __future__ import annotations

import filecmp
import shutil
import sys
from pathlib import Path

import pytest_qcrypto
from conftest import FAST
from pytest_qcrypto import backends
from pytest_qcrypto.backends import base

FAKE_PLUGIN = '''
"""A software plugin for the discovery test: SHA-256 through hashlib."""

import hashlib

from pytest_qcrypto.backends.base import Context, CryptoPlugin, Unsupported


class FakeContext(Context):
    def digest(self, data):
        return hashlib.sha256(data).digest()

    def runner(self, work):
        data = work.data

        def run(count):
            for _ in range(count):
                hashlib.sha256(data).digest()
        return run


class FakePlugin(CryptoPlugin):
    name = "fake"
    default_rank = 5
    library = "hashlib, under another name"
    description = "the discovery test's plugin"

    def supported(self):
        return frozenset({"sha256"})

    def open(self, algorithm, key, variant=None):
        if variant is not None or algorithm.name != "sha256":
            raise Unsupported("fake does sha256 only")
        return FakeContext(algorithm, key)


PLUGINS = [FakePlugin]
'''


def test_builtin_plugins_in_default_order_from_their_ranks():
    plugins = backends.builtin_plugins()
    assert [p.name for p in plugins] == ["openssl", "hashlib", "pycryptodome", "afalg",
                                         "devcrypto"]
    assert [p.default_rank for p in plugins] == sorted(p.default_rank for p in plugins)
    # the help text's order, read without importing, is the same
    assert backends.default_order() == [p.name for p in plugins]


def test_helper_modules_are_not_plugins():
    declared = dict(backends._declared())
    assert set(declared) == {"openssl", "hashlib", "pycryptodome", "afalg", "devcrypto"}
    assert "cryptodev_abi" not in declared and "base" not in declared


def test_users_import_the_shared_types_from_the_package():
    for name in ("Context", "CryptoPlugin", "Workload", "Runner", "Unavailable", "Unsupported",
                 "AuthenticationError", "implementation_text", "describe_implementations"):
        assert getattr(backends, name) is getattr(base, name)


def test_a_new_builtin_plugin_is_one_new_file(pytester, tmp_path, monkeypatch):
    original = Path(pytest_qcrypto.__file__).parent
    copy = tmp_path / "site" / "pytest_qcrypto"
    shutil.copytree(original, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "backends" / "fakeplugin.py").write_text(FAKE_PLUGIN, encoding="utf-8")
    compared = filecmp.dircmp(original, copy, ignore=["__pycache__"])
    assert not compared.diff_files and not compared.left_only and not compared.right_only
    assert compared.subdirs["backends"].right_only == ["fakeplugin.py"]
    assert not compared.subdirs["backends"].diff_files

    monkeypatch.setenv("PYTHONPATH", str(copy.parent))  # pytester puts its tmp dir first
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # not the installed entry point
    pytester.chdir()

    def run(*args):
        return pytester.run(sys.executable, "-m", "pytest", "-p", "pytest_qcrypto.plugin",
                            "-p", "no:cacheprovider", *args, timeout=120)

    r = run("--qcrypto-list")
    out = r.stdout.str()
    assert r.ret == 0, out + r.stderr.str()
    assert "fake: available" in out and "library: hashlib, under another name" in out
    assert "fake: available\n  library: hashlib, under another name\n" in out
    assert out.index("fake: available") < out.index("openssl")  # rank 5 comes first

    r = run("--help")
    assert "Default: the first available of fake, openssl, hashlib," in " ".join(
        r.stdout.str().split())

    # no --qcrypto-plugin: the first available by rank is the new one
    r = run("--qcrypto-digest", "sha256", "--qcrypto-size", "16,64", *FAST)
    lines = r.stdout.lines
    assert r.ret == 0, r.stdout.str()
    start = lines.index("Benchmark results for 'sha256' digest (KiB/s):")
    assert lines[start + 1].split() == ["plugin", "16", "64"]
    assert lines[start + 2].split()[0] == "fake" and len(lines[start + 2].split()) == 3
    where = pytester.run(sys.executable, "-c", "import pytest_qcrypto; print(pytest_qcrypto.__file__)",
                         timeout=60)
    assert where.stdout.lines == [str(copy / "__init__.py")]  # the copy ran, not the install
