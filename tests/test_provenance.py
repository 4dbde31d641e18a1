"""Provenance: which code did each algorithm (CryptoPlugin.implementation), in --qcrypto-list,
in saved results and in the legend of a joined report.

The expected texts come from this Python's own facts, asked another way than the
plugin asks them (``hashlib.blake2b.__module__``, the name of ``hashlib.sha256``,
``ssl.OPENSSL_VERSION``), never from version strings written here.
"""

import hashlib
import json
import ssl
import sys

import pytest

from conftest import FAST
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.output import report
from pytest_qcrypto.results import store as results
from pytest_qcrypto.backends import (
    CryptoPlugin,
    Workload,
    builtin_plugins,
    describe_implementations,
    implementation_text,
)
from pytest_qcrypto.backends import hashlib as hashlib_backend, openssl as openssl_backend
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.backends.openssl import OpenSSLPlugin
from pytest_qcrypto.results.store import Result, ResultsError, ResultsFile

ALG = catalog.lookup

#: This machine's OpenSSL as hashlib links it: ``OpenSSL 3.0.19`` from "OpenSSL 3.0.19 27 Jan 2026".
OPENSSL = "OpenSSL " + ssl.OPENSSL_VERSION.split()[1]
BLAKE2 = "CPython's _blake2"


def test_this_python_serves_blake2b_itself_and_sha256_from_openssl():
    """The facts the expected texts below rest on (CPython builds BLAKE2 itself, always)."""
    assert hashlib.blake2b.__module__ == "_blake2"
    assert hashlib.sha256.__module__ == "_hashlib" and hashlib.sha256.__name__ == "openssl_sha256"


def test_hashlib_blake2b_and_sha256_name_different_code():
    plugin = HashlibPlugin()
    assert plugin.implementation(ALG("blake2b512")) == BLAKE2
    assert plugin.implementation(ALG("blake2s256")) == "CPython's _blake2"
    assert plugin.implementation(ALG("sha256")) == OPENSSL
    assert plugin.implementation(ALG("sha512-256")) == OPENSSL  # hashlib.new only, no constructor


def test_hashlib_names_cpythons_own_module_wherever_hashlib_new_gives_one(monkeypatch):
    """A build whose SHA-3 is CPython's _sha3 (no OpenSSL SHA-3): told by the object's type."""
    sha3 = type("sha3_256", (), {"__module__": "_sha3"})
    monkeypatch.setattr(hashlib_backend.hashlib, "new", lambda name: sha3())
    assert HashlibPlugin().implementation(ALG("sha3-256")) == "CPython's _sha3"


def test_hashlib_without_an_ssl_module_says_the_version_is_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "ssl", None)  # import ssl raises ImportError
    assert HashlibPlugin().implementation(ALG("sha256")) == \
        "OpenSSL (version unknown: no ssl module)"


def test_pycryptodome_and_openssl_name_their_library():
    import Crypto
    import cryptography
    from cryptography.hazmat.backends.openssl import backend

    plugins = {p.name: p for p in builtin_plugins()}
    assert plugins["pycryptodome"].implementation(ALG("sha256")) == \
        f"PyCryptodome {Crypto.__version__} (its own C code)"
    pyca = " ".join(backend.openssl_version_text().split()[:2])
    assert plugins["openssl"].implementation(ALG("sha256")) == \
        f"{pyca} via cryptography {cryptography.__version__}"
    assert plugins["openssl"].implementation(ALG("des-ede3-cbc")) == \
        f"{pyca} via cryptography {cryptography.__version__} (pyca's decrepit TripleDES)"


def test_kernel_plugins_name_the_kernel():
    import os

    plugins = {p.name: p for p in builtin_plugins()}
    assert plugins["afalg"].implementation(ALG("aes-128-cbc")) == \
        f"the Linux {os.uname().release} kernel's crypto drivers"
    assert plugins["devcrypto"].implementation(ALG("sha256")) == \
        "the kernel's crypto drivers behind /dev/crypto"


class Versioned(CryptoPlugin):
    name = "thirdparty"
    library = "libthird"

    def version(self):
        return "libthird 2.1"


class Unversioned(CryptoPlugin):
    name = "bare"
    library = "libbare"


