"""MACs (HMAC, AES-CMAC, Poly1305) and the 64-bit CBC ciphers in the software plugins."""

import hashlib
import hmac
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FAST
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends import Unsupported, Workload, builtin_plugins
from pytest_qcrypto.backends import hashlib as hashlib_backend, openssl as openssl_backend
from pytest_qcrypto.backends import pycryptodome as pycryptodome_backend
from pytest_qcrypto.pytest_side.run import list_plugins
from pytest_qcrypto.measure.registry import Registry

REGISTRY = Registry(builtin_plugins())
HMACS = ["hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512"]
#: Which software plugin has which MAC and 64-bit CBC cipher (the README's table).
EXPECTED = {
    "openssl": set(HMACS) | {"cmac-aes-128", "poly1305", "bf-cbc", "cast5-cbc"},
    "hashlib": set(HMACS),
    "pycryptodome": set(HMACS) | {"cmac-aes-128", "des-cbc", "bf-cbc", "cast5-cbc"},
}
NEW = set(HMACS) | {"cmac-aes-128", "poly1305", "des-cbc", "bf-cbc", "cast5-cbc"}


def plugin(name):
    return REGISTRY.resolve(name).plugin


def poly1305_reference(key, msg):
    """RFC 8439 section 2.5.1, in Python: the independent answer for Poly1305."""
    r = int.from_bytes(key[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
    s, p, acc = int.from_bytes(key[16:], "little"), (1 << 130) - 5, 0
    for i in range(0, len(msg), 16):
        acc = (acc + int.from_bytes(msg[i:i + 16] + b"\x01", "little")) * r % p
    return ((acc + s) % (1 << 128)).to_bytes(16, "little")


def reference(name, key, msg):
    alg = catalog.lookup(name)
    if name == "poly1305":
        return poly1305_reference(key, msg)
    if name == "cmac-aes-128":
        from Crypto.Cipher import AES
        from Crypto.Hash import CMAC

        return CMAC.new(key, msg, ciphermod=AES).digest()
    return hmac.digest(key, msg, alg.family)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_plugin_has_exactly_its_macs_and_new_ciphers(name):
    assert REGISTRY.supported(plugin(name)) & NEW == EXPECTED[name]


PAIRS = [(p, a) for p, algs in EXPECTED.items() for a in sorted(algs)
         if catalog.lookup(a).is_of((catalog.MAC,))]


@pytest.mark.parametrize("name, algorithm", PAIRS, ids=[f"{p}-{a}" for p, a in PAIRS])
@settings(max_examples=25, deadline=None)
@given(key=st.binary(min_size=1, max_size=200), msg=st.binary(max_size=300))
def test_mac_agrees_with_an_independent_implementation(name, algorithm, key, msg):
    alg = catalog.lookup(algorithm)
    if not algorithm.startswith("hmac-"):
        key = (key * alg.key_size)[:alg.key_size]  # CMAC and Poly1305 take fixed keys
    ctx = plugin(name).open(alg, key)
    assert ctx.mac(msg) == ctx.mac(msg) == reference(algorithm, key, msg)


class _Counting:
    """A stand-in keyed MAC object: counts copies, updates and finalizations."""

    def __init__(self, log):
        self.log = log

    def copy(self):
        self.log.append("copy")
        return _Counting(self.log)

    def update(self, data):
        self.log.append(len(data))

    def finalize(self):
        self.log.append("final")

    digest = finalize


@pytest.mark.parametrize("name, algorithm", [
    ("openssl", "hmac-sha256"), ("openssl", "cmac-aes-128"), ("hashlib", "hmac-sha1"),
    ("pycryptodome", "hmac-sha512"), ("pycryptodome", "cmac-aes-128")])
def test_runner_does_count_fresh_keyed_macs_of_the_buffer(name, algorithm):
    alg = catalog.lookup(algorithm)
    ctx = plugin(name).open(alg, bytes(alg.key_size))
    log = []
    ctx._pristine = _Counting(log)
    ctx.runner(Workload(bytes(48)))(3)
    assert log == ["copy", 48, "final"] * 3


def test_openssl_poly1305_runner_tags_each_message_under_the_key():
    alg = catalog.lookup("poly1305")
    key = bytes(range(32))
    ctx = plugin("openssl").open(alg, key)
    calls = []
    ctx._tag = lambda k, buf: calls.append((k, len(buf)))
    ctx.runner(Workload(bytes(64)))(4)
    assert calls == [(key, 64)] * 4


@pytest.mark.parametrize("name, algorithm", PAIRS, ids=[f"{p}-{a}" for p, a in PAIRS])
def test_running_leaves_the_keyed_state_pristine(name, algorithm):
    alg = catalog.lookup(algorithm)
    key, data = bytes(range(1, alg.key_size + 1)), b"\x5a" * 100
    ctx = plugin(name).open(alg, key)
    ctx.runner(Workload(data))(5)
    assert ctx.mac(b"abc") == reference(algorithm, key, b"abc")


def test_openssl_refuses_single_des_saying_why():
    assert "des-cbc" not in REGISTRY.supported(plugin("openssl"))
    with pytest.raises(Unsupported) as e:
        plugin("openssl").open(catalog.lookup("des-cbc"), bytes(8))
    assert str(e.value) == (
        "pyca/cryptography has no single DES: a TripleDES with one 8-byte key repeated "
        "computes DES at three times its cost, so des-cbc is not measured here "
        "(pycryptodome has it)")


def test_pycryptodome_refuses_poly1305_saying_why():
    with pytest.raises(Unsupported) as e:
        plugin("pycryptodome").open(catalog.lookup("poly1305"), bytes(32))
    assert str(e.value) == pycryptodome_backend.NO_RAW_POLY1305
    assert "RFC 8439 section 2.5" in str(e.value)


@pytest.mark.parametrize("algorithm, word", [("cmac-aes-128", "MAC"), ("aes-128-cbc", "cipher"),
                                             ("aes-128-gcm", "AEAD")])
def test_hashlib_refuses_what_is_not_a_digest_or_hmac(algorithm, word):
    with pytest.raises(Unsupported) as e:
        plugin("hashlib").open(catalog.lookup(algorithm), bytes(16))
    assert str(e.value) == f"hashlib has digests and HMACs only, not the {word} {algorithm}"


def test_implementations_of_macs_and_decrepit_ciphers():
    ossl = plugin("openssl")
    assert ossl.implementation(catalog.lookup("bf-cbc")).endswith("(pyca's decrepit Blowfish)")
    assert ossl.implementation(catalog.lookup("cast5-cbc")).endswith("(pyca's decrepit CAST5)")
    assert "decrepit" not in ossl.implementation(catalog.lookup("hmac-sha256"))
    assert plugin("pycryptodome").implementation(catalog.lookup("cmac-aes-128")).endswith(
        "(Python HMAC/CMAC over its own C code)")
    # hmac.new over an OpenSSL digest is OpenSSL's HMAC (CPython's _hashlib.hmac_new)
    assert type(hashlib.new("sha256")).__module__ == "_hashlib"
    assert plugin("hashlib").implementation(catalog.lookup("hmac-sha256")) == \
        hashlib_backend.openssl_name()


def test_list_names_the_macs_of_each_plugin():
    lines = list_plugins(REGISTRY)
    start = lines.index("hashlib (aliases: python): available")
    assert f"  MACs: {', '.join(HMACS)}" in lines[start:start + 6]
    assert ("  MACs: " + ", ".join(HMACS + ["cmac-aes-128", "poly1305"])) in lines


def test_the_mac_table_after_rfc_4231_checks(pytester):
    r = pytester.runpytest("--qcrypto-mac", "hmac-sha256", "--qcrypto-plugin", "openssl",
                           "--qcrypto-plugin", "hashlib", "--qcrypto-plugin", "pycryptodome",
                           "--qcrypto-size", "16,1024", "-p", "no:cacheprovider", *FAST)
    r.assert_outcomes(passed=6)
    out = r.stdout.lines
    at = out.index("Benchmark results for 'hmac-sha256' MAC (KiB/s):")
    assert out[at + 1].split() == ["plugin", "16", "1024"]
    assert [line.split()[0] for line in out[at + 2:at + 5]] == ["openssl", "hashlib",
                                                                "pycryptodome"]
    assert all(re.fullmatch(r"\d+\.\d\d\??", cell) for line in out[at + 2:at + 5]
               for cell in line.split()[1:])


BROKEN_HMAC = '''
import hmac
from pytest_qcrypto.backends import Context, CryptoPlugin

class Ctx(Context):
    def mac(self, data):
        return hmac.digest(self.key[:64], data, "sha256")  # truncates keys over a block
    def runner(self, work):
        return lambda count: None

class Truncating(CryptoPlugin):
    name = "truncating"
    library = "a plugin with a key-length bug"
    def supported(self):
        return frozenset({"hmac-sha256"})
    def open(self, algorithm, key, variant=None):
        return Ctx(algorithm, key)

def pytest_qcrypto_plugins():
    return [Truncating()]
'''


def test_a_wrong_mac_fails_its_item_naming_the_rfc_vector(pytester):
    pytester.makeconftest(BROKEN_HMAC)
    r = pytester.runpytest("--qcrypto-mac", "hmac-sha256", "--qcrypto-plugin", "truncating",
                           "--qcrypto-size", "16", "-p", "no:cacheprovider", *FAST)
    r.assert_outcomes(failed=1)
    # RFC 4231 cases 1-4 have keys of 25 bytes or less: case 6 (131-byte key) catches it
    assert ("truncating gave a wrong answer for hmac-sha256 MAC on vector "
            "'RFC 4231 section 4.7 test case 6'") in r.stdout.str()


def qcrypto(pytester, *args):
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", *args)


def test_speed_dash_m_measures_a_mac(pytester):
    r = qcrypto(pytester, "speed", "-M", "cmac(aes)", "-P", "openssl", "-P", "pycryptodome",
                "-v", "--qcrypto-size", "16", *FAST)
    assert r.ret == 0, r.stderr.str()
    out = r.outlines
    assert out[0] == ("Benchmarking 'cmac-aes-128' MAC on the following plugin(s): "
                      "openssl, pycryptodome")
    assert re.fullmatch(r"executed \d+ MACs of size 16 bytes in \d+\.\d\d secs", out[2]), out[2]
    assert "Benchmark results for 'cmac-aes-128' MAC (KiB/s):" in out


@pytest.mark.parametrize("args, message", [
    (("-M", "hmac-sha265"),
     "ERROR: qcrypto speed: -M: unknown MAC 'hmac-sha265'; did you mean hmac-sha256, "
     "hmac-sha512, hmac-sha1? Valid MACs: hmac-md5, hmac-sha1, hmac-sha256, hmac-sha384, "
     "hmac-sha512, cmac-aes-128, poly1305, or all (see qcrypto list)"),
    (("-M", "sha256"), "ERROR: qcrypto speed: -M: unknown MAC 'sha256'; sha256 is a digest: "
                       "use -D sha256. Valid MACs: "),
    (("-D", "hmac-sha1"), "ERROR: qcrypto speed: -D: unknown digest 'hmac-sha1'; hmac-sha1 is "
                          "a MAC: use -M hmac-sha1. Valid digests: "),
    (("-M", "poly1305", "-C", "bf-cbc"),
     "ERROR: qcrypto speed: argument -C: not allowed with argument -M"),
])
def test_speed_dash_m_usage_errors(capsys, args, message):
    from pytest_qcrypto.commands import qcrypto as cli

    assert cli.main(["speed", *args]) == pytest.ExitCode.USAGE_ERROR
    assert capsys.readouterr().err.startswith(message)


def test_pytest_names_the_mac_option_for_a_mac(pytester):
    r = pytester.runpytest("--qcrypto-cipher", "hmac-sha256", "-p", "no:cacheprovider")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("hmac-sha256 is a MAC: use --qcrypto-mac hmac-sha256." in r.stderr.str())


@settings(max_examples=20, deadline=None)
@given(key=st.binary(min_size=16, max_size=16), iv=st.binary(min_size=8, max_size=8),
       blocks=st.integers(1, 16))
def test_openssl_and_pycryptodome_agree_on_blowfish_and_cast5(key, iv, blocks):
    data = bytes(range(256))[:8 * blocks]
    for algorithm in ("bf-cbc", "cast5-cbc"):
        alg = catalog.lookup(algorithm)
        ours, theirs = plugin("openssl").open(alg, key), plugin("pycryptodome").open(alg, key)
        sealed = ours.encrypt(iv, data)
        assert sealed == theirs.encrypt(iv, data) != data
        assert ours.decrypt(iv, sealed) == theirs.decrypt(iv, sealed) == data


def test_pycryptodome_des_is_pycas_tripledes_with_the_key_repeated():
    try:  # cryptography 43 and later; before, in primitives (the minimum-versions CI job)
        from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    except ImportError:
        from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    key, iv, data = bytes.fromhex("133457799bbcdff1"), bytes(range(8)), bytes(range(64))
    enc = Cipher(TripleDES(key * 3), modes.CBC(iv)).encryptor()
    ctx = plugin("pycryptodome").open(catalog.lookup("des-cbc"), key)
    assert ctx.encrypt(iv, data) == enc.update(data) + enc.finalize()
