"""The crypto plugins' public-key and KDF contexts: what each lists, what its one-shot methods
give (they interoperate across plugins), what its runners call and how often, and why the
kernel plugins have none of these kinds."""

import sys
from functools import partial

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.checks import pkey_checks
from pytest_qcrypto.backends import Unsupported, Workload, builtin_plugins
from pytest_qcrypto.backends import base, hashlib as hashlib_plugin, openssl_pkey, pycryptodome_pkey
from pytest_qcrypto.backends.afalg import NO_PKEY as AFALG_NO_PKEY
from pytest_qcrypto.backends.devcrypto import NO_PKEY as DEVCRYPTO_NO_PKEY

PLUGINS = {p.name: p for p in builtin_plugins()}
UNSIZED = [a for a in catalog.ALGORITHMS if not a.rules.sized]
#: Cheaper parameters for the KDF runners (the loop is the same code at any parameters).
CHEAP = {"pbkdf2-sha256": "pbkdf2-sha256-i1000", "scrypt": "scrypt-n1024-r8-p1",
         "argon2id": "argon2id-m64-t1-p1", "bcrypt": "bcrypt-c4"}
LIBRARY_PLUGINS = ("openssl", "pycryptodome", "hashlib")


def needs(*cells):
    """Skip unless each ``(plugin, algorithm name)`` is supported here (the minimum-versions
    job runs cryptography 35 and PyCryptodome 3.7.1, which lack the newer schemes)."""
    for plugin, name in cells:
        alg = catalog.lookup(name)
        if alg.params:  # a KDF with other parameters: the plugin lists its family's default
            alg = catalog.lookup(alg.family)
        if alg.name not in PLUGINS[plugin].supported():
            pytest.skip(f"{plugin} has no {name} here")


def _cheap(alg):
    return catalog.lookup(CHEAP[alg.family]) if alg.family in CHEAP else alg


_OPENED = {}


def _context(plugin, alg):
    """One context per (plugin, algorithm) for the whole module: RSA keys take seconds."""
    if (plugin, alg.name) not in _OPENED:
        _OPENED[plugin, alg.name] = PLUGINS[plugin].open(alg, b"")
    return _OPENED[plugin, alg.name]


def _work(alg, op):
    if alg.kind == catalog.Kind.KDF:
        return Workload(data=pkey_checks.PASSWORD, iv=pkey_checks.SALT, operation=op)
    return Workload(data=pkey_checks.MESSAGE, operation=op)


#: openssl's KDF loop is its own (one KDF object per derivation, not call_loop):
#: test_openssl_kdf_runner_makes_one_kdf_object_per_derivation counts it
CELLS = [(p, _cheap(a), op) for p in LIBRARY_PLUGINS for a in UNSIZED
         if a.name in PLUGINS[p].supported() for op in a.directions
         if not (p == "openssl" and a.kind == catalog.Kind.KDF)]

#: What one operation calls, by plugin and direction (the library function or method name).
CALLS = {
    "openssl": {"sign": {"sign"}, "verify": {"verify"}, "keygen": {"generate", "generate_private_key"},
                "derive": {"exchange"}, "encaps": {"encapsulate"}, "decaps": {"decapsulate"},
                "encrypt": {"encrypt"}, "decrypt": {"decrypt"}},
    "pycryptodome": {"sign": {"sign"}, "verify": {"verify"}, "keygen": {"_key_pair", "generate"},
                     "derive": {"key_agreement", "PBKDF2", "scrypt", "bcrypt", "HKDF"},
                     "encaps": {"_encaps"}, "decaps": {"_decaps"}, "encrypt": {"encrypt"},
                     "decrypt": {"decrypt"}},
    "hashlib": {"derive": {"pbkdf2_hmac", "scrypt"}},
}


def _name(call):
    while isinstance(call, partial):
        call = call.func
    return call.__name__


