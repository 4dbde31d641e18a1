"""Shared helpers for the test suite: fast qcrypto options and conftest texts of test plugins."""

import fcntl
import os
import shutil

import pytest

# pytester's in-process runs drop modules first imported inside a run; pyca/cryptography's
# Rust extension cannot be initialised twice in one process, so import the crypto
# libraries here, before any run, and they stay loaded.
import cryptography.hazmat.primitives.ciphers.aead  # noqa: F401
import cryptography.hazmat.backends.openssl  # noqa: F401
try:  # TripleDES's module from cryptography 43; before that it was in primitives
    import cryptography.hazmat.decrepit.ciphers.algorithms  # noqa: F401
except ImportError:
    import cryptography.hazmat.primitives.ciphers.algorithms  # noqa: F401
import Crypto.Cipher.AES  # noqa: F401

try:  # the same for the matplotlib modules that --qcrypto-plot's start-up check imports
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.backends.backend_svg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import matplotlib.ticker  # noqa: F401
except ImportError:  # the plot extra is not installed: test_plot skips
    pass

#: Options that keep a speed matrix fast in tests (figures are never asserted).
FAST = ("--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1")

#: A conftest adding crypto plugins that are test doubles: one unavailable, one that
#: answers wrongly (and would fail loudly if it were ever timed).
TEST_PLUGINS = '''
from pytest_qcrypto.backends import Context, CryptoPlugin, Unavailable

class Missing(CryptoPlugin):
    name = "missing"
    library = "libmissing"
    def probe(self):
        raise Unavailable("libmissing is not installed (pip install libmissing)")

class WrongContext(Context):
    def digest(self, data):
        return b"\\0" * self.algorithm.digest_size
    def runner(self, work):
        raise AssertionError("a plugin that failed its known answers was timed")

class Wrong(CryptoPlugin):
    name = "wrong"
    library = "a broken digest"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return WrongContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [Missing(), Wrong()]
'''


@pytest.fixture
def fast():
    return FAST


def built_once(tmp_path_factory, name, build):
    """A folder ``name`` that ``build(folder)`` fills once per test run: under pytest-xdist
    the first worker that asks builds it, the others wait for it and share it (each building
    its own copy cost the run twice).  One lock for every such build: they build this
    checkout with pip, and two pip builds of it at once collide in its build/ folder.  What
    ``build`` raises (a skip, a failure) leaves no folder, and the next worker that asks
    tries again."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        where = tmp_path_factory.mktemp(name)
        build(where)
        return where
    root = tmp_path_factory.getbasetemp().parent  # this run's, shared by its workers
    where = root / name
    with open(root / "built_once.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (where / ".built").exists():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir()
            build(where)
            (where / ".built").touch()
    return where


#: The tests that take longest, most of it building or waiting (a wheel and a second virtual
#: environment of this checkout, counts under valgrind): they run first, so that the
#: pytest-xdist workers of the main tier do not wait for them at the end of the run.
SLOW_FIRST = (
    "tests/test_wheel.py::",
    "tests/test_targets_run.py::test_every_plugin_is_measured_on_every_target",
    "tests/test_targets_run.py::test_the_ab_example_gives_one_table_ratios_and_a_verdict",
    "tests/test_counting.py::test_a_loop_of_known_length_counts_a_fixed_amount_an_iteration",
    "tests/test_counting.py::test_two_runs_of_one_cell_agree_within_half_a_percent",
)


def pytest_collection_modifyitems(items):
    """:data:`SLOW_FIRST` first, in that order; the rest as collected (every worker sorts the
    same collection the same way)."""
    def rank(item):
        return next((i for i, p in enumerate(SLOW_FIRST) if item.nodeid.startswith(p)),
                    len(SLOW_FIRST))
    items.sort(key=rank)


#: What the pytest runs that tests start in child processes (``runpytest_subprocess``,
#: ``python -m pytest``, the ``qcrypto`` and ``cryptotest`` commands) get in
#: ``PYTEST_ADDOPTS``: hypothesis's plugin left out.  It imports all of hypothesis at the end
#: of every run (about 0.7 s of CPU here, more than the rest of a small run), and no child run
#: has a hypothesis test; the in-process runs of test_afalg and test_devcrypto leave it out too.
CHILD_ADDOPTS = "-p no:hypothesispytest"


@pytest.fixture(autouse=True)
def _child_runs_without_hypothesis(request, monkeypatch):
    """``PYTEST_ADDOPTS`` = :data:`CHILD_ADDOPTS` while a test runs, unless it is set already
    (a test that sets its own keeps its own); for a pytester test after pytester has cleared
    the outer one."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
    if "PYTEST_ADDOPTS" not in os.environ:
        monkeypatch.setenv("PYTEST_ADDOPTS", CHILD_ADDOPTS)
