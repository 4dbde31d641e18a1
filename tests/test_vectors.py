"""Every known-answer vector on every built-in plugin that supports its algorithm."""

import pytest

from pytest_qcrypto import catalog, kat
from pytest_qcrypto.backends import AuthenticationError, Context, builtin_plugins
from pytest_qcrypto.registry import Registry

REGISTRY = Registry(builtin_plugins())
PAIRS = [(p.name, a) for p in REGISTRY.plugins if REGISTRY.unavailable(p) is None
         for a in catalog.names() if a in REGISTRY.supported(p)]


def test_every_catalog_algorithm_has_vectors():
    assert [a for a in catalog.names() if not kat.vectors(a)] == []


def test_vectors_cite_their_standard():
    for name in catalog.names():
        for v in kat.vectors(name):
            assert any(src in v.name for src in (
                "FIPS", "RFC", "SP 800", "IEEE 1619", "GB/T", "McGrew")), v.name


def test_openssl_supports_every_catalog_algorithm_here():
    # pyca/cryptography's OpenSSL has every catalog algorithm; a gap would hide KAT coverage.
    assert set(catalog.names()) <= REGISTRY.supported(REGISTRY.resolve("openssl").plugin)


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
