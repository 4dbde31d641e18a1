"""Issue 26: ML-KEM-512 (FIPS 203, PyCryptodome has it; pyca leaves it out) with its
known answer."""

import hashlib
import sys

import pytest

from conftest import FAST
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.pycryptodome import PyCryptodomePlugin
from pytest_qcrypto.checks import pkey_checks
from pytest_qcrypto.checks.known_answers import KnownAnswerError
from pytest_qcrypto.measure import bench
from pytest_qcrypto.measure.registry import Selection


def qcrypto(pytester, *args):
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", *args)


def test_ml_kem_512_is_in_the_catalog_with_its_wycheproof_vector():
    alg = catalog.lookup("ML-KEM-512")
    assert (alg.name, alg.kind, alg.curve) == ("ml-kem-512", catalog.KEM, "ML-KEM-512")
    (vector,) = pkey_checks.vectors(alg)
    assert vector["name"].endswith("mlkem_512_keygen_seed_test.json tcId 1")
    assert vector["public_sha256"] == ("852523749efd2b78d1074e5de629060312cd9397933a19ddb7482cfd"
                                       "a5e92614")


def test_pycryptodome_makes_the_fips_203_key_from_the_seed():
    (vector,) = pkey_checks.vectors(catalog.lookup("ml-kem-512"))
    with bench.open_context(Selection("pycryptodome", PyCryptodomePlugin()), "ml-kem-512") as ctx:
        ctx.context.load_private(bytes.fromhex(vector["seed"]))
        public = ctx.context.public_key()
    assert len(public) == 800  # FIPS 203 table 3: ek of ML-KEM-512 is 800 bytes
    assert public[:16].hex() == vector["public_prefix"]
    assert hashlib.sha256(public).hexdigest() == vector["public_sha256"]


def test_a_wrong_ml_kem_512_vector_fails_the_check(monkeypatch):
    real = pkey_checks._vectors()
    wrong = {**real, "seeded_keys": [dict(v, public_sha256="00" * 32) if
                                     v["algorithm"] == "ml-kem-512" else v
                                     for v in real["seeded_keys"]]}
    monkeypatch.setattr(pkey_checks, "_vectors", lambda: wrong)
    with bench.open_context(Selection("pycryptodome", PyCryptodomePlugin()), "ml-kem-512") as ctx:
        with pytest.raises(KnownAnswerError):
            ctx.check()


def test_speed_measures_ml_kem_512_in_pycryptodome(pytester):
    r = qcrypto(pytester, "speed", "-S", "ml-kem-512", "-P", "pycryptodome", *FAST)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0] == "Benchmark results for 'ml-kem-512' KEM (ops/s):"
    assert r.outlines[1].split() == ["plugin", "keygen", "encaps", "decaps"]
    assert r.outlines[2].split()[0] == "pycryptodome"
    assert all(float(x) > 0 for x in r.outlines[2].split()[1:])


def test_signatures_have_a_keygen_column_but_not_rsa():
    assert [str(d) for d in catalog.lookup("ed25519").directions] == ["sign", "verify", "keygen"]
    assert [str(d) for d in catalog.lookup("rsa2048").directions] == ["sign", "verify"]


@pytest.mark.parametrize("plugin", ["openssl", "pycryptodome"])
def test_a_keygen_round_makes_key_pairs(plugin):
    from pytest_qcrypto.backends.openssl import OpenSSLPlugin
    cls = OpenSSLPlugin if plugin == "openssl" else PyCryptodomePlugin
    with bench.open_context(Selection("p", cls()), "ed25519") as ctx:
        m = ctx.measure(0, operation="keygen", min_time=0.001, rounds=1)
        assert (m.direction, m.size) == ("keygen", 0) and m.count >= 1


def test_speed_ed25519_has_a_keygen_column(pytester):
    r = qcrypto(pytester, "speed", "-S", "ed25519", "-P", "openssl", *FAST)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0] == "Benchmark results for 'ed25519' signature (ops/s):"
    assert r.outlines[1].split() == ["plugin", "sign", "verify", "keygen"]
