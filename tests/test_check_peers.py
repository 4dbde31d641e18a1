"""Cross-plugin checks involve only the plugins the run asked for and the reference plugin
shipped with the package (openssl), never a third-party plugin nobody asked for (issue 24)."""

import pytest

from conftest import FAST

#: A conftest plugin that lists ed25519 but cannot sign (and cannot verify), or raises.
LIAR = '''
from pytest_qcrypto.backends import Context, CryptoPlugin

class LiarContext(Context):
    def public_key(self):
        return bytes(32)
    def sign(self, message):
        raise RuntimeError("liar cannot sign")
    def verify(self, public_key, message, signature):
        return False
    def runner(self, work):
        return lambda count: None

class Liar(CryptoPlugin):
    name = "liar"
    library = "nothing"
    def supported(self):
        return frozenset({"ed25519"})
    def open(self, algorithm, key, variant=None):
        return LiarContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [Liar()]
'''


def test_a_plugin_nobody_asked_for_does_not_change_the_openssl_cells(pytester):
    pytester.makeconftest(LIAR)
    r = pytester.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=openssl", *FAST)
    assert r.ret == pytest.ExitCode.OK, r.stdout.str()
    r.assert_outcomes(passed=3)  # sign, verify and keygen (openssl generates signature keys)


def test_a_plugin_that_was_asked_for_fails_the_check_and_is_named(pytester):
    pytester.makeconftest(LIAR)
    r = pytester.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=openssl",
                           "--qcrypto-plugin=liar", *FAST)
    r.assert_outcomes(failed=5)  # openssl's sign, verify, keygen and liar's sign, verify
    assert "openssl ed25519: cross-plugin check: liar does not verify openssl's signature" \
        in r.stdout.str()


def test_a_peer_that_raises_is_named_as_the_one_that_failed(pytester):
    pytester.makeconftest(LIAR.replace("        return False", "        raise OSError('gone')"))
    r = pytester.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=openssl,liar",
                           "-k", "openssl", *FAST)
    r.assert_outcomes(failed=3)  # openssl's sign, verify and keygen
    r.stdout.fnmatch_lines(["openssl ed25519: cross-plugin check: liar raised OSError in "
                            "verify(): gone"])