class Broken(CryptoPlugin):
    name = "broken"
    library = "libbroken"

    def implementation(self, algorithm):
        raise RuntimeError("no idea")


def test_a_third_party_plugin_inherits_a_default():
    assert Versioned().implementation(ALG("sha256")) == "libthird 2.1"
    assert Unversioned().implementation(ALG("sha256")) == "libbare"  # no version: the library
    assert implementation_text(Broken(), "sha256") == "unknown (RuntimeError: no idea)"


def test_implementations_are_grouped_with_the_largest_group_last():
    assert describe_implementations({"md5": "O", "blake2b512": "C", "sha256": "O",
                                     "blake2s256": "C", "sha1": "O"}) == \
        "blake2b512, blake2s256 from C; the others from O"
    assert describe_implementations({"md5": "O", "sha1": "O"}) == "all from O"
    assert describe_implementations({"a": "X", "b": "Y"}) == "b from Y; the others from X"
    assert describe_implementations({}) == ""


def test_list_shows_implementations_per_plugin(pytester):
    r = pytester.runpytest("--qcrypto-list", "-p", "no:cacheprovider")
    assert r.ret == 0
    hashlib_lines = r.stdout.str().split("\nhashlib ", 1)[1].split("\npycryptodome ", 1)[0]
    assert f"  implementations: blake2b512, blake2s256 from {BLAKE2}; the others from " \
           f"{OPENSSL}" in hashlib_lines.splitlines()


# -- openssl on cryptography before 47 (no encrypt_into / decrypt_into) ---------------------------


class OldAead:
    """pyca's AESGCM as cryptography 46 has it: encrypt/decrypt only, each call recorded."""

    def __init__(self, aead):
        self._aead, self.calls = aead, []

    def encrypt(self, nonce, data, aad):
        self.calls.append(("encrypt", nonce))
        return self._aead.encrypt(nonce, data, aad)

    def decrypt(self, nonce, data, aad):
        self.calls.append(("decrypt", nonce))
        return self._aead.decrypt(nonce, data, aad)


def test_aead_runner_works_without_encrypt_into():
    key = bytes(range(16))
    ctx = OpenSSLPlugin().open(ALG("aes-128-gcm"), key)
    old = ctx._aead = OldAead(ctx._aead)
    nonces = (b"\x01" * 12, b"\x02" * 12)
    ctx.runner(Workload(b"x" * 64, nonces=nonces))(3)
    assert old.calls == [("encrypt", nonces[0]), ("encrypt", nonces[1]), ("encrypt", nonces[0])]
    sealed = ctx.encrypt(nonces[0], b"x" * 64)
    old.calls.clear()
    ctx.runner(Workload(b"x" * 64, nonces=nonces, decrypt=True, ciphertext=sealed))(2)
    assert old.calls == [("decrypt", nonces[0])] * 2  # and the tag verified: no InvalidTag


def test_openssl_implementation_says_when_the_aead_loop_allocates(monkeypatch):
    monkeypatch.setattr(openssl_backend, "_has_aead_into", lambda: False)
    text = OpenSSLPlugin().implementation(ALG("chacha20-poly1305"))
    assert text.endswith(" (timed through encrypt()/decrypt(): a new bytes object per "
                         "message; encrypt_into needs cryptography 47)")
    assert "(" not in OpenSSLPlugin().implementation(ALG("aes-128-cbc"))


# -- saved results and the report legend --------------------------------------------------------


def test_saved_results_record_each_measured_algorithms_implementation(pytester):
    r = pytester.runpytest("--qcrypto-plugin", "hashlib", "--qcrypto-digest", "sha256,blake2b512",
                           "--qcrypto-size", "16", *FAST, "-p", "no:cacheprovider",
                           "--qcrypto-save", "out.json")
    assert r.ret == 0
    path = pytester.path / "out.json"
    entry = json.loads(path.read_text())["plugins"]["hashlib"]
    assert entry["implementations"] == {"sha256": OPENSSL, "blake2b512": BLAKE2}
    loaded = results.load(path)
    assert loaded.plugins["hashlib"]["implementations"] == entry["implementations"]
    again = results.load(results.save(pytester.path / "again.json", loaded))
    assert again.plugins == loaded.plugins and again.schema_version == 2


