"""pkey_checks: every vector passes on the real plugins, and a plugin that gives a wrong
answer (a test double around a real context) fails with the plugin, the scheme and the
vector or check named, in these exact words."""

import hashlib

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.checks import pkey_checks
from pytest_qcrypto.backends import Unsupported, builtin_plugins
from pytest_qcrypto.checks.known_answers import KnownAnswerError, WrongTypeError

PLUGINS = {p.name: p for p in builtin_plugins()}
WITH_VECTORS = [a for a in catalog.ALGORITHMS if not a.rules.sized and pkey_checks.vectors(a)]
PAIRS = [(p, a) for p in ("openssl", "pycryptodome", "hashlib") for a in WITH_VECTORS
         if a.name in PLUGINS[p].supported()]


def needs(*cells):
    """Skip unless each ``(plugin, algorithm name)`` is supported here (the minimum-versions
    job runs cryptography 35 and PyCryptodome 3.7.1, which lack the newer schemes)."""
    for plugin, name in cells:
        alg = catalog.lookup(name)
        if alg.params:  # a KDF with other parameters: the plugin lists its family's default
            alg = catalog.lookup(alg.family)
        if alg.name not in PLUGINS[plugin].supported():
            pytest.skip(f"{plugin} has no {name} here")


def opener(plugin, **overrides):
    """An opener of ``plugin``'s contexts whose methods ``overrides`` replace (a test double
    around the real context: the rest of it is the library's)."""
    def open_(alg):
        ctx = PLUGINS[plugin].open(alg, b"")
        for name, method in overrides.items():
            setattr(ctx, name, method)
        return ctx

    open_.plugin = plugin
    return open_


def test_the_vectors_cover_the_schemes_a_standard_gives_answers_for():
    assert sorted(a.name for a in WITH_VECTORS) == sorted([
        "ed25519", "ed448", "ml-dsa-65", "x25519", "x448", "ml-kem-768", "ml-kem-512",
        "pbkdf2-sha256-i600000", "scrypt-n16384-r8-p1", "argon2id-m65536-t3-p4", "bcrypt-c12",
        "hkdf-sha256"])
    for alg in WITH_VECTORS:
        for v in pkey_checks.vectors(alg):
            assert v["name"].startswith(("RFC ", "FIPS 20", "bcrypt published vectors")), v["name"]


@pytest.mark.parametrize("plugin, alg", PAIRS, ids=[f"{p}-{a.name}" for p, a in PAIRS])
def test_every_vector_passes_on_the_real_plugins(plugin, alg):
    assert pkey_checks.check(plugin, alg, opener(plugin), []) == []


@pytest.mark.parametrize("name", ["ed25519", "ecdsa-p384", "ml-dsa-44", "rsa2048-pkcs1", "x448",
                                  "ecdh-p256", "ml-kem-1024", "rsa2048-oaep", "hkdf-sha256",
                                  "scrypt-n1024-r8-p2"])
def test_cross_plugin_checks_pass_between_openssl_and_pycryptodome(name):
    needs(("openssl", name), ("pycryptodome", name))
    alg = catalog.lookup(name)
    peers = [("pycryptodome", opener("pycryptodome"))]
    if "scrypt" in name:
        peers.append(("hashlib", opener("hashlib")))
    assert pkey_checks.check("openssl", alg, opener("openssl"), peers) == []


def _fails(alg, open_, peers=()):
    needs((open_.plugin, alg))
    with pytest.raises(KnownAnswerError) as info:
        pkey_checks.check("doubleplug", catalog.lookup(alg), open_, list(peers))
    return str(info.value)


def test_a_bad_signature_fails_naming_the_rfc_vector():
    assert _fails("ed25519", opener("openssl", sign=lambda m: bytes(64))) == (
        "doubleplug ed25519: RFC 8032 section 7.1 TEST 1: the signature differs "
        "(got 0000000000000000..., want e5564300c360ac72...)")


