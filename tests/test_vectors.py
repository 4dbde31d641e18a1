"""Every known-answer vector on every built-in plugin that supports its algorithm."""

import importlib.util

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.checks import known_answers as kat
from pytest_qcrypto.backends import AuthenticationError, Context, builtin_plugins
from pytest_qcrypto.measure.registry import Registry

REGISTRY = Registry(builtin_plugins())
#: The kinds with a buffer size (the public-key kinds and KDFs: tests/test_pkey_checks.py).
SIZED = [a.name for a in catalog.ALGORITHMS if a.rules.sized]
PAIRS = [(p.name, a) for p in REGISTRY.plugins if REGISTRY.unavailable(p) is None
         for a in SIZED if a in REGISTRY.supported(p)]


def test_every_catalog_algorithm_has_vectors():
    assert [a for a in SIZED if not kat.vectors(a)] == []


def test_vectors_cite_their_standard():
    for name in catalog.names():
        for v in kat.vectors(name):
            assert any(src in v.name for src in (
                "FIPS", "RFC", "SP 800", "IEEE 1619", "GB/T", "McGrew", "Schneier")), v.name


def test_openssl_supports_every_catalog_algorithm_here_but_single_des():
    # pyca/cryptography's OpenSSL has every catalog algorithm but des-cbc (pyca has no single
    # DES); a gap would hide KAT coverage.
    supported = REGISTRY.supported(REGISTRY.resolve("openssl").plugin)
    lacking = {"des-cbc", "bcrypt-c12", "ml-kem-512"}  # pyca has no bcrypt nor ML-KEM-512
    newer = {"asymmetric.mlkem": {"ml-kem-768", "ml-kem-1024"},  # pyca 46 and later
             "asymmetric.mldsa": {"ml-dsa-44", "ml-dsa-65", "ml-dsa-87"},
             "kdf.argon2": {"argon2id-m65536-t3-p4"}}  # pyca 44 and later
    for module, names in newer.items():  # the minimum-versions job runs pyca 35
        if importlib.util.find_spec(f"cryptography.hazmat.primitives.{module}") is None:
            lacking |= names
    assert set(catalog.names()) - supported == lacking


def test_every_catalog_algorithm_is_checked_by_some_plugin_here():
    assert set(SIZED) - {a for _, a in PAIRS} == set()


@pytest.mark.parametrize("plugin, algorithm", PAIRS, ids=[f"{p}-{a}" for p, a in PAIRS])
def test_known_answers(plugin, algorithm):
    sel = REGISTRY.resolve(plugin)
    alg = catalog.lookup(algorithm)
    ran = kat.check_vectors(plugin, alg, lambda key: sel.plugin.open(alg, key))
    assert ran == len(kat.vectors(algorithm)) > 0


class _WrongDigest(Context):
    def digest(self, data):
        return bytes(self.algorithm.digest_size)


class _NoTagCheck(Context):
    """An AEAD that encrypts right (via openssl) but accepts any tag."""

    def __init__(self, algorithm, key):
        super().__init__(algorithm, key)
        self._real = REGISTRY.resolve("openssl").plugin.open(algorithm, key)

    def encrypt(self, iv, data, aad=b""):
        return self._real.encrypt(iv, data, aad)

    def decrypt(self, iv, data, aad=b""):
        try:
            return self._real.decrypt(iv, data, aad)
        except AuthenticationError:
            return data[: -self.algorithm.tag_size]


class _WrongMac(Context):
    """A MAC context that forgets the key's last byte (a classic truncation bug)."""

    def mac(self, data):
        import hmac
        return hmac.digest(self.key[:-1], data, self.algorithm.family)


class _KeyRecorder(Context):
    keys: list = []

    def mac(self, data):
        import hmac
        _KeyRecorder.keys.append(self.key)
        return hmac.digest(self.key, data, self.algorithm.family)