def test_supported_lists_the_kinds_each_library_has_here():
    names = {p: {a.name for a in UNSIZED if a.name in PLUGINS[p].supported()} for p in PLUGINS}
    everything = {a.name for a in UNSIZED}
    classical = {"rsa2048", "rsa3072", "rsa4096", "rsa2048-pkcs1", "rsa2048-oaep", "ecdsa-p256",
                 "pbkdf2-sha256-i600000", "scrypt-n16384-r8-p1", "hkdf-sha256"}
    assert classical <= names["openssl"] and classical - {"ecdsa-p384"} <= names["pycryptodome"]
    assert "bcrypt-c12" not in names["openssl"] and "argon2id-m65536-t3-p4" not in names["pycryptodome"]
    assert names["afalg"] == names["devcrypto"] == set()
    needs(("openssl", "ml-dsa-87"), ("openssl", "argon2id"), ("pycryptodome", "ml-kem-768"))
    # pyca/cryptography 50 with its OpenSSL 3.5+/4: all but bcrypt; PyCryptodome 4.4: all
    # but Argon2; hashlib: PBKDF2 and scrypt; the kernel plugins: none.
    assert names["openssl"] == everything - {"bcrypt-c12", "ml-kem-512"}  # pyca: 768, 1024
    assert names["pycryptodome"] == everything - {"argon2id-m65536-t3-p4"}
    assert names["hashlib"] == {"pbkdf2-sha256-i600000", "scrypt-n16384-r8-p1"}
    assert names["afalg"] == names["devcrypto"] == set()


@pytest.mark.parametrize("plugin, reason", [("afalg", AFALG_NO_PKEY), ("devcrypto", DEVCRYPTO_NO_PKEY)])
@pytest.mark.parametrize("name", ["ed25519", "ml-kem-768", "rsa2048-oaep", "x25519", "scrypt"])
def test_kernel_plugins_refuse_every_kind_without_a_size_with_the_reason(plugin, reason, name):
    with pytest.raises(Unsupported) as info:
        PLUGINS[plugin].open(catalog.lookup(name), b"")
    assert str(info.value) == reason


def test_the_kernel_reasons_name_the_interfaces():
    assert AFALG_NO_PKEY.startswith("the kernel's AF_ALG offers no public-key or "
                                    "password-hashing interface to user space: ")
    assert "algif_akcipher" in AFALG_NO_PKEY
    assert "CIOCKEY" in DEVCRYPTO_NO_PKEY and "FreeBSD removed" in DEVCRYPTO_NO_PKEY


@pytest.mark.parametrize("plugin, name, why", [
    ("hashlib", "ed25519", "hashlib has no ed25519: of the public-key kinds and KDFs it has "
                           "PBKDF2 (pbkdf2_hmac) and scrypt (where its OpenSSL has it) only"),
    ("hashlib", "scrypt-n4194304-r32-p1", "scrypt-n4194304-r32-p1 needs 17180930048 bytes of "
                                          "memory; hashlib.scrypt takes at most 2147483647 (maxmem)"),
])
def test_hashlib_refuses_with_the_reason(plugin, name, why):
    with pytest.raises(Unsupported) as info:
        PLUGINS[plugin].open(catalog.lookup(name), b"")
    assert str(info.value) == why


def test_pyca_without_bcrypt_and_pycryptodome_without_argon2_say_so():
    needs(("openssl", "ed25519"))
    import Crypto
    import cryptography

    with pytest.raises(Unsupported) as info:
        PLUGINS["openssl"].open(catalog.lookup("bcrypt"), b"")
    assert str(info.value) == (f"pyca/cryptography {cryptography.__version__} (or the OpenSSL "
                               "it runs on) has no bcrypt-c12")
    with pytest.raises(Unsupported) as info:
        PLUGINS["pycryptodome"].open(catalog.lookup("argon2id"), b"")
    assert str(info.value) == f"PyCryptodome {Crypto.__version__} has no argon2id-m65536-t3-p4 (it has no Argon2)"


