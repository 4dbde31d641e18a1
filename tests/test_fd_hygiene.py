"""Resource hygiene: opening and closing contexts, on every path, leaves no descriptor behind.

Counts ``/proc/self/fd``.  The built-in plugins open 1000 contexts each (a
/dev/crypto session or AF_ALG socket pair for the kernel plugins, where the
machine has them); a test-double plugin holding a real pipe per context
exercises the error paths: wrong answers, a plugin raising mid-measurement,
a timeout, the isolate mode, a context whose close fails.
"""

import os
import re
import time
from pathlib import Path

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import isolate
from pytest_qcrypto.backends import Context, CryptoPlugin, builtin_plugins
from pytest_qcrypto.measure.bench import Randomness
from pytest_qcrypto.pytest_side.fixture import MeasureOptions, QcryptoFixture
from pytest_qcrypto.measure.registry import Registry, Selection

FD_DIR = Path("/proc/self/fd")
pytestmark = pytest.mark.skipif(not FD_DIR.is_dir(), reason="needs /proc/self/fd (Linux)")

REGISTRY = Registry(builtin_plugins())
AVAILABLE = [p for p in REGISTRY.plugins if REGISTRY.unavailable(p) is None]


def open_fds() -> int:
    return len(os.listdir(FD_DIR))


def one_per_kind(plugin) -> list[catalog.Algorithm]:
    supported = REGISTRY.supported(plugin)
    out = []
    for kind in (catalog.DIGEST, catalog.CIPHER, catalog.AEAD):
        algs = [a for a in catalog.ALGORITHMS if a.kind == kind and a.name in supported]
        out += algs[:1]
    return out


@pytest.mark.parametrize("plugin", AVAILABLE, ids=lambda p: p.name)
def test_a_thousand_contexts_of_each_plugin(plugin):
    algs = one_per_kind(plugin)
    rng = Randomness(seed=7)
    keys = {a.name: rng.key(a) for a in algs}
    before = open_fds()
    for i in range(1000):
        alg = algs[i % len(algs)]
        ctx = plugin.open(alg, keys[alg.name])
        if i % 100 == 0:  # some do work before they close
            if alg.kind == catalog.DIGEST:
                ctx.digest(b"abc")
            else:
                ctx.encrypt(bytes(alg.iv_size), bytes(16))
        ctx.close()
    assert open_fds() == before


@pytest.mark.parametrize("plugin", AVAILABLE, ids=lambda p: p.name)
def test_measurements_through_the_fixture_leave_nothing_open(plugin):
    registry = Registry([plugin])
    before = open_fds()
    for _ in range(5):
        fixture = QcryptoFixture(lambda: registry, lambda m, again: None, Randomness(3),
                                 MeasureOptions(0.0005, 1, timeout=10))
        for alg in one_per_kind(plugin):
            fixture.open(alg.name, plugin.name).measure(64, decrypt=alg.kind != catalog.DIGEST)
        fixture.close()
    assert open_fds() == before


# -- error paths, with a plugin that holds a pipe per context ----------------------------------

LIVE: set[int] = set()   # ids of test-double contexts not closed yet


class PipeContext(Context):
    """sha256 that keeps two descriptors open until closed, and misbehaves on request."""

    def __init__(self, algorithm, key, how):
        super().__init__(algorithm, key)
        self.how = how
        self.r, self.w = os.pipe()
        LIVE.add(id(self))

    def digest(self, data):
        import hashlib

        if self.how == "wrong":
            return bytes(32)
        return hashlib.sha256(data).digest()

    def runner(self, work):
        def run(count):
            if self.how == "raising":
                raise OSError(5, "Input/output error")
            if self.how == "hanging":
                os.read(self.r, 1)
            for _ in range(count):
                self.digest(work.data)

        return run

    def close(self):
        if id(self) in LIVE:
            os.close(self.r)
            os.close(self.w)
            LIVE.discard(id(self))
        if self.how == "close-fails":
            raise OSError(9, "Bad file descriptor")


class PipePlugin(CryptoPlugin):
    library = "a test double holding a pipe per context"

    def __init__(self, how):
        self.name = how
        self.how = how

    def supported(self):
        return frozenset({"sha256"})

    def open(self, algorithm, key, variant=None):
        return PipeContext(algorithm, key, self.how)