def test_accepting_a_tampered_signature_fails():
    assert _fails("ed448", opener("pycryptodome", verify=lambda *a: True)) == (
        "doubleplug ed448: RFC 8032 section 7.4 -----Blank: a tampered signature "
        "(one bit flipped) verifies")


def test_a_bad_shared_secret_fails_naming_the_rfc_vector():
    assert _fails("x25519", opener("openssl", agree=lambda peer: bytes(32))) == (
        "doubleplug x25519: RFC 7748 section 6.1: the shared secret differs "
        "(got 0000000000000000..., want 4a5d9d5ba4ce2de1...)")


def test_a_bad_kdf_key_fails_naming_the_rfc_vector():
    assert _fails("hkdf-sha256", opener("pycryptodome", derive_key=lambda p, s, **k: bytes(32))) == (
        "doubleplug hkdf-sha256: RFC 5869 appendix A.3 (test case 3): the derived key differs "
        "(got 0000000000000000..., want 8da4e775a563c18f...)")
    assert _fails("scrypt", opener("hashlib", derive_key=lambda p, s, **k: bytes(32))) == (
        "doubleplug scrypt-n16384-r8-p1: RFC 7914 section 12 (N=1024, r=8, p=16): the derived "
        "key differs (got 0000000000000000..., want fdbabe1c9d347200...)")


def test_a_wrong_ml_kem_key_from_the_fips_203_seed_fails():
    zeros = hashlib.sha256(bytes(1184)).hexdigest()[:16]
    assert _fails("ml-kem-768", opener("openssl", public_key=lambda: bytes(1184))) == (
        "doubleplug ml-kem-768: FIPS 203 ML-KEM.KeyGen_internal, C2SP Wycheproof "
        "mlkem_768_keygen_seed_test.json tcId 1: the public key's SHA-256 differs "
        f"(got {zeros}..., want 86adbca81f4fee89...)")


def test_a_peer_that_decapsulates_to_another_secret_fails_the_cross_check():
    needs(("openssl", "ml-kem-1024"), ("pycryptodome", "ml-kem-1024"))
    bad = ("badpeer", opener("pycryptodome", decapsulate=lambda ct: bytes(32)))
    with pytest.raises(KnownAnswerError) as info:
        pkey_checks.check("openssl", catalog.lookup("ml-kem-1024"), opener("openssl"), [bad])
    assert str(info.value) == ("openssl ml-kem-1024: cross-plugin check: badpeer decapsulates "
                               "openssl's ciphertext to a different shared secret")


def test_a_kem_whose_own_ciphertexts_do_not_decapsulate_fails_the_self_check():
    assert _fails("ml-kem-1024", opener("openssl", decapsulate=lambda ct: bytes(32))) == (
        "doubleplug ml-kem-1024: self check: doubleplug decapsulates doubleplug's ciphertext "
        "to a different shared secret")


def test_a_peer_that_rejects_our_signature_or_accepts_a_tampered_one_fails():
    alg = catalog.lookup("ecdsa-p256")
    for verify, what in ((lambda *a: False, "badpeer does not verify openssl's signature"),
                         (lambda *a: True, "badpeer accepts openssl's signature with one bit flipped")):
        with pytest.raises(KnownAnswerError) as info:
            pkey_checks.check("openssl", alg, opener("openssl"),
                              [("badpeer", opener("pycryptodome", verify=verify))])
        assert str(info.value) == f"openssl ecdsa-p256: cross-plugin check: {what}"


def test_a_peer_deriving_another_kdf_key_fails_with_the_parameters():
    want = hashlib.pbkdf2_hmac("sha256", pkey_checks.PASSWORD, pkey_checks.SALT, 1000, 32)
    bad = ("badpeer", opener("hashlib", derive_key=lambda p, s, **k: b"\1" * 32))
    with pytest.raises(KnownAnswerError) as info:
        pkey_checks.check("openssl", catalog.lookup("pbkdf2-sha256-i1000"), opener("openssl"), [bad])
    assert str(info.value) == (
        "openssl pbkdf2-sha256-i1000: cross-plugin check (iterations=1000): badpeer derives a "
        f"different key (got 0101010101010101..., want {want.hex()[:16]}...)")