def test_a_library_without_a_module_lists_nothing_of_it(monkeypatch):
    needs(("openssl", "ml-kem-768"), ("pycryptodome", "ml-dsa-65"), ("pycryptodome", "bcrypt"))
    # what the minimum-versions job meets: cryptography 35 has no ML-KEM, PyCryptodome 3.7.1
    # no EdDSA, no DH.key_agreement, no ML-KEM and no bcrypt
    for module in ("cryptography.hazmat.primitives.asymmetric.mlkem", "Crypto.Signature.eddsa",
                   "Crypto.Protocol.DH", "Crypto.PublicKey.MLKEM"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails ...
        package, _, name = module.rpartition(".")
        monkeypatch.delattr(sys.modules[package], name, raising=False)  # ... also from its package
    monkeypatch.delattr("Crypto.Protocol.KDF.bcrypt")
    assert {"ml-kem-768", "ml-kem-1024"} & openssl_pkey.supported_names() == set()
    assert "ed25519" in openssl_pkey.supported_names()
    left = pycryptodome_pkey.supported_names()
    assert {"ed25519", "ed448", "x25519", "x448", "ecdh-p256", "ml-kem-768", "ml-kem-1024",
            "bcrypt-c12"} & left == set()
    assert {"rsa2048", "ecdsa-p256", "ml-dsa-65", "pbkdf2-sha256-i600000"} <= left
    with pytest.raises(Unsupported, match=r"has no ml-kem-768$"):
        openssl_pkey.open_context(catalog.lookup("ml-kem-768"), b"")


@pytest.mark.parametrize("name", [a.name for a in UNSIZED
                                  if a.name in PLUGINS["openssl"].supported()
                                  and a.name in PLUGINS["pycryptodome"].supported()
                                  and a.name not in ("rsa3072", "rsa4096")])
def test_one_shot_methods_interoperate_between_openssl_and_pycryptodome(name):
    alg = _cheap(catalog.lookup(name))
    mine, theirs = _context("openssl", alg), _context("pycryptodome", alg)
    if alg.kind == catalog.Kind.SIGNATURE:
        sig = mine.sign(pkey_checks.MESSAGE)
        assert theirs.verify(mine.public_key(), pkey_checks.MESSAGE, sig) is True
        assert mine.verify(theirs.public_key(), pkey_checks.MESSAGE,
                           theirs.sign(pkey_checks.MESSAGE)) is True
        assert theirs.verify(mine.public_key(), pkey_checks.MESSAGE, sig[:-1]) is False
    elif alg.kind == catalog.Kind.KEX:
        assert mine.agree(theirs.public_key()) == theirs.agree(mine.public_key())
    elif alg.kind == catalog.Kind.KEM:
        ct, secret = mine.encapsulate(theirs.public_key())
        assert theirs.decapsulate(ct) == secret and len(secret) == 32
    elif alg.kind == catalog.Kind.PKE:
        assert theirs.private_decrypt(mine.public_encrypt(theirs.public_key(), b"m" * 32)) == b"m" * 32
    else:
        key = mine.derive_key(pkey_checks.PASSWORD, pkey_checks.SALT)
        assert key == theirs.derive_key(pkey_checks.PASSWORD, pkey_checks.SALT)
        assert len(key) == 32


def test_hashlib_kdfs_equal_openssls():
    for name in ("pbkdf2-sha256-i1000", "scrypt-n1024-r8-p2"):
        alg = catalog.lookup(name)
        assert (_context("hashlib", alg).derive_key(b"pw", b"salt" * 4)
                == _context("openssl", alg).derive_key(b"pw", b"salt" * 4))


@pytest.mark.parametrize("plugin, alg, op", CELLS, ids=[f"{p}-{a.name}-{o}" for p, a, o in CELLS])
def test_a_runner_runs_count_operations_of_its_direction(plugin, alg, op, monkeypatch):
    calls = []

    def counting_loop(call, *args):
        def counted(*a, **k):
            calls.append(_name(call))
            return call(*a, **k)
        return base.call_loop(counted, *args)

    for module in (openssl_pkey, pycryptodome_pkey, hashlib_plugin):
        monkeypatch.setattr(module, "call_loop", counting_loop)
    runner = _context(plugin, alg).runner(_work(alg, op))
    runner(3)
    assert len(calls) == 3
    assert set(calls) <= CALLS[plugin][op], calls


@pytest.mark.parametrize("name, module, cls", [
    ("pbkdf2-sha256-i1000", "pbkdf2", "PBKDF2HMAC"), ("scrypt-n1024-r8-p1", "scrypt", "Scrypt"),
    ("argon2id-m64-t1-p1", "argon2", "Argon2id"), ("hkdf-sha256", "hkdf", "HKDF")])
def test_openssl_kdf_runner_makes_one_kdf_object_per_derivation(name, module, cls, monkeypatch):
    import importlib

    needs(("openssl", name))
    mod = importlib.import_module(f"cryptography.hazmat.primitives.kdf.{module}")
    real, made = getattr(mod, cls), []

    def counting(*args, **kwargs):
        made.append(kwargs["salt"] if "salt" in kwargs else
                    args[2] if cls in ("PBKDF2HMAC", "HKDF") else args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(mod, cls, counting)
    alg = catalog.lookup(name)
    ctx = PLUGINS["openssl"].open(alg, b"")
    ctx.runner(_work(alg, "derive"))(4)
    assert made == [pkey_checks.SALT] * 4


def test_call_loop_calls_count_times_with_its_arguments():
    seen = []
    base.call_loop(lambda *a: seen.append(a), 1, b"x")(5)
    base.call_loop(lambda: seen.append(()))(2)
    assert seen == [(1, b"x")] * 5 + [()] * 2


def test_pycryptodome_bcrypt_key_is_the_23_byte_hash_of_its_crypt_string():
    needs(("pycryptodome", "bcrypt"))
    crypt = b"$2a$04$VYAclAMpaXY/oqAo9yUpkuWmoYywaPzyhu56HxXpVltnBIfmO9tgu"
    assert pycryptodome_pkey.bcrypt_hash(crypt).hex() == "628a9ad32711d748f0efc27366b5e7be90ca86843fbe2c"
    ctx = PLUGINS["pycryptodome"].open(catalog.lookup("bcrypt-c4"), b"")
    with pytest.raises(Unsupported, match="^PyCryptodome's bcrypt refuses a password with a zero byte$"):
        ctx.derive_key(b"pass\0word", pkey_checks.SALT)
    with pytest.raises(Unsupported, match="^bcrypt-c4 takes no secret or associated data in PyCryptodome$"):
        ctx.derive_key(b"password", pkey_checks.SALT, secret=b"k")


def test_contexts_load_the_standards_private_keys():
    needs(("pycryptodome", "ed25519"))
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    for plugin in ("openssl", "pycryptodome"):
        ctx = PLUGINS[plugin].open(catalog.lookup("ed25519"), b"")
        ctx.load_private(seed)
        assert ctx.public_key().hex() == ("d75a980182b10ab7d54bfed3c964073a"
                                          "0ee172f3daa62325af021a68f707511a")
    # RSA and ECDSA take DER PKCS#8: a key from one plugin loads in the other
    from cryptography.hazmat.primitives import serialization as s

    ossl = PLUGINS["openssl"].open(catalog.lookup("ecdsa-p256"), b"")
    der = ossl._priv.private_bytes(s.Encoding.DER, s.PrivateFormat.PKCS8, s.NoEncryption())
    other = PLUGINS["pycryptodome"].open(catalog.lookup("ecdsa-p256"), b"")
    other.load_private(der)
    assert other.public_key() == ossl.public_key() and len(ossl.public_key()) == 65