def run_item(how: str, **limits):
    """What one test item would do: open, measure, close at teardown; the outcome."""
    registry = Registry([PipePlugin(how)])
    fixture = QcryptoFixture(lambda: registry, lambda m, again: None, Randomness(5),
                             MeasureOptions(0.001, 1, **limits))
    try:
        fixture.open("sha256", how).measure(32)
        outcome = "passed"
    except (pytest.fail.Exception, pytest.skip.Exception) as exc:
        outcome = str(exc)
    finally:
        try:
            fixture.close()
        except OSError:
            outcome += " / close failed"
    return outcome


@pytest.mark.parametrize("how, limits, expected", [
    ("fine", {}, "passed"),
    ("wrong", {}, "wrong gave a wrong answer for sha256"),
    ("raising", {}, "raising sha256 at 32 bytes failed: [EIO] Input/output error"),
    ("hanging", {"timeout": 0.3}, "timed out after 0.3 s in hanging sha256 at 32 bytes"),
    ("fine", {"isolate": True, "timeout": 10}, "passed"),
    ("hanging", {"isolate": True, "timeout": 0.3}, "timed out after 0.3 s in hanging sha256"),
    ("raising", {"isolate": True, "timeout": 10}, "failed: [EIO] Input/output error"),
    ("close-fails", {}, "failed: [EBADF] Bad file descriptor / close failed"),
], ids=["fine", "wrong-answer", "raising", "timeout", "isolate", "isolate-timeout",
        "isolate-raising", "close-fails"])
def test_every_error_path_closes_what_it_opened(how, limits, expected):
    before = open_fds()
    for _ in range(3):
        outcome = run_item(how, **limits)
        assert expected in outcome
    assert LIVE == set()
    assert open_fds() == before
    assert isolate.abandoned_children() == frozenset()


def test_teardown_closes_the_others_when_one_close_fails():
    good, bad = PipePlugin("fine"), PipePlugin("close-fails")
    registry = Registry([good, bad])
    before = open_fds()
    fixture = QcryptoFixture(lambda: registry, lambda m, again: None, Randomness(5),
                             MeasureOptions(0.001, 1))
    for name in ("fine", "close-fails", "fine"):
        fixture.open("sha256", name)
    with pytest.raises(OSError, match="Bad file descriptor"):
        fixture.close()
    assert LIVE == set() and open_fds() == before


def test_a_hundred_isolated_measurements_leave_no_process_or_descriptor():
    before = open_fds()
    started = time.monotonic()
    for _ in range(100):
        isolate.run_isolated(lambda: 1, 5)
    assert open_fds() == before
    assert isolate.abandoned_children() == frozenset()
    assert time.monotonic() - started < 30


CLOSE_RAISES = '''
import hashlib
from pytest_qcrypto.backends import Context, CryptoPlugin

class RaisingClose(Context):
    def digest(self, data):
        return hashlib.sha256(data).digest()

    def runner(self, work):
        def run(count):
            for _ in range(count):
                hashlib.sha256(work.data).digest()
        return run

    def close(self):
        raise OSError(5, "Input/output error")

class CloseRaises(CryptoPlugin):
    name = "closeraise"
    library = "a test double whose close() raises"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return RaisingClose(algorithm, key)

def pytest_qcrypto_plugins():
    return [CloseRaises()]
'''


def test_a_close_that_raises_fails_its_item_in_one_line(pytester):
    """Found by a user trial: the error of a close() that raises was shown at teardown with a
    40-line traceback through the harness."""
    pytester.makeconftest(CLOSE_RAISES)
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--qcrypto-digest", "sha256",
                                      "--qcrypto-plugin", "closeraise", "--qcrypto-size", "16",
                                      "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1",
                                      timeout=120)
    out = r.stdout.str()
    assert re.search(r"^closeraise sha256: close\(\) failed: OSError: \[Errno 5\] Input/output "
                     r"error \(\S*conftest\.py:\d+ in close\)$", out, re.MULTILINE), out
    assert "Traceback" not in out and "fixture.py" not in out, out