def test_an_agreement_that_disagrees_across_plugins_fails():
    needs(("pycryptodome", "ecdh-p256"))
    bad = ("badpeer", opener("pycryptodome", agree=lambda peer: b"\7" * 32))
    with pytest.raises(KnownAnswerError) as info:
        pkey_checks.check("openssl", catalog.lookup("ecdh-p256"), opener("openssl"), [bad])
    assert str(info.value) == ("openssl ecdh-p256: cross-plugin check: badpeer and openssl "
                               "derive different shared secrets")


def test_an_oaep_peer_that_cannot_decrypt_ours_fails():
    bad = ("badpeer", opener("openssl", private_decrypt=lambda ct: b"x" * 32))
    with pytest.raises(KnownAnswerError) as info:
        pkey_checks.check("openssl", catalog.lookup("rsa2048-oaep"), opener("openssl"), [bad])
    assert str(info.value) == ("openssl rsa2048-oaep: cross-plugin check: badpeer does not "
                               "decrypt openssl's ciphertext")


def test_a_vector_the_plugin_cannot_take_is_skipped_and_said():
    needs(("openssl", "argon2id"))
    real = PLUGINS["openssl"]

    def open_(alg):
        ctx = real.open(alg, b"")
        derive = ctx.derive_key

        def no_secret(password, salt, *, secret=b"", associated_data=b""):
            if secret or associated_data:
                raise Unsupported("this Argon2 takes no secret")
            return derive(password, salt)

        ctx.derive_key = no_secret
        return ctx

    assert pkey_checks.check("doubleplug", catalog.lookup("argon2id-m64-t1-p1"), open_, []) == [
        "RFC 9106 section 5.3: skipped (this Argon2 takes no secret)"]


def test_an_answer_of_the_wrong_type_names_the_method():
    with pytest.raises(WrongTypeError) as info:
        pkey_checks.check("doubleplug", catalog.lookup("ed25519"), opener("openssl", sign=lambda m: "sig"), [])
    assert str(info.value) == "plugin doubleplug returned str from sign(), expected bytes"
    with pytest.raises(WrongTypeError) as info:
        pkey_checks.check("doubleplug", catalog.lookup("ecdsa-p256"),
                          opener("openssl", verify=lambda *a: 1), [])
    assert str(info.value) == "plugin doubleplug returned int from verify(), expected bool"


def test_every_context_it_opens_is_closed_and_a_peer_that_cannot_open_is_left_out():
    needs(("pycryptodome", "x25519"))
    opened, closed = [], []

    def counting(plugin):
        def open_(alg):
            ctx = PLUGINS[plugin].open(alg, b"")
            opened.append(ctx)
            ctx.close = lambda ctx=ctx: closed.append(ctx)
            return ctx
        return open_

    def broken(alg):
        raise OSError("no device")

    peers = [("broken", broken), ("pycryptodome", counting("pycryptodome"))]
    assert pkey_checks.check("openssl", catalog.lookup("x25519"), counting("openssl"), peers) == []
    # the RFC 7748 vector, the checked context, its second for the self check, the peer
    assert len(opened) == 4 and sorted(map(id, closed)) == sorted(map(id, opened))
    # and when a check fails
    opened.clear(), closed.clear()
    bad = ("badpeer", opener("pycryptodome", agree=lambda peer: bytes(32)))
    with pytest.raises(KnownAnswerError):
        pkey_checks.check("openssl", catalog.lookup("x25519"), counting("openssl"), [bad])
    assert opened and sorted(map(id, closed)) == sorted(map(id, opened))