def test_a_kernel_driver_is_named_beside_the_implementation():
    class Kernel(Versioned):
        def implementation(self, algorithm):
            return "the kernel's crypto drivers"

    class Sel:
        canonical, plugin = "thirdparty", Kernel()

    measured = [Result("sha256", "thirdparty", 16, "digest", 1.0, driver="sha256-ni"),
                Result("sha256", "thirdparty", 64, "digest", 1.0, driver="sha256-generic"),
                Result("md5", "thirdparty", 16, "digest", 1.0)]
    entry = results.plugin_entries(["thirdparty"], lambda typed: Sel, measured)["thirdparty"]
    assert entry["implementations"] == {
        "sha256": "the kernel's crypto drivers: driver sha256-generic, sha256-ni",
        "md5": "the kernel's crypto drivers"}
    assert entry["version"] == "libthird 2.1"


def test_files_without_implementations_still_load(tmp_path):
    doc = {"format": "pytest-qcrypto results", "schema_version": 2, "complete": True,
           "machine": {}, "plugins": {"hashlib": {"canonical": "hashlib", "version": "v"}},
           "results": [{"algorithm": "sha256", "plugin": "hashlib", "size": 16,
                        "direction": "digest", "bytes_per_second": 1.6e5, "count": 10,
                        "rounds_s": [0.001]}]}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    assert results.load(tmp_path / "old.json").plugins == doc["plugins"]


@pytest.mark.parametrize("value", [["sha256"], {"sha256": 3}, "OpenSSL"])
def test_implementations_of_the_wrong_type_are_refused(tmp_path, value):
    doc = {"schema_version": 2, "complete": True, "machine": {}, "results": [],
           "plugins": {"hashlib": {"canonical": "hashlib", "implementations": value}}}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=r"bad\.json: plugins\.hashlib\.implementations must "
                                           r"be an object of strings, not "):
        results.load(tmp_path / "bad.json")


def _file(name, implementations):
    entry = {"canonical": "hashlib", "library": "Python hashlib", "version": "v"}
    if implementations is not None:
        entry["implementations"] = implementations
    return ResultsFile([Result("sha256", "hashlib", 16, "digest", 1e6, 10, (0.001,))],
                       {"cores": 2}, {"hashlib": entry}, path=name)


def test_legend_names_implementations_that_differ_between_files():
    a = _file("a.json", {"sha256": "OpenSSL 3.0.19", "blake2b512": BLAKE2,
                         "blake2s256": BLAKE2})
    b = _file("b.json", {"sha256": "OpenSSL 3.0.19", "blake2b512": "OpenSSL 3.5.1",
                         "blake2s256": "OpenSSL 3.5.1"})
    old = _file("old.json", None)  # written before implementations were recorded
    _, legend = report.joined_tables([a, b, old], ["a.json", "b.json", "old.json"])
    assert legend[-2:] == [
        "differences:",
        f"  hashlib blake2b512, blake2s256: a={BLAKE2}, b=OpenSSL 3.5.1"]
    _, legend = report.joined_tables([a, old], ["a.json", "old.json"])
    assert legend[-1] == "same fingerprint, plugin versions and settings on every machine"


def test_a_plugin_entry_is_text_whatever_version_returns():
    """Found by a user trial: a version() returning 3 was saved as the number 3, and one that
    raised lost the plugin's declared library."""
    from pytest_qcrypto.backends import CryptoPlugin

    class Odd(CryptoPlugin):
        name, library = "odd", "libodd"

        def __init__(self, answer):
            self.answer = answer

        def version(self):
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    def entry(answer):
        plugin = Odd(answer)
        sel = type("Sel", (), {"canonical": "odd", "plugin": plugin})
        return results.plugin_entries(["odd"], lambda typed: sel)["odd"]

    assert entry(3)["version"] == "3" and entry(3)["library"] == "libodd"
    broken = entry(RuntimeError("no version file"))
    assert broken["version"] == "unknown (RuntimeError: no version file)"
    assert broken["library"] == "libodd" and broken["canonical"] == "odd"
