"""Shared helpers for the test suite: fast qcrypto options and conftest texts of test plugins."""

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