def test_mac_vectors_from_their_rfcs():
    # RFC 4231 test case 2 and RFC 4493 example 2, copied from the RFCs' text.
    case2 = [v for v in kat.vectors("hmac-sha256") if "test case 2" in v.name]
    assert [(v.key, v.input, v.output.hex()) for v in case2] == [
        (b"Jefe", b"what do ya want for nothing?",
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")]
    cmac = kat.vectors("cmac-aes-128")
    assert [len(v.input) for v in cmac] == [0, 16, 40, 64]
    assert cmac[1].output.hex() == "070a16b46b4d4144f79bdd9dd04a287c"
    assert kat.vectors("poly1305")[0].output.hex() == "a8061dc1305136c6c22b8baf0c0127a9"


def test_mac_check_opens_each_context_with_the_vectors_key_of_any_length():
    alg = catalog.lookup("hmac-sha512")
    _KeyRecorder.keys = []
    assert kat.check_vectors("rec", alg, lambda key: _KeyRecorder(alg, key)) == 6
    assert [len(k) for k in _KeyRecorder.keys] == [20, 4, 20, 25, 131, 131]


def test_wrong_mac_names_plugin_algorithm_and_vector():
    alg = catalog.lookup("hmac-sha1")
    with pytest.raises(kat.KnownAnswerError) as e:
        kat.check_vectors("broken", alg, lambda key: _WrongMac(alg, key))
    assert str(e.value).startswith(
        "broken gave a wrong answer for hmac-sha1 MAC on vector 'RFC 2202 section 3 test case 1': "
        "got ")
    assert str(e.value).endswith("expected b617318655057264e28bc0b6fb378c8ef146be00")


def test_a_mac_that_is_not_bytes_names_the_method():
    alg = catalog.lookup("hmac-md5")

    class _Str(Context):
        def mac(self, data):
            return "9294727a3638bb1c13f48ef8158bfc9d"

    with pytest.raises(kat.WrongTypeError) as e:
        kat.check_vectors("odd", alg, lambda key: _Str(alg, key))
    assert str(e.value) == "plugin odd returned str from mac(), expected bytes"


def test_wrong_digest_names_plugin_algorithm_and_vector():
    alg = catalog.lookup("sha256")
    with pytest.raises(kat.KnownAnswerError) as e:
        kat.check_vectors("broken", alg, lambda key: _WrongDigest(alg, key))
    msg = str(e.value)
    assert "broken" in msg and "sha256" in msg and "FIPS 180-4" in msg


def test_aead_accepting_a_tampered_tag_fails():
    alg = catalog.lookup("aes-128-gcm")
    with pytest.raises(kat.KnownAnswerError, match="tampered aes-128-gcm tag"):
        kat.check_vectors("lax", alg, lambda key: _NoTagCheck(alg, key))


class _Returns(Context):
    """A context that answers right (through openssl) except that ``method`` returns ``odd``."""

    def __init__(self, algorithm, key, method, odd):
        super().__init__(algorithm, key)
        self._real = REGISTRY.resolve("openssl").plugin.open(algorithm, key)
        self.method, self.odd = method, odd

    def _answer(self, method, *args):
        real = getattr(self._real, method)(*args)
        if method != self.method:
            return real
        return self.odd(real) if callable(self.odd) else self.odd

    def digest(self, data):
        return self._answer("digest", data)

    def encrypt(self, iv, data, aad=b""):
        return self._answer("encrypt", iv, data, aad)

    def decrypt(self, iv, data, aad=b""):
        return self._answer("decrypt", iv, data, aad)


@pytest.mark.parametrize("algorithm, method, odd, name", [
    ("sha256", "digest", "ba7816bf", "str"),
    ("aes-128-cbc", "encrypt", [1, 2, 3], "list"),
    ("aes-128-gcm", "decrypt", None, "NoneType"),
    ("aes-128-cbc", "decrypt", "plaintext", "str"),
])
def test_an_answer_that_is_not_bytes_names_the_plugin_and_method(algorithm, method, odd, name):
    alg = catalog.lookup(algorithm)
    with pytest.raises(kat.WrongTypeError) as e:
        kat.check_vectors("odd", alg, lambda key: _Returns(alg, key, method, odd))
    assert str(e.value) == f"plugin odd returned {name} from {method}(), expected bytes"


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_bytes_like_answers_are_answers(kind):
    for algorithm, method in (("sha256", "digest"), ("aes-128-cbc", "encrypt"),
                              ("aes-128-gcm", "decrypt")):
        alg = catalog.lookup(algorithm)
        ran = kat.check_vectors(kind.__name__, alg, lambda key: _Returns(alg, key, method, kind))
        assert ran == len(kat.vectors(algorithm)) > 0


ODD_PLUGINS = '''
import hashlib
from pytest_qcrypto.backends import Context, CryptoPlugin

class OddContext(Context):
    def __init__(self, algorithm, key, odd):
        super().__init__(algorithm, key)
        self.odd = odd
    def digest(self, data):
        real = hashlib.sha256(data).digest()
        return real.hex() if self.odd == "strdigest" else real
    def runner(self, work):
        if self.odd == "norunner":
            return None
        return lambda count: None

class Odd(CryptoPlugin):
    library = "a plugin returning odd types"
    def __init__(self, name):
        self.name = name
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return OddContext(algorithm, key, self.name)

def pytest_qcrypto_plugins():
    return [Odd("strdigest"), Odd("norunner")]
'''


@pytest.mark.parametrize("plugin, message", [
    ("strdigest", "plugin strdigest returned str from digest(), expected bytes"),
    ("norunner", "plugin norunner returned NoneType from runner(), expected a callable that "
                 "runs count operations"),
])
def test_a_plugin_returning_the_wrong_type_fails_its_item_naming_the_plugin(pytester, plugin,
                                                                          message):
    pytester.makeconftest(ODD_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", plugin,
                           "--qcrypto-size", "16", "--qcrypto-min-time", "0.001",
                           "--qcrypto-rounds", "1", "-p", "no:cacheprovider")
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    r.stdout.fnmatch_lines([f"*_ qcrypto::sha256?{plugin}-16? _*", message, "*qcrypto speed*",
                            f"  x {plugin} (all sizes) failed: {message}"])
    assert "Traceback" not in out and "AttributeError" not in out and "known_answers.py" not in out
    assert "harness.py" not in out and "TypeError" not in out
